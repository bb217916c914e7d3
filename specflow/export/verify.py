"""Checking an export before it is declared good: re-load what was written (with the same loader
``specflow predict`` uses) and compare its outputs with the source spec's on sample inputs.

The source side is the spec's full graph (training flag fed false) with the checkpoint's values
restored, so the check covers pruning, flag folding, conversion to TensorFlow's protobuf and
back, the saver graph and the variables bundle at once.
"""

from __future__ import annotations

import numpy as np

from specflow.errors import ExportError, SpecflowError
from specflow.export.loader import load_saved_model
from specflow.export.serving import ServingModel, SignatureIO
from specflow.graph.shapes import Shape

SAMPLE_ROWS = 8
UNKNOWN_DIM = 4  # the size given to unknown dims of random sample inputs
RTOL = ATOL = 1e-5


def sample_inputs(spec, sig: SignatureIO, rows: int = SAMPLE_ROWS) -> dict[str, np.ndarray]:
    """Inputs for ``sig``: the first rows of the spec's training data for inputs the data feeds,
    deterministic random values of the signature's dtype and shape for the others."""
    data = _training_rows(spec, rows)
    rng = np.random.default_rng(0)
    out = {}
    for alias, (tensor, ts) in sig.inputs.items():
        node = tensor.rsplit(":", 1)[0]
        if node in data and ts.shape.is_compatible_with(Shape(np.shape(data[node]))):
            out[alias] = np.asarray(data[node]).astype(ts.dtype.numpy)
            continue
        dims = ts.shape.as_list()
        shape = [UNKNOWN_DIM] * 2 if dims is None else [UNKNOWN_DIM if d is None else d for d in dims]
        out[alias] = _random(rng, ts.dtype, shape)
    return out


def _training_rows(spec, rows: int) -> dict[str, np.ndarray]:
    """Model input name -> its first ``rows`` training examples ({} without a train: section)."""
    cfg = spec.train
    if cfg is None:
        return {}
    from specflow.train.evaluate import load_fitted

    try:
        arrays = load_fitted(spec, cfg)
    except SpecflowError:
        return {}  # the data moved since training: random inputs still check the export
    return {inp: np.asarray(arrays[f][:rows]) for inp, f in cfg.data.feeds.items() if f in arrays}


def _random(rng, dtype, shape) -> np.ndarray:
    if dtype.is_floating or dtype.is_complex:
        return rng.standard_normal(shape).astype(dtype.numpy)
    if dtype.is_bool:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.is_integer:
        return rng.integers(0, 10, shape).astype(dtype.numpy)
    out = np.empty(shape, dtype=object)
    out[...] = b"x"
    return out


def source_outputs(spec, model: ServingModel, name: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Signature ``name``'s outputs computed by the spec's own graph with the model's variables."""
    from specflow.graph.builder import GraphBuilder
    from specflow.runtime.session import Session, SessionConfig
    from specflow.train import state

    sig = model.signatures[name]
    b = GraphBuilder(spec.graph_def)
    variables = [v for v in spec.variables if v.name in model.variables]
    sr = state.add_save_restore(b, variables)
    fed = {sig.inputs[a][0]: v for a, v in feeds.items()}
    flag = spec.lowered.training_flag
    if flag:
        fed[flag] = np.array(False)
    aliases = list(sig.outputs)
    with Session(b.graph_def, SessionConfig(graph_seed=spec.model.seed)) as sess:
        state.restore(sess, sr, model.variables, model.checkpoint)
        values = sess.run([sig.outputs[a][0] for a in aliases], fed)
    return {a: np.asarray(v) for a, v in zip(aliases, values)}


def compare(name: str, got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> float:
    """Largest absolute difference over the outputs; ExportError past the tolerance."""
    worst = 0.0
    for alias, w in want.items():
        g = got[alias]
        if g.shape != w.shape or g.dtype != w.dtype:
            raise ExportError(f"signature '{name}' output '{alias}': the export gives {g.dtype}{list(g.shape)}, "
                              f"the spec {w.dtype}{list(w.shape)}")
        if w.dtype.kind in "fc":
            diff = float(np.max(np.abs(g - w), initial=0.0))
            ok = np.allclose(g, w, rtol=RTOL, atol=ATOL, equal_nan=True)
        else:
            ok = np.array_equal(g, w)
            diff = 0.0 if ok else float("inf")
        if not ok:
            raise ExportError(f"signature '{name}' output '{alias}': the re-loaded export differs from the "
                              f"spec by up to {diff:g} (tolerance {ATOL:g})")
        worst = max(worst, diff)
    return worst


def verify_export(spec, model: ServingModel, export_dir) -> dict[str, float]:
    """Load ``export_dir`` and compare each signature with the spec; signature -> max difference."""
    result = {}
    with load_saved_model(export_dir) as loaded:
        for name, sig in model.signatures.items():
            feeds = sample_inputs(spec, sig)
            result[name] = compare(name, loaded.run(name, feeds), source_outputs(spec, model, name, feeds))
    return result


def verify_onnx(spec, model: ServingModel, name: str, path) -> float:
    """Run the ONNX file at ``path`` with onnxruntime and compare signature ``name`` with the spec."""
    from specflow.export.onnx_export import run_onnx

    sig = model.signatures[name]
    feeds = sample_inputs(spec, sig)
    return compare(name, run_onnx(path, feeds), source_outputs(spec, model, name, feeds))
