"""What tf_graph_parity.py and tf_fuzz_parity.py share: a traced ``tf.function``'s GraphDef
written to a file, loaded by specflow's loader (``specflow predict``'s) and run, and the
comparison of its outputs with TensorFlow's. Imports TensorFlow: scripts only, never specflow."""

import os

import numpy as np

from specflow.export.loader import load_model


def run_in_specflow(cf, xs, path):
    """Run concrete function ``cf``'s graph (written to ``path``) in specflow on inputs ``xs``;
    the list of its outputs."""
    with open(path, "wb") as fh:
        fh.write(cf.graph.as_graph_def().SerializeToString())
    feeds = {inp.name: x for inp, x in zip(cf.inputs, xs)}
    fetches = [t.name for t in cf.outputs]
    with load_model(path) as m:
        return m.session.run(fetches, feeds)


def tmp_path(tmp, name):
    return os.path.join(tmp, name + ".pb")


def compare(got: dict, want: dict, check_dtype: bool = False) -> list[str]:
    """One line per output of ``want`` that ``got`` does not match (rtol 1e-4, atol 1e-4 of the
    largest finite magnitude; for float16 1e-3 and bfloat16 1e-2, a unit in their last place;
    exact for integers and bools). NaN and infinities must sit where TF has them. With
    ``check_dtype``, the result dtypes must be equal too."""
    bad = []
    for k, wv in want.items():
        g = np.asarray(got[k])
        rtol = {"float16": 1e-3, "bfloat16": 1e-2}.get(wv.dtype.name, 1e-4)
        if check_dtype and g.dtype != wv.dtype:
            bad.append(f"out {k} dtype {g.dtype} vs {wv.dtype}")
            continue
        if wv.dtype.name == "bfloat16" and g.shape == wv.shape:
            g, wv = g.astype(np.float32), wv.astype(np.float32)
        if g.shape != wv.shape:
            bad.append(f"out {k} shape {g.shape} vs {wv.shape}")
        elif wv.dtype.kind in "fc":
            g, w = g.astype(np.complex128), wv.astype(np.complex128)
            fin = np.isfinite(w)
            if not np.array_equal(np.isnan(g), np.isnan(w)) or not np.array_equal(g[np.isinf(w)], w[np.isinf(w)]):
                bad.append(f"out {k} NaN/inf differ: {g.ravel()[:6]} vs {w.ravel()[:6]}")
                continue
            scale = max(1.0, float(np.abs(w[fin]).max())) if fin.any() else 1.0
            if not np.allclose(g[fin], w[fin], rtol=rtol, atol=rtol * scale):
                bad.append(f"out {k} max diff {np.abs(g[fin] - w[fin]).max():.3g}")
        elif not np.array_equal(g, wv):
            bad.append(f"out {k} values differ")
    return bad
