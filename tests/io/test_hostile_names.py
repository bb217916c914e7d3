"""Hostile names (issue 15, item 1): a name read from a file must never become code.

The straight-line executor compiles generated Python (runtime/line_codegen.py) once a partition's
costs settle (after ``straight_line.TIME_FIRST`` steps). Names from a GraphDef, a function
library, a SavedModel or a checkpoint are refused on load (TensorFlow's node-name rule,
graph/names.py); and a graph built in Python with such names anyway runs past the compile
threshold without its payload running. Each payload would create a marker file."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys

import numpy as np
import pytest
from tensorboard.compat.proto import graph_pb2

from specflow.errors import CheckpointError, GraphError
from specflow.graph import dtypes
from specflow.graph.graph_def import GraphDef, NodeDef
from specflow.graph.names import check_checkpoint_key, check_node_name
from specflow.io.extra_protos import SavedModel
from specflow.io.tensor_bundle import read_bundle, write_bundle
from specflow.io.tf_graph import from_tf_graph_def
from specflow.runtime import executor_types, line_codegen, straight_line
from specflow.runtime.session import Session
from tests.io.test_tf_graph_functions import F32, function, node, placeholder

DATA = os.path.join(os.path.dirname(__file__), "..", "export", "data", "tf_v1_dense")
BREAKS = ["\n", "\r", "\r\n", "\x0c\n", "\u2028", "\x85", "\x00", "\x0b"]


def hostile_names(marker: str, count: int = 24) -> list[str]:
    """Names that would run ``open(marker, 'w')`` if pasted into Python source: a payload behind
    every kind of line break, behind quotes and braces, and a seeded random mix."""
    payload = f"open({marker!r}, 'w').close()"
    indent = " " * 12  # the generated function body's: such a name was a working exploit
    names = [f"n{b}{indent}{payload}{b}{indent}#" for b in BREAKS]
    names += [f"n{b}{payload}{b}#" for b in BREAKS]
    names += [f"n'''\n{payload}\n'''", f'n"""\n{payload}\n"""', f"n\\\n{payload}", f"n{{{payload}}}",
              f"n')\n{payload}\n('", f"n\n    {payload}\n"]
    rng = random.Random(15)
    alphabet = "ab/_.-:^\"'\\{}()#;\n\r\t \x00\u2028é"
    while len(names) < count:
        noise = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 8)))
        names.append(f"n{noise}\n{payload}\n#{noise}")
    return names


@pytest.fixture
def marker(tmp_path):
    path = str(tmp_path / "pwned")
    yield path
    assert not os.path.exists(path), "a name from a file ran as code"


def test_every_hostile_name_is_refused_by_the_name_rules(marker):
    for name in hostile_names(marker):
        with pytest.raises(GraphError, match="invalid node name"):
            check_node_name(name)
        with pytest.raises(GraphError, match="invalid checkpoint tensor name"):
            check_checkpoint_key(name)
    # TensorFlow's rule itself: these are valid node names (and checkpoint keys).
    for name in ("x", "dense/kernel", ".hidden", "a-b/c>d", "0", "save/RestoreV2:0"[:-2]):
        assert check_node_name(name) == name
    assert check_checkpoint_key("_CHECKPOINTABLE_OBJECT_GRAPH")
    for bad in ("_x", "-x", "/x", "x y", "x\n", "x" * 5000, ""):
        with pytest.raises(GraphError):
            check_node_name(bad)


def _graph_proto(name: str) -> graph_pb2.GraphDef:
    g = graph_pb2.GraphDef()
    g.node.extend([placeholder("x"), node(name, "Neg", ["x"], T=dtypes.float32),
                   node("y", "Identity", [name], T=dtypes.float32)])
    return g


def test_graph_defs_with_hostile_names_are_refused_on_load(marker):
    for name in hostile_names(marker):
        with pytest.raises(GraphError, match="invalid node name"):
            from_tf_graph_def(_graph_proto(name))
        with pytest.raises(GraphError, match="invalid node name"):
            from_tf_graph_def(_graph_proto(name).SerializeToString())
        g = _graph_proto("neg")
        g.node[2].input[0] = name  # only the reference is hostile
        with pytest.raises(GraphError, match="invalid tensor reference"):
            from_tf_graph_def(g)
        with pytest.raises(GraphError, match="invalid node name"):
            GraphDef.from_dict({"nodes": [{"name": name, "op": "NoOp"}]})


def _library_graph(fname="f", arg="a", body="neg", ret="y") -> graph_pb2.GraphDef:
    f = function(fname, [(arg, F32)], [(ret, F32)], [node(body, "Neg", [arg], T=dtypes.float32)],
                 {ret: f"{body}:y:0"})
    g = graph_pb2.GraphDef()
    call = node("call", fname, ["x"])
    g.node.extend([placeholder("x"), call])
    g.library.function.append(f)
    return g


def test_function_libraries_with_hostile_names_are_refused(marker):
    assert Session(from_tf_graph_def(_library_graph())).run("call:0", {"x:0": np.float32(2)}) == -2
    for name in hostile_names(marker, count=12):
        for part in ("fname", "arg", "body", "ret"):
            with pytest.raises(GraphError, match="invalid"):
                from_tf_graph_def(_library_graph(**{part: name}))


def _saved_model_with(tmp_path, name: str, alias: str = "x") -> str:
    """The TF1 dense SavedModel with its Relu node renamed to ``name`` (and its signature input
    ``x`` to ``alias``)."""
    out = str(tmp_path / "model")
    shutil.copytree(DATA, out)
    proto = SavedModel()
    with open(os.path.join(out, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    for n in proto.meta_graphs[0].graph_def.node:
        if n.name == "Relu":
            n.name = name
        n.input[:] = [name if i == "Relu" else i for i in n.input]
    inputs = proto.meta_graphs[0].signature_def["serving_default"].inputs
    if alias != "x":
        inputs[alias].CopyFrom(inputs["x"])
        del inputs["x"]
    with open(os.path.join(out, "saved_model.pb"), "wb") as f:
        f.write(proto.SerializeToString())
    return out


def test_saved_models_with_hostile_names_are_refused_by_load_and_predict(tmp_path, marker):
    from specflow.export.loader import load_saved_model

    with load_saved_model(_saved_model_with(tmp_path / "ok", "Relu")) as model:  # the unchanged model loads
        assert model.run("serving_default", {"x": np.ones((1, 4), np.float32)})["y"].shape == (1, 3)
    names = hostile_names(marker, count=10)
    for k, name in enumerate(names):
        with pytest.raises(GraphError, match="invalid node name") as err:
            load_saved_model(_saved_model_with(tmp_path / str(k), name))
        assert "saved_model.pb" in err.value.format()
    from specflow.views.saved_model_view import describe_saved_model

    for k, name in enumerate(names[:4]):  # signature names are shown and looked up: checked too
        with pytest.raises(GraphError, match="invalid input/output name"):
            load_saved_model(_saved_model_with(tmp_path / f"alias{k}", "Relu", alias=name))

    with pytest.raises(GraphError, match="invalid node name"):  # `specflow inspect EXPORT_DIR` shows names
        describe_saved_model(_saved_model_with(tmp_path / "inspect", names[0]))
    np.save(tmp_path / "x.npy", np.ones((1, 4), np.float32))
    r = subprocess.run([sys.executable, "-m", "specflow.cli", "predict", _saved_model_with(tmp_path / "cli", names[0]),
                        "--input", f"x={tmp_path / 'x.npy'}"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    assert "invalid node name" in r.stderr + r.stdout and "Traceback" not in r.stderr


def test_checkpoints_with_hostile_tensor_names_are_refused(tmp_path, marker):
    for k, name in enumerate(hostile_names(marker, count=10)):
        prefix = str(tmp_path / f"ckpt{k}")
        write_bundle(prefix, {name: np.zeros(2, np.float32)})  # writing does not judge names
        with pytest.raises(CheckpointError, match="invalid checkpoint tensor name"):
            read_bundle(prefix)


def test_hostile_names_built_in_python_run_past_the_compile_threshold_as_data(marker, monkeypatch):
    """No load path here: the names reach the executor directly, and the generated straight line
    is compiled and run with each of them in its comments."""
    sources: list[str] = []
    # On a loaded machine a descheduled Neg can time as "expensive" and take its partition off the
    # straight line, which is never compiled then; every kernel stays inexpensive here.
    monkeypatch.setattr(executor_types, "INLINE_COST_NS", 10**15)
    real = line_codegen.line_source
    monkeypatch.setattr(line_codegen, "line_source", lambda nodes: sources.append(real(nodes)) or sources[-1])
    for name in hostile_names(marker, count=16):
        g = GraphDef([
            NodeDef("x", "Placeholder", attrs={"dtype": dtypes.float32, "shape": None}),
            NodeDef(name, "Neg", [("x")], attrs={"T": dtypes.float32}),
            NodeDef("y", "Identity", [name], attrs={"T": dtypes.float32}),
        ])
        before = len(sources)
        with Session(g) as sess:
            for step in range(straight_line.TIME_FIRST + 4):
                assert sess.run("y:0", {"x:0": np.float32(step)}) == -step
        assert len(sources) > before, "the generated line was never compiled"
        assert all(repr(name) in s for s in sources[before:])
