"""TF2's view of our SavedModels, checked without TensorFlow: the object graph's structure (objects,
methods, signatures), the function library holding every function it names, the capture
bindings, the checkpoint's object graph and keys against the bundle, and the FunctionDefs run
through specflow's own TF importer (so a body TF would run computes sf's numbers). The literal
numbers are what TensorFlow 2.21's ``tf.saved_model.load`` returned for the same files
(test_object_graph_in_tensorflow.py checks them against TF where it is installed)."""

from __future__ import annotations

import numpy as np
import pytest
from tensorboard.compat.proto import graph_pb2, node_def_pb2, trackable_object_graph_pb2

import specflow as sf
from specflow.export.exporter import export_model
from specflow.export.loader import load_saved_model, meta_graphs, read_saved_model, variables_prefix
from specflow.io.tensor_bundle import read_bundle
from specflow.io.tf_graph import from_tf_graph_def

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], np.float32)
Y = np.ones((2, 2), np.float32)
# TensorFlow 2.21 on the files Net() saves (see the module docstring)
TF_CALL = [[0.0, 1.753679871559143], [0.03333333134651184, 0.1666666567325592]]
TF_F3 = [[0.7840906977653503, 0.811363697052002], [-1.8025569915771484, -1.388352394104004]]


class Dense(sf.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.kernel = sf.Variable(np.linspace(-1, 1, n_in * n_out, dtype=np.float32).reshape(n_in, n_out))
        self.bias = sf.Variable(np.full(n_out, 0.1, np.float32))

    def __call__(self, x):
        return sf.ops.relu(sf.ops.mat_mul(x, self.kernel) + self.bias)


class Net(sf.Module):
    def __init__(self):
        super().__init__()
        self.l1 = Dense(3, 4)
        self.layers = [Dense(4, 2), Dense(2, 2)]
        self.step = sf.Variable(0, trainable=False, name="step")

    @sf.function(input_signature=[sf.TensorSpec([None, 3], "float32")])
    def __call__(self, x):
        h = self.l1(x)
        for layer in self.layers:
            h = layer(h)
        return h

    @sf.function
    def f(self, x, scale=2.0):
        return {"a": sf.ops.mat_mul(x, self.l1.kernel)[:, :2] * scale, "b": x}

    @sf.function
    def train(self, x, y):
        with sf.GradientTape() as tape:
            loss = sf.ops.mean(sf.ops.square(self.f(x)["a"] - y))
        kernel = self.l1.kernel
        kernel.assign_sub(0.1 * tape.gradient(loss, kernel))
        self.step.assign_add(1)
        return loss


def saved_net(path):
    net = Net()
    net.f(X)
    net.f(X, 3.0)
    net.train(X, Y)  # traced (and run once: step 1, l1/kernel moved)
    sf.save(net, path, signatures={"serving_default": net.__call__,
                                   "scaled": net.f.get_concrete_function(sf.TensorSpec([None, 3], "float32"))})
    return net


def meta(path):
    return meta_graphs(read_saved_model(str(path)))[0]


def children(og, i: int) -> dict[str, int]:
    return {c.local_name: c.node_id for c in og.nodes[i].children}


def call_saved_function(model, name: str, values: list[np.ndarray]) -> list[np.ndarray]:
    """Run library function ``name`` of a loaded SavedModel as TF's loader would call it: its
    tensor inputs fed, its captured inputs the variables ``bound_inputs`` names (through
    specflow's importer, which inlines the call; the session's variables are shared)."""
    mg = model.meta_graph
    og = mg.object_graph_def
    fdef = next(f for f in mg.graph_def.library.function if f.signature.name == name)
    bound = og.concrete_functions[name].bound_inputs
    proto = graph_pb2.GraphDef()
    proto.library.CopyFrom(mg.graph_def.library)
    handles = {n.attrs.get("shared_name") or n.name: n.name for n in model.graph_def.nodes if n.op == "VarHandleOp"}
    inputs = []
    n_in = len(fdef.signature.input_arg) - len(bound)
    for i, arg in enumerate(fdef.signature.input_arg[:n_in]):
        ph = proto.node.add(name=f"call_{name}/in_{i}", op="Placeholder")
        ph.attr["dtype"].type = arg.type
        inputs.append(ph.name)
    for node_id in bound:
        handle = proto.node.add(name=handles[og.nodes[node_id].variable.name], op="VarHandleOp")
        handle.attr["dtype"].type = og.nodes[node_id].variable.dtype
        handle.attr["shape"].shape.CopyFrom(og.nodes[node_id].variable.shape)
        handle.attr["shared_name"].s = og.nodes[node_id].variable.name.encode()
        inputs.append(handle.name)
    call = node_def_pb2.NodeDef(name=f"call_{name}", op="StatefulPartitionedCall", input=inputs)
    call.attr["f"].func.name = name
    call.attr["Tin"].list.type.extend(a.type for a in fdef.signature.input_arg)
    call.attr["Tout"].list.type.extend(a.type for a in fdef.signature.output_arg)
    proto.node.append(call)
    graph = from_tf_graph_def(proto)
    graph.nodes = [n for n in graph.nodes if n.op != "VarHandleOp"]  # the session's own handles
    model.session.extend(graph)
    n_out = len(fdef.signature.output_arg)
    return model.session.run([f"call_{name}:{k}" for k in range(n_out)],
                             {f"{p}:0": v for p, v in zip(inputs, values)})


def test_saved_module_object_graph_structure(tmp_path):
    net = saved_net(tmp_path / "net")
    mg = meta(tmp_path / "net")
    og = mg.object_graph_def
    root = children(og, 0)
    assert {"l1", "layers", "step", "__call__", "f", "train", "signatures", "variables",
            "trainable_variables"} <= set(root)
    assert og.nodes[0].user_object.identifier == "_generic_user_object"
    layers = root["layers"]
    assert og.nodes[layers].user_object.identifier == "trackable_list_wrapper"
    assert set(children(og, layers)) == {"0", "1"}
    kernel = og.nodes[children(og, root["l1"])["kernel"]].variable
    assert (kernel.name, [d.size for d in kernel.shape.dim], kernel.trainable) == ("l1/kernel", [3, 4], True)
    assert not og.nodes[root["step"]].variable.trainable
    trainable = [og.nodes[i].variable.name for i in children(og, root["trainable_variables"]).values()]
    assert trainable == [p for p, v in net.named_variables().items() if v.trainable]

    # every function the object graph names is in the library, and so is every function called
    library = {f.signature.name: f for f in mg.graph_def.library.function}
    named = set(og.concrete_functions)
    assert named <= set(library)
    f_node = og.nodes[root["f"]].function
    assert len(f_node.concrete_functions) == 3  # f(X), f(X, 3.0) and the signature's f([None, 3])
    assert [v.string_value for v in f_node.function_spec.fullargspec.named_tuple_value.values[0].value
            .list_value.values] == ["x", "scale"]
    for fdef in library.values():
        for node in fdef.node_def:
            if node.op == "StatefulPartitionedCall":
                assert node.attr["f"].func.name in library
    sigs = children(og, root["signatures"])
    assert set(sigs) == {"serving_default", "scaled"}
    bare = og.nodes[sigs["scaled"]].bare_concrete_function
    assert list(bare.argument_keywords) == ["x"] and bare.allowed_positional_arguments == 1
    # captured variables: one variable node per trailing resource arg
    for name, cf in og.concrete_functions.items():
        resources = [a for a in library[name].signature.input_arg if a.type == 20]  # DT_RESOURCE
        assert len(resources) == len(cf.bound_inputs), name
        assert all(og.nodes[i].WhichOneof("kind") == "variable" for i in cf.bound_inputs)

    # the checkpoint's object graph: the same objects, each variable's key in the bundle
    tensors = read_bundle(variables_prefix(str(tmp_path / "net")))
    ckpt = trackable_object_graph_pb2.TrackableObjectGraph()
    ckpt.ParseFromString(bytes(np.asarray(tensors["_CHECKPOINTABLE_OBJECT_GRAPH"], dtype=object).item()))
    assert len(ckpt.nodes) == len(og.nodes)
    values = {}
    for saved, node in zip(og.nodes, ckpt.nodes):
        assert [(c.node_id, c.local_name) for c in saved.children] == \
            [(c.node_id, c.local_name) for c in node.children]
        if saved.WhichOneof("kind") == "variable":
            (attr,) = node.attributes
            assert attr.checkpoint_key.endswith("/.ATTRIBUTES/VARIABLE_VALUE")
            values[saved.variable.name] = tensors[attr.checkpoint_key]
    assert values.keys() == net.named_variables().keys()
    for path, var in net.named_variables().items():
        np.testing.assert_array_equal(values[path], var.numpy())
    restore_keys = {n.name: n for n in mg.graph_def.node}["save/RestoreV2/tensor_names"]
    assert {k.decode() for k in restore_keys.attr["value"].tensor.string_val} == \
        {n.attributes[0].checkpoint_key for n in ckpt.nodes if n.attributes}


def test_saved_module_functions_compute_sfs_numbers(tmp_path):
    net = saved_net(tmp_path / "net")
    back = sf.load(tmp_path / "net")
    assert back.l1.kernel.shape.as_list() == [3, 4] and int(back.step.numpy()) == 1
    np.testing.assert_allclose(back(X).numpy(), net(X).numpy(), rtol=1e-6)
    np.testing.assert_allclose(back(X).numpy(), TF_CALL, atol=1e-6)
    model = back._saved
    og = model.meta_graph.object_graph_def
    root = children(og, 0)
    # f's traces: f(X) (scale 2.0 bound as a default), f(X, 3.0), f([None, 3]); outputs a, b by key
    by_scale = {}
    for name in og.nodes[root["f"]].function.concrete_functions:
        args = og.concrete_functions[name].canonicalized_input_signature.tuple_value.values[0].tuple_value.values
        dims = [d.size for d in args[0].tensor_spec_value.shape.dim]
        by_scale[args[1].float64_value, tuple(dims)] = name
    assert set(by_scale) == {(2.0, (2, 3)), (3.0, (2, 3)), (2.0, (-1, 3))}
    for (scale, _), name in by_scale.items():
        a, b = call_saved_function(model, name, [X])
        np.testing.assert_allclose(a, net.f(X, scale)["a"].numpy(), rtol=1e-6)
        np.testing.assert_array_equal(b, X)
        if scale == 3.0:
            np.testing.assert_allclose(a, TF_F3, rtol=1e-6)
    # the signature wrapper calls its body function: a nested call
    (scaled,) = [og.nodes[i].bare_concrete_function.concrete_function_name
                 for i in children(og, root["signatures"]).values()
                 if "scaled" in og.nodes[i].bare_concrete_function.concrete_function_name]
    a, b = call_saved_function(model, scaled, [X])
    np.testing.assert_allclose(a, net.f(X)["a"].numpy(), rtol=1e-6)
    # train: its assigns run (control outputs), on the loaded model's own variables
    (train,) = og.nodes[root["train"]].function.concrete_functions
    before = back.l1.kernel.numpy().copy()
    loss = call_saved_function(model, train, [X, Y])[0]
    want = net.train(X, Y).numpy()
    np.testing.assert_allclose(loss, want, rtol=1e-6)
    np.testing.assert_allclose(back.l1.kernel.numpy(), net.l1.kernel.numpy(), rtol=1e-6)
    assert not np.allclose(before, back.l1.kernel.numpy()) and int(back.step.numpy()) == 2


def test_spec_export_object_graph(trained, tmp_path):
    spec, logdir = trained("digits_mlp")
    export_model(spec, logdir, tmp_path / "m")
    model = load_saved_model(tmp_path / "m")
    og = model.meta_graph.object_graph_def
    root = children(og, 0)
    assert {"hidden", "logits", "serving_default", "signatures", "variables", "trainable_variables"} <= set(root)
    assert set(children(og, root["hidden"])) == {"kernel", "bias"}
    (name,) = og.nodes[root["serving_default"]].function.concrete_functions
    x = np.random.default_rng(0).uniform(0, 1, (3, 64)).astype(np.float32)
    (probs,) = call_saved_function(model, name, [x])
    np.testing.assert_allclose(probs, model.run("serving_default", {"images": x})["probabilities"], rtol=1e-6)
    back = sf.load(tmp_path / "m")
    assert back.hidden.kernel.shape.as_list() == [64, 128]


@pytest.mark.parametrize("bad", ["python_output", "variable_argument"])
def test_a_method_trace_tf_cannot_describe_is_left_out_with_a_warning(tmp_path, bad):
    class M(sf.Module):
        def __init__(self):
            super().__init__()
            self.v = sf.Variable(np.ones(2, np.float32))

        @sf.function(input_signature=[sf.TensorSpec([2], "float32")])
        def serve(self, x):
            return x * self.v

        @sf.function
        def odd(self, x):
            return (x, 1) if bad == "python_output" else x + x.read_value()

    m = M()
    m.odd(np.ones(2, np.float32) if bad == "python_output" else m.v)
    with pytest.warns(UserWarning, match="'odd' is not saved as a TF2 method"):
        sf.save(m, tmp_path / "m")
    og = meta(tmp_path / "m").object_graph_def
    assert not og.nodes[children(og, 0)["odd"]].function.concrete_functions
    np.testing.assert_allclose(sf.load(tmp_path / "m").serving_default(x=np.full(2, 3, np.float32))["output_0"]
                               .numpy(), [3, 3])


class Looping(sf.Module):
    def __init__(self):
        super().__init__()
        self.w = sf.Variable(0.5)

    @sf.function(input_signature=[sf.TensorSpec([None], "float32")])
    def __call__(self, x):  # the loop reads a variable: a stateful node inside
        return sf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * self.w), [0, x], maximum_iterations=5)[1]


def test_a_functions_control_outputs_are_outside_its_loops(tmp_path):
    """TF's function runtime refuses a control output inside a while loop's frame ("inputs from
    different frames"): a loop holding stateful nodes is waited for through its Exits."""
    sf.save(Looping(), tmp_path / "m")
    (fdef,) = [f for f in meta(tmp_path / "m").graph_def.library.function if "__call__" in f.signature.name]
    ops = {n.name: n.op for n in fdef.node_def}
    assert "ReadVariableOp" in ops.values() and fdef.control_ret
    assert {ops[n] for n in fdef.control_ret.values()} == {"Exit"}, dict(fdef.control_ret)
    np.testing.assert_allclose(sf.load(tmp_path / "m")(np.float32([1, 2])).numpy(), [0.125, 0.25])
