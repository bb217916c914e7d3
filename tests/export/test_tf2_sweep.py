"""TF2 tf.function programs saved by TensorFlow 2.21 (scripts/tf2_savedmodel_sweep.py --fixtures
tests/export/data/tf2_sweep) run by specflow and compared with TensorFlow's recorded outputs:
While/If/Case with TensorLists and TensorArrays, autograph loops with break, nested functions,
captured and assigned variables, tape gradients through loops and conds, strings, segments,
Keras exports; their frozen GraphDefs (TF1 control flow); TF1 graphs with TensorArrayV3 and
tf.gradients' loop stacks (ControlTrigger); and ``specflow import`` of Case and nested loops.
Every fixture set ``k`` holds inputs ``in<k>_<alias>`` and outputs ``out<k>_<alias>``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import specflow as sf
from specflow.errors import SpecflowError
from specflow.export.importer import import_model, verify_import
from specflow.export.loader import load_model

DATA = Path(__file__).resolve().parent / "data" / "tf2_sweep"
ROOT = Path(__file__).resolve().parents[2]
SAVED = sorted(p.name for p in DATA.iterdir() if p.is_dir() and p.name != "two_signatures")
FROZEN = sorted(p.stem for p in DATA.glob("*.pb") if (DATA / p.stem).is_dir())
TF1 = sorted(p.stem for p in DATA.glob("tf1_*.pb"))


def _value(v: np.ndarray) -> np.ndarray:
    return v.astype(object) if v.dtype.kind == "S" else v  # strings were stored as numpy bytes


def recorded(name: str) -> list[tuple[dict, dict]]:
    data = np.load(DATA / f"{name}.npz")
    sets: dict[int, tuple[dict, dict]] = {}
    for key in data.files:
        head, _, alias = key.partition("_")
        for kind, slot in (("in", 0), ("out", 1)):
            if head.startswith(kind) and head[len(kind):].isdigit():
                sets.setdefault(int(head[len(kind):]), ({}, {}))[slot][alias] = _value(data[key])
    return [sets[k] for k in sorted(sets)]


def assert_matches(got: dict, want: dict, where: str) -> None:
    assert set(want) <= set(got), f"{where}: outputs {sorted(got)}, TF's {sorted(want)}"
    for alias, w in want.items():
        g = np.asarray(got[alias])
        assert g.shape == w.shape, f"{where}/{alias}: shape {g.shape} vs {w.shape}"
        if w.dtype.kind == "f":
            assert g.dtype == w.dtype, f"{where}/{alias}: dtype {g.dtype} vs {w.dtype}"
            scale = max(1.0, float(np.abs(w).max())) if w.size else 1.0
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4 * scale, err_msg=f"{where}/{alias}")
        elif w.dtype == object:
            assert [bytes(x) for x in g.ravel()] == [bytes(x) for x in w.ravel()], f"{where}/{alias}"
        else:
            assert g.dtype == w.dtype, f"{where}/{alias}: dtype {g.dtype} vs {w.dtype}"
            np.testing.assert_array_equal(g, w, err_msg=f"{where}/{alias}")


def test_the_fixtures_are_all_there():
    assert len(SAVED) >= 37 and len(FROZEN) >= 10 and len(TF1) >= 7
    size = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file())
    assert size < 2_000_000


def _serving_matches(path, name):
    """sf.load(path)'s serving signature gives TF's recorded outputs for each input set."""
    m = sf.load(str(path))
    try:
        fn = m.signatures["serving_default"]
        for k, (feeds, want) in enumerate(recorded(name)):
            got = {a: v.numpy() for a, v in fn(**feeds).items()}
            assert_matches(got, want, f"{name}[{k}]")
    finally:
        m.close()


@pytest.mark.parametrize("name", SAVED)
def test_saved_model_matches_tensorflow(name):
    """sf.load of TF's SavedModel: each input set run in the order TF ran it (some functions
    assign their variables, so later sets see the earlier updates, as in TF)."""
    _serving_matches(DATA / name, name)


@pytest.mark.parametrize("name", FROZEN)
def test_frozen_graph_matches_tensorflow(name):
    """The same function frozen by convert_variables_to_constants_v2: TF1 control flow
    (Switch/Merge/Enter/Exit), TensorLists, constants for the variables."""
    data = np.load(DATA / f"{name}.npz")
    fetches = [str(t) for t in data["frozen_outputs"]]
    with load_model(DATA / f"{name}.pb") as model:
        for k, (feeds, _) in enumerate(recorded(name)):
            got = model.session.run(fetches, {f"{a}:0": v for a, v in feeds.items()})
            want = {str(j): _value(data[f"frozen{k}_{j}"]) for j in range(len(fetches))}
            assert_matches({str(j): g for j, g in enumerate(got)}, want, f"{name}.pb[{k}]")


@pytest.mark.parametrize("name", TF1)
def test_tf1_graph_matches_tensorflow(name):
    """TF1 graphs: tf.compat.v1.while_loop over TensorArrayV3 (write/read/scatter/gather/
    split/concat/size), tf.gradients through them (TensorArrayGradV3, StackV2 and the
    ControlTrigger syncs), map_fn/scan/switch_case in TF1 form."""
    _serving_matches(DATA / f"{name}.pb", name)


def test_two_signatures_run_by_name():
    data = np.load(DATA / "two_signatures.npz")
    m = sf.load(str(DATA / "two_signatures"))
    try:
        assert set(m.signatures) >= {"serving_default", "double_int"}
        for sig in ("serving_default", "double_int"):
            feeds = {k[len(sig) + 4:]: data[k] for k in data.files if k.startswith(f"{sig}_in_")}
            want = {k[len(sig) + 5:]: data[k] for k in data.files if k.startswith(f"{sig}_out_")}
            got = {a: v.numpy() for a, v in m.signatures[sig](**feeds).items()}
            assert_matches(got, want, sig)
        # a saved method that is no signature returns TF's nested structure: {a: (x * v, shape), b: {c: x > 0}}
        out = m.nested(data["serving_default_in_x"])
        got = {"/a/0": out["a"][0].numpy(), "/a/1": out["a"][1].numpy(), "/b/c": out["b"]["c"].numpy()}
        assert_matches(got, {k[len("nested_out_"):]: data[k] for k in data.files if k.startswith("nested_out_")},
                       "nested")
    finally:
        m.close()


@pytest.mark.parametrize("name, target", [("while_ta_rows", "while_ta_rows"), ("grad_cond", "grad_cond"),
                                          ("tf1_ta_grad", "tf1_ta_grad.pb"),
                                          ("tf1_nested_while_case", "tf1_nested_while_case.pb")])
def test_predict_cli_matches_tensorflow(tmp_path, name, target):
    feeds, want = recorded(name)[-1]
    args = []
    for alias, value in feeds.items():
        np.save(tmp_path / f"{alias}.npy", value)
        args += ["--input", f"{alias}={tmp_path / f'{alias}.npy'}"]
    out = tmp_path / "pred.npz"
    r = subprocess.run([sys.executable, "-m", "specflow", "predict", str(DATA / target), *args, "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    got = dict(np.load(out))
    assert_matches(got, want, f"predict {target}")


def _import_and_run(tmp_path, name: str, source: Path) -> None:
    result = import_model(source, tmp_path / f"{name}.yaml")
    diffs = verify_import(source, result)
    assert diffs and max(diffs.values()) <= 1e-4
    m = sf.load(str(result.spec))
    try:
        fn = m.signatures["serving_default"]
        for k, (feeds, want) in enumerate(recorded(name)):
            got = {a: v.numpy() for a, v in fn(**feeds).items()}
            assert_matches(got, want, f"imported {name}[{k}]")
    finally:
        m.close()


def test_import_writes_a_case_as_a_chain_of_conds(tmp_path):
    """tf.switch_case (a lowered Case) was refused by `specflow import`; now each branch is a
    cond on index == i, the last branch also taking out-of-range indices as TF does (k = 7)."""
    assert 7 in [int(f["k"]) for f, _ in recorded("switch_case")]
    _import_and_run(tmp_path, "switch_case", DATA / "switch_case")
    text = (tmp_path / "switch_case.yaml").read_text()
    assert text.count("cond:") == 2 and "Switch" not in text


def test_import_case_with_a_gradient_case(tmp_path):
    """A tape gradient through tf.switch_case: a second Case, whose branches read the forward
    branch's intermediates (pruning drops the input Switches a branch does not read)."""
    _import_and_run(tmp_path, "grad_switch_case", DATA / "grad_switch_case")


def test_import_nested_while_loops(tmp_path):
    """A While whose body holds another While: the outer loop's vars are its own Enters only
    (counting the inner loop's raised KeyError 'while/enter_7')."""
    _import_and_run(tmp_path, "nested_while", DATA / "nested_while")
    _import_and_run(tmp_path, "nested_while_ta", DATA / "nested_while_ta")


def test_import_checks_string_inputs_and_value_constrained_ints(tmp_path):
    """The import's check samples string inputs (it refused them), and falls back to zero
    integers where the model rejects random ones (segment ids must be sorted, gather indices in
    range)."""
    _import_and_run(tmp_path, "strings_basic", DATA / "strings_basic")
    _import_and_run(tmp_path, "segments", DATA / "segments")
    _import_and_run(tmp_path, "gather_batch_dims", DATA / "gather_batch_dims")


@pytest.mark.parametrize("name", ["tf1_ta_write_stack", "tf1_ta_grad", "tf1_map_fn_scan", "tf1_rnn_vars_grad"])
def test_import_tf1_tensor_array_graph(tmp_path, name):
    """TF1 loops over TensorArrayV3, and tf.gradients' backward loops: the forward loop pushes
    its values on stacks through ops nothing reads, kept by control inputs on the counter's
    NextIteration, which the import now carries as an Identity after them (the pops found the
    stacks empty)."""
    _import_and_run(tmp_path, name, DATA / f"{name}.pb")


# --- TensorArrayV3's rules, as TF 2.21's kernels apply them (tensor_array_ops.cc) -------------------


def _ta_run(body, x=None):
    """``body(handle, flow)`` traced over a 2-element float TensorArray and run once."""
    @sf.function
    def f(x):
        h, flow = sf.ops.TensorArrayV3(size=2, dtype=sf.float32, element_shape=[3], identical_element_shapes=True)
        return body(h, flow, x)
    return f(np.ones(3, np.float32) if x is None else x).numpy()


def _write(h, flow, i, v):
    return sf.ops.TensorArrayWriteV3(handle=h, index=i, value=v, flow_in=flow)


def test_tensor_array_unwritten_element_of_known_shape_reads_as_zeros():
    got = _ta_run(lambda h, f, x: sf.ops.TensorArrayGatherV3(handle=h, indices=[0, 1], flow_in=_write(h, f, 1, x),
                                                              dtype=sf.float32))
    np.testing.assert_array_equal(got, [[0, 0, 0], [1, 1, 1]])


@pytest.mark.parametrize("body, message", [
    (lambda h, f, x: sf.ops.TensorArrayReadV3(handle=h, index=1, flow_in=_write(h, _write(h, f, 1, x), 1, x),
                                              dtype=sf.float32), "index 1 has already been written to"),
    (lambda h, f, x: _write(h, f, 2, x), "index 2 is out of range: the array's size is 2"),
    (lambda h, f, x: sf.ops.TensorArrayReadV3(handle=h, index=0, flow_in=_write(h, f, 0, x * 2.0),
                                              dtype=sf.int32), "holds float32 but this op reads int32"),
])
def test_tensor_array_refuses_what_tensorflow_refuses(body, message):
    with pytest.raises(SpecflowError, match=message):
        _ta_run(body)


def test_tensor_array_element_read_twice_after_clear_fails():
    def body(h, f, x):
        f = _write(h, f, 0, x)
        a = sf.ops.TensorArrayReadV3(handle=h, index=0, flow_in=f, dtype=sf.float32)
        b = sf.ops.TensorArrayReadV3(handle=h, index=0, flow_in=f + 0.0 * a[0], dtype=sf.float32)
        return b
    with pytest.raises(SpecflowError, match="already read and cleared"):
        _ta_run(body)


def test_tensor_array_identical_shapes_refuses_a_second_shape():
    @sf.function
    def f(x):
        h, flow = sf.ops.TensorArrayV3(size=2, dtype=sf.float32, identical_element_shapes=True)
        flow = _write(h, flow, 0, x)
        return _write(h, flow, 1, x[:2])
    with pytest.raises(SpecflowError, match=r"shape \[2\] to a TensorArray of elements \[3\]"):
        f(np.ones(3, np.float32))


def test_import_frozen_loop_whose_condition_is_an_autograph_and(tmp_path):
    """`while s < 3.0 and i < n` frozen: the loop condition holds cond(a, lambda: b, lambda: a),
    whose else branch returns the predicate itself (a Switch of the predicate on itself, read as
    data); the import named a node it had not written."""
    data = np.load(DATA / "while_ta_dynamic_size.npz")
    aliases = [str(t).removesuffix(":0") for t in data["frozen_outputs"]]
    source = DATA / "while_ta_dynamic_size.pb"
    result = import_model(source, tmp_path / "m.yaml")
    verify_import(source, result)
    m = sf.load(str(result.spec))
    try:
        for k, (feeds, _) in enumerate(recorded("while_ta_dynamic_size")):
            got = {a: v.numpy() for a, v in m.signatures["serving_default"](**feeds).items()}
            want = {a: _value(data[f"frozen{k}_{j}"]) for j, a in enumerate(aliases)}
            assert_matches(got, want, f"imported .pb[{k}]")
    finally:
        m.close()


def test_import_tape_gradient_of_variables_read_in_a_loop(tmp_path):
    """A tape gradient with respect to variables read inside a loop or scan: its VariableShape
    (no dtype attr) made the import's shape inference fail with KeyError 'dtype'."""
    _import_and_run(tmp_path, "grad_vars_in_loop", DATA / "grad_vars_in_loop")
    _import_and_run(tmp_path, "grad_scan_rnn_vars", DATA / "grad_scan_rnn_vars")
