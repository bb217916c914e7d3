"""Export writes atomically: a failure at any point (writing, the re-load check) leaves neither
EXPORT_DIR nor a temporary directory; an existing EXPORT_DIR is refused unless overwriting."""

from __future__ import annotations

import numpy as np
import pytest

from specflow.errors import CheckpointError, ExportError
from specflow.export import savedmodel, verify
from specflow.export.exporter import export_model


def _entries(path):
    return sorted(p.name for p in path.iterdir())


def test_a_failure_while_writing_leaves_nothing(trained, tmp_path, monkeypatch):
    spec, logdir = trained("digits_mlp")

    def broken_bundle(prefix, tensors):
        raise CheckpointError("disk full (simulated)")

    monkeypatch.setattr(savedmodel, "write_bundle", broken_bundle)
    with pytest.raises(CheckpointError, match="disk full"):
        export_model(spec, logdir, tmp_path / "export")
    assert _entries(tmp_path) == []


def test_a_mismatch_in_the_reload_check_fails_the_export_and_leaves_nothing(trained, tmp_path, monkeypatch):
    spec, logdir = trained("digits_mlp")
    real = verify.source_outputs

    def off_by_a_little(*args):
        return {k: v + np.float32(1e-3) for k, v in real(*args).items()}

    monkeypatch.setattr(verify, "source_outputs", off_by_a_little)
    with pytest.raises(ExportError, match="output 'probabilities': the re-loaded export differs from the spec by up to 0.001"):
        export_model(spec, logdir, tmp_path / "export")
    assert _entries(tmp_path) == []


def test_existing_export_dir_is_refused_without_overwrite(trained, tmp_path):
    spec, logdir = trained("linear_regression")
    out = tmp_path / "export"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(ExportError, match="already exists \\(pass --overwrite to replace it\\)"):
        export_model(spec, logdir, out)
    assert _entries(out) == ["keep.txt"]

    with pytest.raises(ExportError, match="refusing to --overwrite .*export: it is not a SavedModel "
                                          "\\(it holds 'keep.txt'\\)"):
        export_model(spec, logdir, out, overwrite=True)
    assert _entries(out) == ["keep.txt"]

    (out / "keep.txt").unlink()  # an empty directory is replaced
    export_model(spec, logdir, out, overwrite=True)
    assert _entries(out) == ["saved_model.pb", "variables"]
    export_model(spec, logdir, out, overwrite=True)  # and so is an export
    assert _entries(out) == ["saved_model.pb", "variables"]
    assert _entries(tmp_path) == ["export"]  # the old copy and the temp dir are gone


def test_overwrite_that_fails_keeps_the_previous_export(trained, tmp_path, monkeypatch):
    spec, logdir = trained("linear_regression")
    out = tmp_path / "export"
    export_model(spec, logdir, out)
    before = (out / "saved_model.pb").read_bytes()
    monkeypatch.setattr(verify, "source_outputs", lambda *a: {"prediction": np.zeros((1, 1), np.float32)})
    with pytest.raises(ExportError):
        export_model(spec, logdir, out, overwrite=True)
    assert (out / "saved_model.pb").read_bytes() == before
    assert _entries(tmp_path) == ["export"]
