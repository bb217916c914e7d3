"""Tensors saved in slices (partitioned variables), checked against a checkpoint TensorFlow's
Saver wrote (tests/io/data/tf_sliced.*, made by make_tf_sliced.py): our reader gets its values,
and our writer, given the same parts, writes the same bytes."""

from __future__ import annotations

import os

import numpy as np
import pytest

from specflow.errors import CheckpointError
from specflow.io.tensor_bundle import merge_bundles, read_bundle, read_bundle_index, write_bundle
from specflow.io.tensor_slices import SliceSpec, _ordered_signed

DATA = os.path.join(os.path.dirname(__file__), "data")
TF = os.path.join(DATA, "tf_sliced")


def _expected() -> dict[str, np.ndarray]:
    with np.load(os.path.join(DATA, "tf_sliced_expected.npz")) as f:
        return {k: f[k] for k in f.files}


def _parts(expected) -> tuple[dict, dict]:
    """The partitioned variables as TF's fixed_size_partitioner split them, labelled by part."""
    tensors, slices = {"w": expected["w"]}, {}
    for name, bounds in (("emb", [0, 4, 7, 10]), ("big", [0, 150, 300])):
        for k, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
            tensors[f"{name}/part_{k}"] = expected[name][lo:hi]
            slices[f"{name}/part_{k}"] = SliceSpec.rows(name, expected[name].shape, lo, hi - lo)
    return tensors, slices


def test_reads_tensorflows_sliced_checkpoint_whole_and_in_slices():
    expected = _expected()
    got = read_bundle(TF)
    assert set(got) == {"emb", "big", "w"}
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value)
    index = read_bundle_index(TF)
    assert [d.size for d in index["emb"].shape.dim] == [10, 3] and len(index["emb"].slices) == 3
    # a slice across two saved parts, and one inside a single part
    for spec, cut in (("10 3 3,5:1,2", np.s_[3:8, 1:3]), ("300 2 160,20:-", np.s_[160:180, :])):
        name = "emb" if spec.startswith("10 ") else "big"
        part = read_bundle(TF, [name], {name: SliceSpec.parse(name, spec)})[name]
        np.testing.assert_array_equal(part, expected[name][cut])


def test_writes_the_bytes_tensorflow_writes(tmp_path):
    tensors, slices = _parts(_expected())
    write_bundle(str(tmp_path / "ours"), tensors, slices)
    for suffix in (".index", ".data-00000-of-00001"):
        assert (tmp_path / f"ours{suffix}").read_bytes() == open(TF + suffix, "rb").read(), suffix


def test_slice_specs_parse_and_encode_as_tensorflow():
    spec = SliceSpec.parse("emb", "10 3 4,3:0,3")
    assert spec.shape == (3, 3) and spec.text() == "10 3 4,3:0,3" and not spec.is_full
    assert SliceSpec.parse("x", "4 2 -:-").is_full and SliceSpec.parse("x", "4 2 -:0,1").shape == (4, 1)
    # OrderedCode's own examples (ordered_code.cc): 0x424242 and -0x800, and the edges of 1 byte
    assert _ordered_signed(0x424242) == bytes.fromhex("f0424242")
    assert _ordered_signed(-0x800) == bytes.fromhex("3800")
    assert [_ordered_signed(v) for v in (0, -1, 63, -64, 64)] == [b"\x80", b"\x7f", b"\xbf", b"\x40", b"\xc0\x40"]
    for bad in ("10 3 4,3", "10 3 9,3:-", "10 x -:-", "10 3 -1,2:-"):
        with pytest.raises(CheckpointError, match="shape_and_slices"):
            SliceSpec.parse("emb", bad)


def test_merge_joins_slices_saved_by_different_shards(tmp_path):
    tensors, slices = _parts(_expected())
    a = {k: v for k, v in tensors.items() if k.endswith("part_0")}
    b = {k: v for k, v in tensors.items() if k not in a}
    write_bundle(str(tmp_path / "a"), a, slices)
    write_bundle(str(tmp_path / "b"), b, slices)
    merge_bundles([str(tmp_path / "a"), str(tmp_path / "b")], str(tmp_path / "m"))
    got = read_bundle(str(tmp_path / "m"))
    for name, value in _expected().items():
        np.testing.assert_array_equal(got[name], value)
    assert sorted(p.name for p in tmp_path.iterdir() if ".data-" in p.name) == \
        ["m.data-00000-of-00002", "m.data-00001-of-00002"]  # fmt: skip


def test_bad_slices_are_refused(tmp_path):
    tensors, slices = _parts(_expected())
    with pytest.raises(CheckpointError, match="for slice"):
        write_bundle(str(tmp_path / "x"), {"emb/part_0": np.zeros((5, 3), np.float32)}, slices)
    with pytest.raises(CheckpointError, match="both whole and in slices"):
        write_bundle(str(tmp_path / "x"), {"emb": np.zeros((10, 3), np.float32), "emb/part_0": tensors["emb/part_0"]},
                     slices)  # fmt: skip
    # only two of emb's three parts saved: the whole cannot be read, the saved rows can
    write_bundle(str(tmp_path / "p"), {k: tensors[k] for k in ("emb/part_0", "emb/part_1")}, slices)
    with pytest.raises(CheckpointError, match="do not cover"):
        read_bundle(str(tmp_path / "p"))
    rows = read_bundle(str(tmp_path / "p"), ["emb"], {"emb": SliceSpec.rows("emb", (10, 3), 2, 5)})["emb"]
    np.testing.assert_array_equal(rows, _expected()["emb"][2:7])
    with pytest.raises(CheckpointError, match="saved with shape"):
        read_bundle(str(tmp_path / "p"), ["emb"], {"emb": SliceSpec.rows("emb", (12, 3), 0, 2)})
