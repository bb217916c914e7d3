"""A TF2 SavedModel's saved ``tf.function``s as callables of what sf.load returns, as
``tf.saved_model.load`` restores them: ``m.scaled(x, 2.0)``, ``m.sub.f(x)``, whether or not a
signature serves them.

A saved function (an object-graph node of kind ``function``) holds one or more concrete
functions, each with its structured input signature (``((args...), {kwargs})``: TensorSpecs, and
the Python values it was traced with), its output structure and ``bound_inputs`` (the variables
its trailing arguments capture). A call binds its arguments to the Python parameters the
function was saved with (its FunctionSpec: defaults filled in, keywords placed), then takes the
first concrete function that accepts them: tensors of the same dtype and a compatible shape,
Python values equal. Arrays and sf.Tensors are tried first; then Python numbers and lists too,
converted to the signature's dtype where TensorFlow would convert them (an int to a float, not a
float to an int). The chosen function runs through export/function_call.py in the model's
Session, its captures bound to the model's own variables, and its outputs come back as sf.Tensors
in the structure the function returned. Under a recording GradientTape or inside sf.function the
same call graph runs op by op instead (api/signature_tape.py, as a signature does), so gradients
reach its inputs and the model's variables, as through TensorFlow's restored functions.
"""

from __future__ import annotations

import threading

import numpy as np

from specflow.api.function import flatten
from specflow.api.signature_tape import TapedSignature
from specflow.api.tensor import EagerTensor, Tensor
from specflow.errors import ExportError, SpecflowError
from specflow.export.function_call import FunctionCall
from specflow.export.object_graph import ArgSpec, decode, map_structure
from specflow.graph.dtypes import dtype_of
from specflow.graph.graph_def import GraphDef
from specflow.graph.shapes import Shape

_CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


class _Concrete:
    """One concrete function: its decoded signature, output structure and call (built lazily)."""

    def __init__(self, name: str, saved, captures):
        self.name = name
        self._saved = saved  # its SavedConcreteFunction
        self._captures = captures  # () -> node id -> graph node name (read once, on first use)
        self._call: FunctionCall | None = None
        self._taped: TapedSignature | None = None
        structured = decode(saved.canonicalized_input_signature)
        if not (isinstance(structured, tuple) and len(structured) == 2 and isinstance(structured[1], dict)):
            raise ExportError(f"function '{name}' has no ((args...), {{kwargs}}) input signature")
        self.args, self.kwargs = tuple(structured[0]), structured[1]
        self.outputs = decode(saved.output_signature)
        self.leaves = [leaf for leaf in flatten((self.args, self.kwargs))[0] if isinstance(leaf, ArgSpec)]

    def accepts(self, args: tuple, kwargs: dict, convert: bool) -> list | None:
        """The tensor arguments, flat in the function's order, if this function takes the call."""
        flat: list[np.ndarray] = []
        return flat if _match((self.args, self.kwargs), (args, kwargs), convert, flat) else None

    def run(self, model, flat: list, variables: dict):
        """``flat``: the tensor arguments (arrays, or sf.Tensors under a tape or in a trace)."""
        call = self._function_call(model)
        specs = [leaf.spec for leaf in flatten(self.outputs)[0] if isinstance(leaf, ArgSpec)]
        taped = self._taped_call(call, model, variables, specs)
        if taped.applies(None):  # op by op: a recording tape sees the ops, a trace takes them in
            aliases = [f"input_{i}" for i in range(len(flat))]

            def run(feeds: dict) -> dict:  # a call with loops, eagerly: through the Session
                return {f"output_{k}": v for k, v in enumerate(call([feeds[a] for a in aliases]))}

            out = taped(dict(zip(aliases, flat)), run)
            got = [out[f"output_{k}"] for k in range(len(specs))]
        else:
            got = call([np.asarray(v.numpy()) if hasattr(v, "numpy") else v for v in flat])
            if len(got) != len(specs):
                raise ExportError(f"function '{self.name}' returns {len(got)} tensor(s), which its saved output "
                                  "signature does not describe (corrupted SavedModel?)")
            got = [EagerTensor(v, spec.dtype, _CPU0) for v, spec in zip(got, specs)]
        values = iter(got)
        # a Python value the function returned comes back as it was
        return map_structure(self.outputs, lambda spec: next(values) if isinstance(spec, ArgSpec) else spec)

    def _function_call(self, model) -> FunctionCall:
        if self._call is None:
            nodes = self._captures()
            missing = [i for i in self._saved.bound_inputs if i not in nodes]
            if missing:
                raise ExportError(f"function '{self.name}' captures object {missing[0]} of the SavedModel, which "
                                  "is not a variable or constant specflow can bind")
            self._call = FunctionCall(model, self.name, [nodes[i] for i in self._saved.bound_inputs],
                                      [leaf.spec.shape for leaf in self.leaves])
        return self._call

    def _taped_call(self, call: FunctionCall, model, variables: dict, specs: list) -> TapedSignature:
        """The call's graph as a TapedSignature (built on first use): run op by op under a
        recording GradientTape, as TensorFlow's restored functions are differentiable, and
        joining an sf.function's trace; its call node a target, so an assignment the outputs do
        not depend on runs too."""
        if self._taped is None:
            feeds, fetches, target, added = call.build()
            if len(fetches) != len(specs):
                raise ExportError(f"function '{self.name}' returns {len(fetches)} tensor(s), which its saved "
                                  "output signature does not describe (corrupted SavedModel?)")
            graph = GraphDef(model.graph_def.nodes + added.nodes)
            inputs = {f"input_{i}": (f, leaf.spec) for i, (f, leaf) in enumerate(zip(feeds, self.leaves))}
            outputs = {f"output_{k}": (f, spec) for k, (f, spec) in enumerate(zip(fetches, specs))}
            self._taped = TapedSignature(self.name, graph, inputs, outputs, variables, targets=(target,))
        return self._taped


class RestoredFunction:
    """A saved tf.function: called with positional and keyword arguments (arrays, sf.Tensors,
    Python values), it runs the first of its concrete functions that accepts them."""

    def __init__(self, name: str, model, concretes: list[_Concrete], params: list[str],
                 defaults: dict | None = None, kwonly: list[str] | None = None, varargs: bool = False,
                 varkw: bool = False, variables: dict | None = None):
        self.name = name
        self._model = model
        self._variables = variables or {}  # shared_name -> sf.Variable: what the graph's handles are
        self.concrete_functions = concretes
        self.params = params
        self._defaults = defaults or {}
        self._kwonly = kwonly or []
        self._varargs, self._varkw = varargs, varkw

    def __call__(self, *args, **kwargs):
        bound_args, bound_kwargs = self._bind(args, kwargs)
        chosen = self._choose(bound_args, bound_kwargs)
        if chosen is not None:
            return chosen[0].run(self._model, chosen[1], self._variables)
        got = self._text(bound_args, bound_kwargs, _describe_value)
        have = "; ".join(f"{self.name}({self._text(c.args, c.kwargs, _describe)})"
                         for c in self.concrete_functions) or "none"
        raise ExportError(f"function '{self.name}' has no concrete function for ({got}); it was saved for: {have}")

    def _text(self, args: tuple, kwargs: dict, show) -> str:
        """``x: float32[2], training=False``: each argument by its parameter's name where known,
        a tensor with its dtype and shape, a Python value as itself."""
        names = list(self.params) + [None] * max(0, len(args) - len(self.params))
        parts = [(names[i], a) for i, a in enumerate(args)] + list(kwargs.items())
        return ", ".join(show(v) if name is None else f"{name}{show(v, named=True)}" for name, v in parts)

    def accepts(self, args: tuple, kwargs: dict) -> bool:
        """Whether a call with these arguments has a concrete function to run."""
        try:
            return self._choose(*self._bind(args, kwargs)) is not None
        except ExportError:
            return False

    def _choose(self, args: tuple, kwargs: dict) -> tuple[_Concrete, list] | None:
        for convert in (False, True):  # arrays and tensors as they are first, as TF's loaded functions
            for c in self.concrete_functions:
                flat = c.accepts(args, kwargs, convert)
                if flat is not None:
                    return c, flat
        return None

    def _bind(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """(positional, keyword) as the function's structured signature lists a call: every named
        parameter positional, defaults filled in; keyword-only ones (and ``**kwargs``) by name."""
        n = len(self.params)
        if len(args) > n and not self._varargs:
            raise ExportError(f"function '{self.name}' takes {n} positional argument(s) "
                              f"({', '.join(self.params)}), got {len(args)}")
        given = dict(kwargs)
        bound = list(args[:n])
        for p in self.params[:len(bound)]:
            if p in given:
                raise ExportError(f"function '{self.name}': argument '{p}' given twice")
        for p in self.params[len(bound):]:
            if p in given:
                bound.append(given.pop(p))
            elif p in self._defaults:
                bound.append(self._defaults[p])
            else:
                raise ExportError(f"function '{self.name}' needs argument '{p}' ({', '.join(self.params)})")
        named = {}
        for p in self._kwonly:
            if p in given:
                named[p] = given.pop(p)
            elif p in self._defaults:
                named[p] = self._defaults[p]
            else:
                raise ExportError(f"function '{self.name}' needs keyword argument '{p}'")
        if given and not self._varkw:
            raise ExportError(f"function '{self.name}' has no argument '{next(iter(given))}' "
                              f"(arguments: {', '.join(self.params + self._kwonly) or 'none'})")
        named.update(given)
        return tuple(bound) + tuple(args[n:]), named

    def __repr__(self) -> str:
        n = len(self.concrete_functions)
        return f"<restored function '{self.name}({', '.join(self.params)})': {n} concrete function(s)>"


# --- building them from the object graph ------------------------------------------------------------


def restored_functions(model, variables: dict | None = None) -> dict[str, RestoredFunction]:
    """Every saved function reachable from the root through objects' attributes (identifier names;
    the ``signatures`` map and a function's own traces left out), by dotted path (``sub.f``).
    ``variables``: every variable of the model's session by shared name (sf.Variables)."""
    meta_graph = model.meta_graph
    if meta_graph is None or not meta_graph.object_graph_def.nodes:
        return {}
    graph = meta_graph.object_graph_def
    captures = _CaptureNodes(model)
    out: dict[str, RestoredFunction] = {}
    seen = {0}
    todo = [(0, "")]
    while todo:  # breadth first: a function reachable by two paths is named by the shorter
        next_level = []
        for node_id, path in todo:
            for child in graph.nodes[node_id].children:
                if child.node_id in seen or not child.local_name.isidentifier():
                    continue
                if node_id == 0 and child.local_name == "signatures":
                    continue
                seen.add(child.node_id)
                node = graph.nodes[child.node_id]
                kind = node.WhichOneof("kind")
                where = f"{path}.{child.local_name}" if path else child.local_name
                if kind == "user_object":
                    next_level.append((child.node_id, where))
                elif kind in ("function", "bare_concrete_function"):
                    fn = _restored(child.local_name, node, graph, model, captures, variables)
                    if fn is not None:
                        out[where] = fn
        todo = next_level
    return out


def _restored(name: str, node, graph, model, captures, variables) -> RestoredFunction | None:
    """The node as a RestoredFunction; None when its signatures hold what specflow cannot decode
    (a RaggedTensorSpec) or it has no concrete function."""
    try:
        if node.WhichOneof("kind") == "bare_concrete_function":
            bare = node.bare_concrete_function
            c = _Concrete(bare.concrete_function_name, graph.concrete_functions[bare.concrete_function_name],
                          captures)
            keywords = list(bare.argument_keywords)
            if c.kwargs or len(c.args) != len(keywords):
                return None  # a signature-style function (keyword arguments only): sf.load's signatures
            return RestoredFunction(name, model, [c], keywords, variables=variables)
        names = [n for n in node.function.concrete_functions if n in graph.concrete_functions]
        concretes = [_Concrete(n, graph.concrete_functions[n], captures) for n in names]
    except SpecflowError:  # a signature specflow cannot read: the function is left out
        return None
    if not concretes:
        return None
    spec = _fields(node.function.function_spec.fullargspec)
    params = list(spec.get("args") or [])
    if node.function.function_spec.is_method and params:
        params = params[1:]
    defaults = spec.get("defaults") or ()
    named_defaults = dict(zip(params[len(params) - len(defaults):], defaults)) if defaults else {}
    named_defaults.update(spec.get("kwonlydefaults") or {})
    if not params and not spec:  # no FunctionSpec: the first trace's argument names
        params = [(a.name if isinstance(a, ArgSpec) else None) or f"arg_{i}" for i, a in enumerate(concretes[0].args)]
    return RestoredFunction(name, model, concretes, params, named_defaults, list(spec.get("kwonlyargs") or []),
                            spec.get("varargs") is not None, spec.get("varkw") is not None, variables)


def _fields(structured) -> dict:
    """A FullArgSpec (a StructuredValue named tuple) as field -> decoded value."""
    if structured.WhichOneof("kind") != "named_tuple_value":
        return {}
    return {pair.key: decode(pair.value) for pair in structured.named_tuple_value.values}


class _CaptureNodes:
    """Object-graph node id -> the graph node a function's captured input reads (a variable's
    VarHandleOp, a constant's Const), found once, on the first call of any restored function.

    A variable is found by its checkpoint key: the variables bundle's object graph gives each
    saved object's key, and the SavedModel's restore function assigns that key to the variable's
    VarHandleOp (the node the signatures read)."""

    def __init__(self, model):
        self._model = model
        self._nodes: dict[int, str] | None = None
        self._lock = threading.Lock()

    def __call__(self) -> dict[int, str]:
        with self._lock:
            if self._nodes is None:
                self._nodes = self._find()
            return self._nodes

    def _find(self) -> dict[int, str]:
        return self._model.object_handles()


# --- structures ----------------------------------------------------------------------------------------


def _match(expected, value, convert: bool, flat: list) -> bool:
    """Whether ``value`` fits the structured signature ``expected``, appending its tensors to
    ``flat`` (in ``flatten``'s order)."""
    if isinstance(expected, ArgSpec):
        arr = _as_array(value, expected, convert)
        if arr is None:
            return False
        flat.append(arr)
        return True
    if isinstance(expected, dict):
        return (isinstance(value, dict) and set(value) == set(expected)
                and all(_match(expected[k], value[k], convert, flat) for k in sorted(expected)))
    if isinstance(expected, (list, tuple)):
        return (isinstance(value, (list, tuple)) and len(value) == len(expected)
                and all(_match(e, v, convert, flat) for e, v in zip(expected, value)))
    if isinstance(value, (Tensor, np.ndarray, np.generic)):
        return False  # a Python value the function was traced with matches only an equal Python value
    try:
        return bool(value == expected)
    except (TypeError, ValueError):
        return False


def _as_array(value, expected: ArgSpec, convert: bool):
    """``value`` as what is fed for a tensor argument of ``expected``'s spec, or None if it does
    not fit: an sf.Tensor or sf.Variable of the same dtype (as itself: a tape or a trace takes it) or an array of
    that dtype; with ``convert``, also Python numbers (and lists of them) where the dtype can
    hold them."""
    want = expected.spec.dtype
    if isinstance(value, Tensor):
        ok = value.dtype == want and expected.spec.shape.is_compatible_with(value.shape)
        return value if ok else None
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
    elif convert and not isinstance(value, dict):
        arr = _convert(value, want)
        if arr is None:
            return None
    else:
        return None
    if want.name == "string":
        if arr.dtype.kind not in "OSU":
            return None
    elif arr.dtype.kind in "OSUV" or dtype_of(arr) != want:
        return None
    if not expected.spec.shape.is_compatible_with(Shape(arr.shape)):
        return None
    return arr


def _convert(value, want) -> np.ndarray | None:
    """Python numbers (or nested lists of them) as ``want``, where TensorFlow's conversion with
    that dtype hint would give it: bools only to bool, ints to any number type in range, floats
    to floats and complex. Anything else: None."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        return None
    kind = arr.dtype.kind
    if want.name == "string":
        return arr if kind in "SU" else None
    ok = (kind == "b" and want.is_bool) or (kind in "iu" and not want.is_bool) or (
        kind == "f" and (want.is_floating or want.is_complex)) or (kind == "c" and want.is_complex)
    if not ok:
        return None
    if want.is_integer and arr.size and (arr.min() < np.iinfo(want.numpy).min or arr.max() > np.iinfo(want.numpy).max):
        return None
    return arr.astype(want.numpy)


def _describe(leaf, named: bool = False) -> str:
    """A leaf of a saved signature: ``: float32[2]`` after a name (or ``float32[2]``), ``=False``."""
    if isinstance(leaf, ArgSpec):
        return f": {leaf.spec}" if named else str(leaf.spec)
    text = _structure_text(leaf, _describe)
    return f"={text}" if named else text


def _describe_value(value, named: bool = False) -> str:
    """An argument of a call, as _describe shows a signature's."""
    if isinstance(value, (Tensor, np.ndarray, np.generic)):
        if isinstance(value, Tensor):
            dtype, shape = value.dtype.name, value.shape
        else:
            arr = np.asarray(value)
            dtype, shape = ("string" if arr.dtype.kind in "OSU" else arr.dtype.name), Shape(arr.shape)
        text = f"{dtype}{shape}"
        return f": {text}" if named else text
    text = _structure_text(value, _describe_value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"={text}" if named else text


def _structure_text(value, show) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(show(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    return repr(value)
