"""sf.load and sf.save: specs and SavedModels as Python modules, and modules as SavedModels.

``sf.load("model.yaml")`` lowers the spec (with its training graph when it has a ``train:``
section) into one Session, runs its initializer, and returns a :class:`LoadedModule`: the
variables as sf.Variables sharing the Session's storage, ``signatures`` as callables
(``m.signatures["serving_default"](images=x)``) and ``train_step`` (one optimizer step, as
``specflow train`` runs it). ``sf.load(EXPORT_DIR)`` (or a frozen ``graph.pb``) goes through
``export/loader.load_model``.

``sf.save(module, EXPORT_DIR, signatures=...)`` writes a SavedModel through
``export/savedmodel.write_saved_model``: a loaded spec as ``specflow export`` would (training
flag folded, graph pruned to the signatures), a Python ``sf.Module`` from the concrete functions
given as signatures, one graph holding them all, each variable one VarHandleOp named by its
attribute path.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from specflow.api.function import ConcreteFunction, Function
from specflow.api.module import Module
from specflow.api.op_functions import to_tensor
from specflow.api.restored_functions import restored_functions
from specflow.api.saved_objects import SavedMethod, object_attributes, object_methods
from specflow.api.signature_tape import TapedSignature
from specflow.api.tensor import EagerTensor, Tensor
from specflow.errors import ExportError
from specflow.graph.graph_def import GraphDef, NodeDef, parse_input
from specflow.ops.registry import TensorSpec
from specflow.runtime import resources

_CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


class SignatureFunction:
    """A named function of a loaded model: keyword (or positional, in input order; a SavedModel's
    signature with several inputs: keyword only) tensors in, a dict of output alias -> tensor out."""

    def __init__(self, name: str, inputs: dict[str, tuple[str, TensorSpec]],
                 outputs: dict[str, tuple[str, TensorSpec]], run, single: bool = False, taped=None,
                 keywords_only: bool = False):
        self.name = name
        # a SavedModel's inputs have no order of their own (a map, read back sorted): several are
        # taken by keyword only, as TensorFlow's loaded signatures take them
        self._keywords_only = keywords_only and len(inputs) > 1
        self._taped = taped  # the graph op by op, under a recording GradientTape
        self.inputs = inputs
        self.outputs = outputs
        self._run = run
        self._single = single and len(outputs) == 1  # a function call: its one output, not a dict

    def __call__(self, *args, **kwargs) -> dict[str, EagerTensor]:
        aliases = list(self.inputs)
        if args and self._keywords_only:
            raise ExportError(f"signature '{self.name}' takes its inputs by keyword ({', '.join(aliases)}): "
                              f"{self.name}({aliases[0]}=..., ...)")
        if len(args) > len(aliases):
            raise ExportError(f"signature '{self.name}' takes {len(aliases)} input(s) ({', '.join(aliases)}), "
                              f"got {len(args)}")
        feeds = dict(zip(aliases, args))
        for k, v in kwargs.items():
            if k in feeds:
                raise ExportError(f"signature '{self.name}': input '{k}' given twice")
            feeds[k] = v
        if self._taped is not None and self._taped.applies(feeds):
            _check_aliases(self.name, self.inputs, feeds)
            out = self._taped(feeds, self._run)
        else:
            feeds = {k: np.asarray(v) if isinstance(v, Tensor) else v for k, v in feeds.items()}
            values = self._run(feeds)
            out = {a: EagerTensor(v, self.outputs[a][1].dtype, _CPU0) for a, v in values.items()}
        return next(iter(out.values())) if self._single else out

    def __repr__(self) -> str:
        ins = ", ".join(f"{a}: {s}" for a, (_, s) in self.inputs.items())
        outs = ", ".join(f"{a}: {s}" for a, (_, s) in self.outputs.items())
        return f"<signature {self.name}({ins}) -> {{{outs}}}>"


def _check_aliases(name: str, inputs: dict, feeds: dict) -> None:
    unknown = [a for a in feeds if a not in inputs]
    if unknown:
        raise ExportError(f"signature '{name}' has no input '{unknown[0]}' (inputs: {', '.join(inputs)})")
    missing = [a for a in inputs if a not in feeds]
    if missing:
        raise ExportError(f"signature '{name}' needs input(s) {', '.join(missing)} (inputs: {', '.join(inputs)})")


def _checked_run(session, name: str, inputs: dict, outputs: dict, extra_feeds: dict):
    def run(feeds: dict) -> dict:
        _check_aliases(name, inputs, feeds)
        fed = {inputs[a][0]: v for a, v in feeds.items()}
        fed.update(extra_feeds)
        aliases = list(outputs)
        values = session.run([outputs[a][0] for a in aliases], fed)
        return dict(zip(aliases, values))

    return run


class LoadedModule(Module):
    """What sf.load returns. ``signatures``: name -> SignatureFunction (also ``m.<signature>``);
    ``functions``: each call of a spec function (``m.block1(x)``: the call node's subgraph with
    the model's variables, its output or a dict of them), or a TF2 SavedModel's saved
    tf.functions by dotted path (``m.scaled``, ``m.sub.f``: RestoredFunction); ``train_step`` (a spec with a
    ``train:`` section): ``m.train_step(images=x, labels=y)`` runs one optimizer step and returns
    the loss; ``close()`` releases the Session."""

    def __init__(self, source: str, session, variables: dict, signatures: dict, spec=None, train_step=None,
                 functions: dict | None = None):
        super().__init__(Path(source).stem)
        self._source = source
        self._session = session
        self._named = variables
        self.signatures = signatures
        self.functions = functions or {}
        self._spec = spec
        if train_step is not None:
            self.train_step = train_step

    def named_variables(self) -> dict:
        return dict(self._named)

    def __getattr__(self, name: str):
        # m.f(x) (a saved method), m.serving_default(images=x), m.block1(x), m.l1.kernel
        for table in ("_methods", "signatures", "functions", "_objects"):
            fns = self.__dict__.get(table, {})
            if name in fns:
                return fns[name]
        raise AttributeError(f"{type(self).__name__} has no attribute '{name}'")

    def __call__(self, *args, **kwargs):
        """A SavedModel whose root was saved with a ``__call__`` (a tf.Module's, a Keras model's):
        the signature serving that ``__call__``, returning what it returned (as
        ``tf.saved_model.load(...)(x)``); where no signature is known to serve it, the saved
        ``__call__`` itself when one of its concrete functions takes the arguments, else the
        serving signature, its one output itself."""
        method = self.__dict__.get("_methods", {}).get("__call__")
        if method is not None:  # the signature serving the saved __call__
            return method(*args, **kwargs)
        sig = self.signatures.get("serving_default") if self.__dict__.get("_callable") else None
        restored = self.functions.get("__call__")
        if restored is not None and (sig is None or restored.accepts(args, kwargs)):
            return restored(*args, **kwargs)  # the saved __call__ itself, no signature serving it
        if sig is None:
            raise TypeError(f"the loaded model '{self.name}' is not callable (its root was saved without a "
                            f"__call__); call a signature: {', '.join(self.signatures) or 'it has none'}")
        out = sig(*args, **kwargs)
        return next(iter(out.values())) if isinstance(out, dict) and len(out) == 1 else out

    def close(self) -> None:
        if self._session is not None:
            self._session.close()


class TrainStep:
    """One training step of a loaded spec: the optimizer's update on a batch, returning the loss."""

    def __init__(self, session, graph, inputs: list[str]):
        self._session = session
        self._graph = graph
        self.inputs = inputs

    def __call__(self, batch: dict | None = None, **kwargs) -> EagerTensor:
        feeds = dict(batch or {}, **kwargs)
        missing = [i for i in self.inputs if i not in feeds]
        unknown = [k for k in feeds if k not in self.inputs]
        if missing or unknown:
            raise ExportError(f"train_step takes the model inputs {', '.join(self.inputs)}; "
                              + (f"missing {', '.join(missing)}" if missing else f"no input '{unknown[0]}'"))
        fed = {k: np.asarray(v) if isinstance(v, Tensor) else v for k, v in feeds.items()}
        if self._graph.training_flag:
            fed[self._graph.training_flag] = True
        loss = self._session.run(self._graph.loss, fed, targets=[self._graph.train_op])
        return EagerTensor(loss, to_tensor(loss).dtype, _CPU0)


def _find_variable(session, name: str) -> resources.Variable:
    for d in session.devices:
        for (_, n), res in d.resource_mgr.items():
            if n == name and isinstance(res, resources.Variable):
                return res
    raise ExportError(f"variable '{name}' is not in the session (was it initialized?)")


def _session(graph: GraphDef):
    """A Session with the devices the graph's constraints name (``/cpu:1`` needs two CPUs)."""
    from specflow.api.function import devices_needed
    from specflow.runtime.session import Session, SessionConfig

    return Session(graph, SessionConfig(devices=devices_needed(graph)))


def load(path, overrides=None, tags=("serve",)) -> LoadedModule:
    """A spec (``.yaml``), a SavedModel directory (or its saved_model.pb) or a frozen GraphDef
    (``.pb``, ``.pbtxt``) as a module."""
    from specflow.io.graph_loader import is_graph_def_file

    p = Path(path)
    if p.is_dir() or is_graph_def_file(p) or p.name == "saved_model.pb":
        return _load_saved_model(p, tags)
    return _load_spec(p, overrides)


def _load_spec(path: Path, overrides) -> LoadedModule:
    import specflow
    from specflow.io.tf_functions import check_spec_writes_no_files

    spec = specflow.load_spec(path, overrides)
    check_spec_writes_no_files(spec.graph_def)  # as every CLI command: a spec writes no files it names
    cfg = spec.train
    graph = None
    if cfg is not None:
        from specflow.train.graph import build_training_graph

        graph = build_training_graph(spec, cfg, None)
        session = _session(graph.graph_def)
        session.run([], targets=[graph.init_op])
        infos = graph.variables
    else:
        session = _session(spec.graph_def)
        session.run([], targets=[spec.lowered.init_op])
        infos = spec.lowered.variables
    from specflow.api.variables import Variable

    variables = {v.name: Variable._adopt(_find_variable(session, v.name), v.name, v.trainable) for v in infos}
    flag = spec.lowered.training_flag
    sigs = {}
    for name, sig in spec.signatures.items():
        extra = {flag: False} if flag else {}
        taped = TapedSignature(name, spec.graph_def, dict(sig["inputs"]), dict(sig["outputs"]), variables, extra)
        sigs[name] = SignatureFunction(name, dict(sig["inputs"]), dict(sig["outputs"]),
                                       _checked_run(session, name, sig["inputs"], sig["outputs"], extra),
                                       taped=taped)
    step = None
    if graph is not None:
        step = TrainStep(session, graph, list(cfg.data.feeds))
    calls = _function_calls(spec, session, {flag: False} if flag else {})
    return LoadedModule(str(path), session, variables, sigs, spec, step, calls)


def _function_calls(spec, session, extra_feeds: dict) -> dict[str, SignatureFunction]:
    """Each call node of a spec function whose inputs are named tensors, as a callable: the
    function's inputs fed where the call reads them, its outputs fetched."""
    from specflow.schema.models import CallNodeSpec

    out = {}
    for name, node in spec.model.nodes.items():
        if not isinstance(node, CallNodeSpec):
            continue
        fn = spec.model.functions[node.call]
        given = node.inputs
        items = list(given.items()) if isinstance(given, dict) else list(zip(fn.inputs, given))
        if any(not isinstance(ref, str) for _, ref in items):
            continue  # an inline node as an input has no tensor of its own to feed
        inputs = {arg: (spec.resolve(ref), spec.tensor_spec(spec.resolve(ref))) for arg, ref in items}
        outputs = {}
        for k, alias in enumerate(fn.outputs):
            t = spec.resolve(f"{name}:{k}" if k else name)
            outputs[alias] = (t, spec.tensor_spec(t))
        out[name] = SignatureFunction(name, inputs, outputs, _checked_run(session, name, inputs, outputs,
                                                                          extra_feeds), single=True)
    return out


def _load_saved_model(path: Path, tags) -> LoadedModule:
    from specflow.api.variables import Variable
    from specflow.export.loader import load_model

    model = load_model(str(path), tags)
    saved = object_variables(model) or saved_variables(model.meta_graph, model.graph_def)
    variables, every = {}, {}  # the model's; every variable of the session (what the graph reads)
    for d in model.session.devices:
        for (_, name), res in d.resource_mgr.items():
            if isinstance(res, resources.Variable) and res.value is not None:
                every[name] = Variable._adopt(res, name, True if saved is None else saved.get(name, False))
    for name in (saved if saved is not None else every):  # the SavedModel's order
        if name in every:
            variables[name] = every[name]
    sigs = {}
    for name, sig in model.signatures.items():
        taped = TapedSignature(name, model.graph_def, dict(sig.inputs), dict(sig.outputs), every)
        sigs[name] = SignatureFunction(name, dict(sig.inputs), dict(sig.outputs),
                                       lambda feeds, name=name: model.run(name, feeds), taped=taped,
                                       keywords_only=True)
    functions = restored_functions(model, every)  # built lazily: a function's graph on its first call
    module = LoadedModule(str(path), model.session, variables, sigs, functions=functions)
    module._saved = model  # sf.save writes it again
    module._objects, module._callable = object_attributes(model.meta_graph, model.graph_def, every, functions)
    module._methods = {name: SavedMethod(name, sigs[sig], args, keys, returns)
                       for name, (sig, args, keys, returns) in object_methods(model.meta_graph).items() if sig in sigs}  # fmt: skip
    return module


def object_variables(model) -> dict[str, bool] | None:
    """A TF2 model's variables (graph variable name -> trainable) by object identity: each
    variable object of the object graph is found at the VarHandleOp the restore function fills
    with its checkpoint key (the one the functions capture), not by its name, which objects may
    share (a Keras export tracks its variables twice, as ``variables`` and ``_all_variables``).
    Listed as the root's ``variables`` attribute lists them when it has one (TF's
    ``loaded.variables``), else in object order; None when the object graph does not say."""
    meta_graph = model.meta_graph
    if meta_graph is None:
        return None
    objects = meta_graph.object_graph_def.nodes
    ids = [i for i, n in enumerate(objects) if n.WhichOneof("kind") == "variable"]
    if not ids:
        return None
    listed = next((c.node_id for c in objects[0].children if c.local_name == "variables"), None)
    if listed is not None and objects[listed].children and all(
            objects[c.node_id].WhichOneof("kind") == "variable" for c in objects[listed].children):
        ids = [c.node_id for c in objects[listed].children]
    handles = model.object_handles()
    nodes = model.graph_def.node_map()
    if not all(i in handles and handles[i] in nodes for i in ids):
        return None  # (a bundle without an object graph: by name, saved_variables)
    return {nodes[handles[i]].attrs.get("shared_name") or handles[i]: bool(objects[i].variable.trainable)
            for i in ids}


def saved_variables(meta_graph, graph: GraphDef) -> dict[str, bool] | None:
    """The model's variables (name -> trainable) as the SavedModel lists them: a TF2 model's
    object graph (whose variables the functions read; the saver's ``Variable_N`` restore copies
    are not the model's), else the TF1 ``variables`` collection; None when it says neither."""
    if meta_graph is None:
        return None
    objects = [n.variable for n in meta_graph.object_graph_def.nodes if n.WhichOneof("kind") == "variable"]
    if objects:
        flags: dict[str, list[bool]] = {}
        for v in objects:
            flags.setdefault(v.name, []).append(bool(v.trainable))
        out = {}
        for name, fs in flags.items():
            # Names may repeat (a tf.Module's unnamed tf.Variables are all 'Variable'); the graph
            # holds them uniquified, as TF names nodes: Variable, Variable_1, ...
            for i in range(len(fs)):
                out[name if i == 0 else f"{name}_{i}"] = fs[0] if len(set(fs)) == 1 else True
        return out
    collection = meta_graph.collection_def
    if "variables" not in collection:
        return None
    from tensorboard.compat.proto import variable_pb2

    shared = {n.name: n.attrs.get("shared_name") or n.name for n in graph.nodes if n.op == "VarHandleOp"}
    out = {}
    for raw in collection["variables"].bytes_list.value:
        vdef = variable_pb2.VariableDef.FromString(raw)
        node = vdef.variable_name.rsplit(":", 1)[0]
        out[shared.get(node, node)] = bool(vdef.trainable)
    return out


# --- saving -------------------------------------------------------------------------------------------


def save(module, export_dir, signatures=None, overwrite: bool = False) -> None:
    """Write ``module`` as a SavedModel TensorFlow and ``specflow predict`` load."""
    from specflow.export.savedmodel import write_saved_model

    if not overwrite and os.path.lexists(export_dir):
        # said here so the hint is Python's keyword, not the CLI's --overwrite
        raise ExportError(f"{export_dir} already exists (pass overwrite=True to replace it)")
    if isinstance(module, LoadedModule) and module._spec is not None and signatures is None:
        model = _spec_serving_model(module)
    elif isinstance(module, LoadedModule) and getattr(module, "_saved", None) is not None and signatures is None:
        model = _loaded_serving_model(module)
    else:
        from specflow.api.saved_module import module_objects

        concretes = _concrete_signatures(module, signatures)
        model = _python_serving_model(module, concretes)
        module_objects(module, model, concretes, _output_aliases)  # TF2's view: the module's objects
    write_saved_model(model, export_dir, overwrite=overwrite)


def _spec_serving_model(module: LoadedModule):
    from specflow.export.serving import ServingModel, closure, fold_training_flag, select_signatures

    spec = module._spec
    sigs = select_signatures(spec, None)
    graph = fold_training_flag(spec.graph_def, spec.lowered.training_flag, spec.tensor_spec)
    tensors = [t for s in sigs.values() for t, _ in list(s.outputs.values()) + list(s.inputs.values())]
    graph = closure(graph, tensors)
    values = {}
    for node in graph.nodes:
        if node.op == "VarHandleOp":
            name = node.attrs.get("shared_name") or node.name
            values[name] = np.asarray(module._named[name])
    trainable = {n: module._named[n].trainable for n in values}
    return ServingModel(graph, sigs, values, checkpoint="", trainable=trainable)


def _loaded_serving_model(module: LoadedModule):
    """A loaded SavedModel or frozen graph as it was, its signatures' closure with the variables'
    current values (trained or assigned since loading), as ``tf.saved_model.save`` of a loaded
    model writes it."""
    from specflow.api.variables import Variable
    from specflow.export.serving import ServingModel, closure

    saved = module._saved
    sigs = saved.signatures
    tensors = [t for s in sigs.values() for t, _ in list(s.outputs.values()) + list(s.inputs.values())]
    graph = closure(saved.graph_def, tensors)
    named = module.named_variables()
    values, trainable = {}, {}
    for node in graph.nodes:
        if node.op == "VarHandleOp":
            name = node.attrs.get("shared_name") or node.name
            var = named.get(name)
            if var is None:
                var = Variable._adopt(_find_variable(module._session, name), name)
            values[name] = np.asarray(var)
            trainable[name] = var.trainable
    return ServingModel(graph, dict(sigs), values, checkpoint="", trainable=trainable)


def _default_signature(module) -> dict:
    """TF 2's choice when ``signatures=`` is not given (``find_function_to_export``): the root's
    ``_default_save_signature`` function, else its one function attribute or method (``__call__``
    included) with an ``input_signature`` whose trace returns tensors, as ``serving_default``;
    with several or none, no signature (its methods are saved all the same)."""
    from specflow.api.variables import Variable

    found, seen = [], set()
    for name in dir(module):
        if name.startswith("_sf_function_"):
            continue
        try:
            fn = getattr(module, name, None)
        except Exception:  # noqa: BLE001 - TF skips an attribute whose accessor fails
            continue
        if not isinstance(fn, (Function, ConcreteFunction)) or id(fn) in seen:
            continue
        seen.add(id(fn))
        if name == "_default_save_signature":
            return {"serving_default": fn}
        if isinstance(fn, Function):
            if fn.input_signature is None:
                continue
            fn = fn.get_concrete_function(*fn.input_signature)
        if fn.outputs and not any(isinstance(leaf, Variable) for leaf in (fn.call_structure or ((), []))[1]):
            found.append(fn)
    return {"serving_default": found[0]} if len(found) == 1 else {}


def _concrete_signatures(module, signatures) -> dict[str, ConcreteFunction]:
    if signatures is None:
        signatures = _default_signature(module)
    if not isinstance(signatures, dict):
        signatures = {"serving_default": signatures}
    out = {}
    for name, fn in signatures.items():
        if isinstance(fn, Function):
            if fn.input_signature is None:
                raise ExportError(f"sf.save: signature '{name}' is an sf.function without an input_signature; "
                                  "pass fn.get_concrete_function(...) instead")
            fn = fn.get_concrete_function(*fn.input_signature)
        if not isinstance(fn, ConcreteFunction):
            raise ExportError(f"sf.save: signature '{name}' is a {type(fn).__name__}, not a function")
        out[name] = fn
    return out


def _python_serving_model(module, concretes: dict[str, ConcreteFunction]):
    """One graph holding every signature's concrete function (nodes prefixed by the signature
    name), the variables shared, each a VarHandleOp named by its attribute path."""
    from specflow.export.serving import ServingModel, SignatureIO

    paths = {}
    if isinstance(module, Module):
        paths = {v._uid: p for p, v in module.named_variables().items()}
    handles: dict[str, NodeDef] = {}  # variable path -> its VarHandleOp
    values: dict[str, Any] = {}
    trainable: dict[str, bool] = {}
    nodes: list[NodeDef] = []
    sigs = {}
    for sig_name, cf in concretes.items():
        prefix = f"{sig_name}/"
        renamed: dict[str, str] = {}
        for uid, (ref, node_name) in cf.variables.items():
            var = ref()
            if var is None:
                raise ExportError(f"sf.save: signature '{sig_name}' uses variable '{uid}', which was deleted")
            path = paths.get(uid) or uid
            renamed[node_name] = path
            if path not in handles:
                handles[path] = NodeDef(path, "VarHandleOp", [], "", {"container": "", "shared_name": path,
                                                                       "dtype": var.dtype, "shape": var.shape})
                values[path] = np.asarray(var)
                trainable[path] = var.trainable
        from specflow.api.lookup import initialized_tables

        graph_def = initialized_tables(cf.graph_def, f"sf.save: signature '{sig_name}'")  # tables fill themselves
        for node in graph_def.nodes:
            if node.op != "VarHandleOp":
                renamed[node.name] = prefix + node.name
        for node in graph_def.nodes:
            if node.op == "VarHandleOp":
                continue
            inputs = []
            for i in node.inputs:
                ctrl = i.startswith("^")
                ref_ = parse_input(i)
                new = renamed[ref_.node]
                inputs.append(f"^{new}" if ctrl else (new if ref_.index == 0 else f"{new}:{ref_.index}"))
            attrs = {k: v for k, v in node.attrs.items() if k != "_class"}
            nodes.append(NodeDef(renamed[node.name], node.op, inputs, "", attrs, node.location))
        ins = {}
        for t, (dtype, shape) in zip(cf.inputs, cf.input_specs):
            alias = parse_input(t).node
            ins[alias] = (_rename(t, renamed), TensorSpec(dtype, shape))
        outs = {}
        aliases = _output_aliases(cf)
        for alias, t, (dtype, shape) in zip(aliases, cf.outputs, cf.output_specs):
            tensor = _rename(t, renamed)
            if cf.target is not None:  # the function's effects (assigns, prints) run with its outputs, as
                # a call of the whole TF function does in TF1-style loaders (sf.load, predict, Serving)
                node = NodeDef(f"{prefix}{alias}_after_effects", "Identity", [tensor, f"^{renamed[cf.target]}"], "",
                               {"T": dtype})
                nodes.append(node)
                tensor = f"{node.name}:0"
            outs[alias] = (tensor, TensorSpec(dtype, shape))
        if not outs:
            raise ExportError(f"sf.save: signature '{sig_name}' returns no tensors")
        sigs[sig_name] = SignatureIO(ins, outs)
    graph = GraphDef(list(handles.values()) + nodes)
    return ServingModel(graph, sigs, values, checkpoint="", trainable=trainable)


def _rename(tensor: str, renamed: dict) -> str:
    ref = parse_input(tensor)
    return f"{renamed[ref.node]}:{ref.index}"


def _output_aliases(cf: ConcreteFunction) -> list[str]:
    """A dict of tensors keeps its keys as aliases; anything else is output_0, output_1, ..."""
    s = cf._structure
    if s is not None and s[0] is dict and all(sub is None for sub in s[2]) and len(s[1]) == len(cf.outputs):
        return [str(k) for k in s[1]]
    return [f"output_{i}" for i in range(len(cf.outputs))]
