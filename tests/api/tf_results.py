"""Results of calls made with TensorFlow and with specflow, flattened to named arrays: how the
TF-fixture tests (test_sparse, test_tf_io) store TF's results and compare specflow's with them."""

import numpy as np


def flatten(prefix: str, value, out: dict) -> None:
    """``value`` (a tensor, a sparse tensor, a dict, tuple or list of them) into ``out`` as
    arrays named ``prefix``, ``prefix.key``, ``prefix.0``, ``prefix.indices``, ..."""
    if isinstance(value, dict):
        for k in sorted(value):
            flatten(f"{prefix}.{k}", value[k], out)
    elif hasattr(value, "indices") and hasattr(value, "dense_shape") and hasattr(value, "values"):
        for part in ("indices", "values", "dense_shape"):
            out[f"{prefix}.{part}"] = np.asarray(getattr(value, part))
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            flatten(f"{prefix}.{i}", v, out)
    else:
        out[prefix] = np.asarray(value)


def all_results(cases: dict) -> dict:
    out: dict = {}
    for k, fn in cases.items():
        flatten(k, fn(), out)
    return out


def assert_matches(key: str, value, expected: dict, rtol: float = 0.0, atol: float = 0.0) -> None:
    """The flattened ``value`` has the arrays ``expected`` holds under ``key``: same names,
    dtypes and shapes; values exact (integers, bools, strings) or within the tolerances."""
    got: dict = {}
    flatten(key, value, got)
    want = {k: v for k, v in expected.items() if k == key or k.startswith(key + ".")}
    assert sorted(got) == sorted(want)
    for k, w in want.items():
        g = got[k]
        assert g.dtype == w.dtype and g.shape == w.shape, k
        if w.dtype.kind in "iubOS" or (rtol == 0 and atol == 0):
            np.testing.assert_array_equal(g, w, err_msg=k)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=k)
