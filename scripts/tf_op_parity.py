"""Every kernel case of the suite (tests/ops/cases_*.py) run by real TensorFlow too: the same
inputs and attrs through ``tf.raw_ops``, outputs compared with specflow's. Run by hand in a venv
that has TensorFlow (never a dependency): ``scripts/tf_parity.sh`` prepares one, then

    PYTHONPATH=. /work/scratch/tfvenv/bin/python scripts/tf_op_parity.py [OP ...]

Prints one line per mismatch (op, case id, max error) and a summary; exit 1 on any mismatch.
Cases whose op TF lacks, or that TF refuses (inputs only specflow accepts), are counted apart."""

from __future__ import annotations

import inspect
import sys

import numpy as np

# Where tf.raw_ops' Python parameter is not the OpDef's name.
RENAMED = {
    ("Squeeze", "squeeze_dims"): "axis", ("Split", "split_dim"): "axis", ("SplitV", "split_dim"): "axis",
    ("ExpandDims", "dim"): "axis", ("Select", "t"): "x", ("Select", "e"): "y", ("Where", "input"): "condition",
    **{(op, "reduction_indices"): "axis" for op in ("Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "EuclideanNorm")},
}

# float64 ops where TF's own kernel is further than 1e-10 from the exact values the suite checks
# ours against: CTCLoss's float64 losses and gradients are within 1e-7 of brute-force
# enumeration in TF, within 1e-10 in ours (tests/ops/cases_ctc.py).
LOOSER_FLOAT64 = {"CTCLoss": 1e-7}


def _tf_attr(value):
    from specflow.graph.dtypes import DType
    from specflow.graph.shapes import Shape

    if isinstance(value, DType):
        return value.name
    if isinstance(value, Shape):
        return None if value.dims is None else list(value.dims)
    if isinstance(value, (list, tuple)):
        return [_tf_attr(v) for v in value]
    return value


def raw_op_kwargs(op: str, opdef, bound: dict, grouped: dict, params: set) -> dict:
    """tf.raw_ops keyword arguments: the grouped inputs and the attrs its function takes, under
    its Python names (RENAMED)."""
    inputs = {a.name for a in opdef.inputs}
    attrs = {RENAMED.get((op, k), k): _tf_attr(v) for k, v in bound.items() if k not in inputs}
    return {**{RENAMED.get((op, k), k): v for k, v in grouped.items()},
            **{k: v for k, v in attrs.items() if k in params}}


def _grouped(opdef, bound, arrays):
    """The case's flat inputs grouped by the OpDef's args (a list arg takes N arrays)."""
    out, k = {}, 0
    for arg in opdef.inputs:
        if arg.number_attr:
            n = int(bound[arg.number_attr])
        elif arg.type_list_attr:
            n = len(bound[arg.type_list_attr])
        else:
            out[arg.name] = arrays[k]
            k += 1
            continue
        out[arg.name] = list(arrays[k:k + n])
        k += n
    return out


def main(only: list[str]) -> int:
    import tensorflow as tf

    from specflow.graph.dtypes import dtype_of
    from specflow.ops.eval import evaluate_op
    from specflow.ops.registry import bind_attrs, get_op
    from tests.ops.harness import collect_cases

    cases = collect_cases("cases_", "EXEMPT", {})
    bad = same = missing = refused = 0
    for case in cases:
        if only and case.op not in only:
            continue
        if case.check is not None or case.op.startswith("_"):
            continue  # random ops checked by property; internal ops
        fn = getattr(tf.raw_ops, case.op, None)
        if fn is None:
            missing += 1
            continue
        opdef = get_op(case.op)
        try:
            bound = bind_attrs(opdef, [dtype_of(a) for a in case.inputs], dict(case.attrs))
            ours = evaluate_op(case.op, case.inputs, **case.attrs)
        except Exception:
            continue  # an error case of the suite
        params = set(inspect.signature(fn).parameters)
        # tf.constant first: eager raw_ops convert a bare numpy array to an attr's default dtype
        try:
            grouped = {k: [tf.constant(x) for x in v] if isinstance(v, list) else tf.constant(v)
                       for k, v in _grouped(opdef, bound, case.inputs).items()}
        except (TypeError, ValueError):
            continue  # a value TF cannot take from numpy (a TensorList, a resource)
        kwargs = raw_op_kwargs(case.op, opdef, bound, grouped, params)
        try:
            with tf.device("/cpu:0"):
                theirs = fn(**kwargs)
        except Exception as e:  # TF refuses what specflow accepts: worth a look, listed apart
            refused += 1
            print(f"REFUSED {case.op} [{case.id}]: {str(e).splitlines()[0][:160]}")
            continue
        theirs = tf.nest.flatten(theirs)  # list outputs (DynamicPartition's) one tensor each, as ours
        theirs = [t.numpy() if hasattr(t, "numpy") else np.asarray(t) for t in theirs]
        theirs = [t for t in theirs if not (isinstance(t, np.ndarray) and t.dtype == object and t.size == 0)]
        problems = []
        for i, (g, w) in enumerate(zip(ours, theirs)):
            g, w = np.asarray(g), np.asarray(w)
            if g.shape != w.shape:
                problems.append(f"output {i}: shape {g.shape} vs TF {w.shape}")
            elif g.dtype != w.dtype and not (g.dtype.kind == "O" or w.dtype.kind in "OSU"):
                problems.append(f"output {i}: dtype {g.dtype} vs TF {w.dtype}")
            elif w.dtype.kind in "fc":
                tol = {np.float16: 1e-3, np.float32: 1e-5}.get(w.dtype.type, LOOSER_FLOAT64.get(case.op, 1e-10))
                if w.dtype == np.complex64:
                    tol = 1e-5
                err = np.abs(g.astype(np.complex128) - w.astype(np.complex128))
                scale = np.maximum(np.abs(w.astype(np.complex128)), 1)
                nan_mismatch = np.isnan(g) != np.isnan(w)
                fin = np.isfinite(w) & np.isfinite(g)
                inf_mismatch = (~np.isnan(w)) & (~np.isfinite(w)) & (g != w)
                worst = float((err[fin] / scale[fin]).max()) if fin.any() else 0.0
                if nan_mismatch.any() or inf_mismatch.any() or worst > tol:
                    problems.append(f"output {i}: max rel err {worst:.2e}, nan mismatches {int(nan_mismatch.sum())}, "
                                    f"inf mismatches {int(inf_mismatch.sum())}")
            elif w.dtype.kind in "OSU":
                if [bytes(x) if not isinstance(x, bytes) else x for x in g.ravel()] != \
                        [x if isinstance(x, bytes) else str(x).encode() for x in w.ravel()]:
                    problems.append(f"output {i}: strings differ")
            elif not np.array_equal(g, w):
                problems.append(f"output {i}: {int((g != w).sum())} of {g.size} values differ")
        if problems:
            bad += 1
            print(f"MISMATCH {case.op} [{case.id}]: " + "; ".join(problems))
        else:
            same += 1
    print(f"{same} cases match TF, {bad} differ, {refused} refused by TF, {missing} of ops TF lacks")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
