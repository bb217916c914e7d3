"""``specflow export``: a spec and a checkpoint of its training run -> a SavedModel or ONNX file.

SavedModel: serving form (serving.py) -> written to a temporary directory (savedmodel.py) ->
re-loaded and compared with the spec on sample inputs (verify.py) -> renamed into place.
ONNX: the same serving form handed to ``onnx_export.export_onnx``, written beside the target,
run with onnxruntime and compared with the spec the same way (when onnxruntime is installed),
then renamed into place.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path

from specflow.errors import ExportError, Location
from specflow.export.savedmodel import refuse_existing, write_saved_model
from specflow.export.serving import ServingModel, serving_model
from specflow.export.verify import verify_export, verify_onnx
from specflow.io.tensor_bundle import fsync_dir

FORMATS = ("savedmodel", "onnx")


@dataclass
class ExportResult:
    out: str
    format: str
    checkpoint: str
    signatures: list[str]
    variables: dict[str, tuple[str, list[int]]]  # name -> (dtype, shape)
    max_diff: dict[str, float] = field(default_factory=dict)  # signature -> re-load check (SavedModel)


def export_model(spec, logdir, out, *, fmt: str = "savedmodel", step: int | None = None,
                 signatures: list[str] | None = None, overwrite: bool = False) -> ExportResult:
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format '{fmt}' (formats: {', '.join(FORMATS)})")
    out = Path(out)
    if fmt == "savedmodel":  # before the checkpoint is read: fail fast
        refuse_existing(out, overwrite)
    elif os.path.lexists(out) and not overwrite:
        raise ExportError(f"{out} already exists (pass --overwrite to replace it)")
    model = serving_model(spec, logdir, step, signatures)
    result = ExportResult(str(out), fmt, model.checkpoint, list(model.signatures),
                          {n: (str(v.dtype), list(v.shape)) for n, v in model.variables.items()})
    if fmt == "onnx":
        result.max_diff = _export_onnx(spec, model, out)
        return result

    def check(tmp: str) -> None:
        result.max_diff = verify_export(spec, model, tmp)

    write_saved_model(model, out, overwrite, check)
    return result


def _export_onnx(spec, model: ServingModel, out: Path) -> dict[str, float]:
    from specflow.export.onnx_export import export_onnx

    if len(model.signatures) != 1:
        names = ", ".join(model.signatures)
        raise ExportError(f"an ONNX model holds one signature; choose one of {names} with --signature")
    if out.is_symlink() or out.exists() and not out.is_file():
        raise ExportError(f"{out} is not a regular file; ONNX export replaces only a file")
    if out.exists() and out.suffix != ".onnx":  # --overwrite must not take a spec or a source file
        raise ExportError(f"refusing to --overwrite {out}: only an .onnx file is replaced")
    name = next(iter(model.signatures))
    tmp = out.with_name(f".{out.name}.verify.tmp")
    try:
        export_onnx(model, tmp, name)
        max_diff = {name: verify_onnx(spec, model, name, tmp)} if _has_onnxruntime() else {}
        os.replace(tmp, out)
        fsync_dir(str(out.parent))
    except OSError as e:  # a full disk, a file too large: one line, the old file untouched
        raise ExportError(f"cannot write the export: {e.strerror or e}", location=Location(str(out))) from None
    finally:
        tmp.unlink(missing_ok=True)
    return max_diff


def _has_onnxruntime() -> bool:
    return importlib.util.find_spec("onnxruntime") is not None
