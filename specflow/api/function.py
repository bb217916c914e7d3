"""@sf.function: a Python function traced into a graph function, one concrete function per input
signature, each run through a Session (prune, optimize, place, partition, execute) whose plan is
cached, so a call after the first costs the feeds, the step and the wrapping of its results.

The trace key holds each tensor argument's dtype and shape, each variable argument's identity
and every other argument by value. A new key traces again (a ``RetracingWarning`` once a function
has traced ``RETRACE_WARNING`` times); ``input_signature`` fixes the one signature;
``reduce_retracing`` traces a signature seen with other shapes once more with those dims unknown.
Variables may be created only on the first trace; a concrete function holds its variables weakly.
"""

from __future__ import annotations

import functools
import inspect
import threading
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from specflow.api.context import STATE, config, dtype_of
from specflow.api.tensor import EagerTensor, GraphTensor, Tensor
from specflow.api.trace import Trace
from specflow.errors import GraphError
from specflow.graph.dtypes import DType, as_dtype
from specflow.graph.graph_def import GraphDef
from specflow.graph.shapes import Shape, as_shape

RETRACE_WARNING = 5
_SESSION_LOCK = threading.Lock()  # a concrete function's Session is made once (slow path only)


class RetracingWarning(UserWarning):
    """A function traced again and again (a new shape or Python value per call?)."""


@dataclass(frozen=True)
class TensorSpec:
    """``sf.TensorSpec(shape, dtype, name=None)``: one input of an ``input_signature``."""

    shape: Any = None
    dtype: Any = "float32"
    name: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", as_shape(self.shape))
        object.__setattr__(self, "dtype", as_dtype(self.dtype))

    def is_compatible_with(self, value) -> bool:
        return value.dtype == self.dtype and self.shape.is_compatible_with(value.shape)


# --- argument structure -----------------------------------------------------------------------------


def flatten(value) -> tuple[list, Any]:
    """The leaves of nested lists/tuples/dicts and the structure to put them back."""
    if getattr(type(value), "_sf_composite", False):  # sf.TensorArray: its list tensor(s)
        comps = value._sf_components()
        return list(comps), (type(value)._sf_rebuild, value._sf_meta(), tuple(None for _ in comps))
    if isinstance(value, (list, tuple)):  # a namedtuple too (TF's nest: an op's outputs, top_k's)
        parts = [flatten(v) for v in value]
        return [x for p in parts for x in p[0]], (type(value), tuple(p[1] for p in parts))
    if isinstance(value, dict):
        keys = sorted(value)
        parts = [flatten(value[k]) for k in keys]
        return [x for p in parts for x in p[0]], (dict, tuple(keys), tuple(p[1] for p in parts))
    return [value], None


def _count_leaves(structure) -> int:
    if structure is None:
        return 1
    return sum(_count_leaves(s) for s in structure[-1])


def unflatten(structure, leaves: list):
    it = iter(leaves)

    def build(s):
        if s is None:
            return next(it)
        if s[0] is dict:
            return {k: build(sub) for k, sub in zip(s[1], s[2])}
        if len(s) == 3:  # a composite: its rebuild, its metadata, its components
            return s[0](s[1], [build(sub) for sub in s[2]])
        if hasattr(s[0], "_fields"):
            return s[0](*[build(sub) for sub in s[1]])
        return s[0](build(sub) for sub in s[1])

    return build(structure)


def _is_tensor_like(v) -> bool:
    from specflow.api.variables import Variable

    return isinstance(v, (Tensor, np.ndarray)) and not isinstance(v, Variable)


def _flatten_as(spec, value, where: str) -> list:
    """``value``'s leaves where ``spec`` (an input_signature entry) has TensorSpecs, in flatten()'s
    order: a list where the spec has a TensorSpec is one leaf (a tensor's value)."""
    if isinstance(spec, TensorSpec):
        return [value]
    if isinstance(spec, dict):
        if not isinstance(value, dict) or set(value) != set(spec):
            raise GraphError(f"{where} must be a dict with keys {sorted(spec)}, as its input_signature says; got "
                             + (f"keys {sorted(value)}" if isinstance(value, dict) else type(value).__name__))
        return [x for k in sorted(spec) for x in _flatten_as(spec[k], value[k], f"{where}[{k!r}]")]
    if isinstance(spec, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(spec):
            raise GraphError(f"{where} must be a sequence of {len(spec)}, as its input_signature says")
        return [x for i, (s, v) in enumerate(zip(spec, value)) for x in _flatten_as(s, v, f"{where}[{i}]")]
    raise GraphError(f"{where}: input_signature entries are TensorSpecs (or lists/dicts of them), got {spec!r}")


def _describe(spec) -> str:
    if isinstance(spec, TensorSpec):
        return f"{spec.dtype.name}{spec.shape}"
    if isinstance(spec, dict):
        return "{" + ", ".join(f"{k}: {_describe(v)}" for k, v in spec.items()) + "}"
    if isinstance(spec, (list, tuple)):
        return "[" + ", ".join(_describe(v) for v in spec) + "]"
    return repr(spec)


def _numpy_scalar_as_array(v):
    """A numpy scalar (``np.float32(1.5)``) is a tensor, as in TensorFlow: traced once per dtype,
    not once per value as a Python number is."""
    return np.asarray(v) if isinstance(v, np.generic) and v.dtype.kind in "biufc" else v


def _leaf_key(v):
    from specflow.api.variables import Variable

    if isinstance(v, Variable):
        return ("V", v._uid)
    if isinstance(v, Tensor):
        return ("T", v.dtype, tuple(v.shape.dims or ()) if v.shape.rank is not None else None)
    if isinstance(v, np.ndarray):
        return ("T", dtype_of(v), v.shape)
    try:
        hash(v)
    except TypeError:
        return ("P", type(v).__name__, id(v))
    return ("P", type(v).__name__, v)


# --- concrete functions --------------------------------------------------------------------------------


class ConcreteFunction:
    """One traced graph: its inputs (Placeholders), outputs and the variables it uses. Calling it
    runs the graph in its Session (built on the first call; its plan cached after)."""

    def __init__(self, trace: Trace, outputs, name: str):
        self.name = name
        self.graph_def: GraphDef = trace.builder.graph_def
        self.inputs = [t.name for t in trace.inputs]
        self.input_specs = [(t.dtype, t.shape) for t in trace.inputs]
        leaves, self._structure = flatten(outputs)
        self._out: list = []  # per leaf: ("t", fetch index) or ("v", python value)
        self.outputs: list[str] = []
        self.output_specs: list[tuple[DType, Shape]] = []
        for leaf in leaves:
            if hasattr(leaf, "_read") and not isinstance(leaf, GraphTensor):  # a Variable returned
                with trace.active():
                    leaf = leaf._read(trace)
            if isinstance(leaf, EagerTensor):
                leaf = trace.capture(leaf)
            if isinstance(leaf, GraphTensor):
                if leaf.trace is not trace:
                    raise GraphError(f"function '{name}' returns tensor '{leaf.name}' of another trace")
                self._out.append(("t", len(self.outputs)))
                self.outputs.append(leaf.name)
                self.output_specs.append((leaf.dtype, leaf.shape))
            else:
                self._out.append(("v", leaf))
        _check_outside_loops(self.graph_def, self.outputs, name)
        self.target = trace.last_effect
        self.variables = dict(trace.variables)  # uid -> (weakref, handle node)
        self._tables = list(trace.table_objects)  # sf.lookup tables it reads (one made while tracing lives on)
        self._fetches = list(self.outputs)
        self._targets = self.target
        self._session = None
        self._feed_names = list(self.inputs)
        self.arg_names: list[str] = []  # a name per argument leaf (set by the tracing Function)
        self.call_structure: tuple | None = None  # (structure, leaves): set by the tracing Function

    @property
    def session(self):
        if self._session is not None:
            return self._session
        with _SESSION_LOCK:  # threads calling a new concrete function at once make one Session
            if self._session is not None:
                return self._session
            from specflow.runtime.session import Session, SessionConfig

            devices = devices_needed(self.graph_def)
            session = Session(self.graph_def, SessionConfig(devices=devices))
            for ref, _ in self.variables.values():
                var = ref()
                if var is not None:
                    for d in session.devices:
                        var._register(d.resource_mgr)
            self._session = session
        return self._session

    def _check_variables(self) -> None:
        for uid, (ref, _) in self.variables.items():
            if ref() is None:
                raise GraphError(f"function '{self.name}' uses variable '{uid}', which was deleted (a function "
                                 "holds its variables weakly: keep a reference, e.g. on a Module)")

    def __call__(self, *args, **kwargs):
        rest = self.arg_names[len(args):]
        if kwargs and set(kwargs) <= set(rest):  # keywords by parameter name, in the trace's order
            leaves = list(args) + [kwargs[n] for n in rest if n in kwargs]
        else:
            leaves = list(args) + [kwargs[k] for k in sorted(kwargs)]
        leaves = [_numpy_scalar_as_array(v) for v in flatten(leaves)[0]]
        return self.call_flat([v for v in leaves if _is_tensor_like(v)])

    def call_flat(self, values: list):
        if len(values) != len(self.inputs):
            raise GraphError(f"function '{self.name}' takes {len(self.inputs)} tensor input(s), got {len(values)}")
        if self.variables:
            self._check_variables()
        feeds = {}
        for name, v in zip(self._feed_names, values):
            feeds[name] = v if type(v) is np.ndarray else (np.asarray(v) if isinstance(v, Tensor) else v)
        session = self._session or self.session
        values = session.run(self._fetches, feeds, self._targets) if self._fetches or self._targets else []
        out = []
        dev = "/job:localhost/replica:0/task:0/device:CPU:0"
        for kind, x in self._out:
            if kind == "t":
                v = values[x]
                out.append(EagerTensor(v, self.output_specs[x][0], dev))
            else:
                out.append(x)
        return unflatten(self._structure, out)


def devices_needed(graph: GraphDef) -> str:
    """The local device counts (``"cpu:2"``) covering every device the graph's nodes name."""
    from specflow.graph.device_spec import DeviceSpec

    counts = {"CPU": 1, "GPU": 0}
    for node in graph.nodes:
        if node.device:
            spec = DeviceSpec.parse(node.device)
            kind = spec.device_type or "CPU"
            counts[kind] = max(counts.get(kind, 0), (spec.device_index or 0) + 1)
    return f"cpu:{counts['CPU']}" + (f",gpu:{counts['GPU']}" if counts["GPU"] else "")


def _check_outside_loops(graph_def: GraphDef, outputs: list[str], name: str) -> None:
    """A value made inside a while loop leaves it only as a loop variable: one returned from
    inside (a Python list appended to in a loop on a tensor) is an error here, not at run time."""
    if not any(n.op == "Enter" for n in graph_def.nodes):
        return
    from specflow.graph.control_flow import loop_frames
    from specflow.graph.graph_def import parse_input

    frames = loop_frames(graph_def)
    for out in outputs:
        inside = frames.get(parse_input(out).node)
        if inside:
            raise GraphError(f"function '{name}' returns '{out}', a value made inside while loop '{inside[-1]}' that "
                             "is not one of its loop variables (a Python list appended to in a loop on a tensor?): "
                             "carry it as a loop variable, or collect values with sf.TensorArray")


# --- sf.function -----------------------------------------------------------------------------------------


class Function:
    def __init__(self, fn, input_signature=None, reduce_retracing: bool = False, name: str | None = None,
                 autograph: bool = True):
        self.python_function = fn
        self.autograph = autograph
        self.name = name or getattr(fn, "__name__", "function")
        self.input_signature = None if input_signature is None else list(input_signature)
        self.reduce_retracing = reduce_retracing
        self._cache: dict[tuple, ConcreteFunction] = {}
        self._relaxed: dict[tuple, ConcreteFunction] = {}  # reduce_retracing: by dtype/rank key
        self._fast: dict[tuple, ConcreteFunction] = {}  # see __call__
        self.trace_count = 0
        # Held while looking up or tracing a concrete function (not on the fast path): a trace
        # runs Python code that may create variables, so it happens once per signature. Reentrant:
        # a function may call itself (or get_concrete_function) while tracing.
        self._lock = threading.RLock()
        functools.update_wrapper(self, fn)

    def __get__(self, instance, owner):
        """As a method: one Function per instance (its traces capture that instance's variables)."""
        if instance is None:
            return self
        key = f"_sf_function_{self.name}_{id(self)}"
        bound = instance.__dict__.get(key)
        if bound is None:
            bound = Function(functools.partial(self.python_function, instance), self.input_signature,
                             self.reduce_retracing, self.name, self.autograph)
            bound = instance.__dict__.setdefault(key, bound)  # atomic: threads share one
        return bound

    def __call__(self, *args, **kwargs):
        if config.functions_run_eagerly or STATE.trace is not None or STATE.tapes:
            # Debugging; called from another function's trace (its ops join that trace); or under
            # a recording GradientTape, which must see the ops to differentiate them. The
            # input_signature still binds and converts the arguments.
            if self.input_signature is not None:
                _, structure, converted = self._bind_signature(args, kwargs)
                args, kwargs = unflatten(structure, converted)
            fn = self._traced_function() if STATE.trace is not None else self.python_function
            return fn(*args, **kwargs)
        # The hot path of a training loop: positional arrays/tensors only, a signature seen before.
        fast = None if kwargs else _fast_key(args)
        if fast is not None:
            concrete = self._fast.get(fast)
            if concrete is not None:
                return concrete.call_flat(args)
        with self._lock:  # threads calling with a new signature at once trace it once
            concrete, tensors = self._concrete(args, kwargs)
        if fast is not None and len(tensors) == len(args) and all(t is a for t, a in zip(tensors, args)):
            self._fast[fast] = concrete
        return concrete.call_flat(tensors)

    def get_concrete_function(self, *args, **kwargs) -> ConcreteFunction:
        """The concrete function for these arguments (TensorSpecs stand for tensors), traced if new;
        with an input_signature, no arguments mean the signature's."""
        if not args and not kwargs and self.input_signature is not None:
            args = tuple(self.input_signature)
        with self._lock:
            return self._concrete(args, kwargs)[0]

    @property
    def concrete_functions(self) -> list[ConcreteFunction]:
        return list(dict.fromkeys(list(self._cache.values()) + list(self._relaxed.values())))

    def _concrete(self, args, kwargs) -> tuple[ConcreteFunction, list]:
        if self.input_signature is not None:
            return self._signature_call(args, kwargs)
        leaves, structure = flatten((list(args), kwargs))
        leaves = [_numpy_scalar_as_array(v) for v in leaves]
        key = (structure, tuple(_leaf_key(v) for v in leaves))
        tensors = [v for v in leaves if _is_tensor_like(v) or isinstance(v, TensorSpec)]
        concrete = self._cache.get(key)
        if concrete is not None:
            return concrete, tensors
        specs = [_spec_of(v) for v in leaves]
        if self.reduce_retracing:
            rkey = (structure, tuple(_relaxed_key(v) for v in leaves))
            prev = self._relaxed.get(rkey)
            if prev is not None and _fits(prev, tensors):
                self._cache[key] = prev
                return prev, tensors
            if prev is not None:  # seen with other shapes: generalize what differs
                specs = _relax(specs, prev)
            concrete = self._trace(leaves, structure, specs)
            self._relaxed[rkey] = concrete
        else:
            concrete = self._trace(leaves, structure, specs)
        self._cache[key] = concrete
        return concrete, tensors

    def _signature_call(self, args, kwargs) -> tuple[ConcreteFunction, list]:
        """The one concrete function of an input_signature, and the arguments as its inputs."""
        spec_leaves, spec_structure, converted = self._bind_signature(args, kwargs)
        concrete = self._cache.get(())
        if concrete is None:
            concrete = self._cache[()] = self._trace(spec_leaves, spec_structure, list(spec_leaves))
        return concrete, converted

    def _bind_signature(self, args, kwargs) -> tuple[list, Any, list]:
        """The input_signature's leaves and structure, and the arguments as its tensors: bound to
        the parameters by position or keyword (as TensorFlow binds them), nested as the signature
        is, Python values and arrays converted to the specs' dtypes."""
        sig = self.input_signature
        try:
            bound = inspect.signature(self.python_function).bind(*args, **kwargs)
        except TypeError as e:
            raise GraphError(f"function '{self.name}': {e}") from None
        except ValueError:  # no Python signature to bind to: positional only
            bound = None
        if bound is not None:
            args = tuple(bound.args) + tuple(bound.kwargs.values())  # in the parameters' order
        elif kwargs:
            raise GraphError(f"function '{self.name}' has an input_signature: pass its arguments by position")
        if len(args) != len(sig):
            raise GraphError(f"function '{self.name}' takes {len(sig)} argument(s) as its input_signature "
                             f"says ({', '.join(_describe(s) for s in sig)}); called with {len(args)}")
        spec_leaves, spec_structure = flatten((list(sig), {}))
        leaves = []
        for i, (spec, value) in enumerate(zip(sig, args)):
            leaves += _flatten_as(spec, value, f"function '{self.name}': argument {i}")
        leaves = [_numpy_scalar_as_array(v) for v in leaves]
        from specflow.api.op_functions import to_tensor
        from specflow.api.variables import Variable

        converted = []
        for i, (v, s) in enumerate(zip(leaves, spec_leaves)):
            if not isinstance(v, TensorSpec):
                if isinstance(v, Variable):
                    v = v.read_value()
                if not isinstance(v, Tensor):
                    v = to_tensor(v, s.dtype, f"argument {i} of '{self.name}'")
                if not s.is_compatible_with(v):
                    raise GraphError(f"function '{self.name}': argument {i} ({v.dtype.name}{v.shape}) does not match "
                                     f"its input_signature {s.dtype.name}{s.shape}")
            converted.append(v)
        return spec_leaves, spec_structure, converted

    def _traced_function(self):
        """What a trace runs: the Python function with AutoGraph's conversion (api/autograph.py)."""
        if not self.autograph:
            return self.python_function
        from specflow.api.autograph import convert, convertible_callee

        fn = self.python_function
        inner = fn.func if isinstance(fn, functools.partial) else fn
        if not convertible_callee(inner):  # specflow's own functions (Keras steps) are written for the graph
            return fn
        if isinstance(fn, functools.partial):
            return functools.partial(convert(fn.func), *fn.args, **fn.keywords)
        return convert(fn)

    def _leaf_names(self, structure, n: int) -> list[str]:
        """A name per argument leaf (the inputs' Placeholders, a saved signature's input aliases):
        the parameter's name, ``name_k`` inside a nested argument, a keyword's key."""
        params = _param_names(self.python_function)
        (_, (pos, kw)) = structure
        names: list[str] = []
        for j, sub in enumerate(pos[1]):
            base = params[j] if j < len(params) else f"arg{j}"
            k = _count_leaves(sub)
            names.extend([base] if sub is None else [f"{base}_{i}" for i in range(k)])
        for key, sub in zip(kw[1], kw[2]):
            k = _count_leaves(sub)
            names.extend([str(key)] if sub is None else [f"{key}_{i}" for i in range(k)])
        return names if len(names) == n else [f"arg{i}" for i in range(n)]

    def _trace(self, leaves, structure, specs) -> ConcreteFunction:
        self.trace_count += 1
        if self.trace_count == RETRACE_WARNING:
            warnings.warn(f"sf.function '{self.name}' has been traced {self.trace_count} times: each new input "
                          "shape, dtype or Python value traces again; pass tensors rather than Python numbers, "
                          "or use input_signature= / reduce_retracing=True", RetracingWarning, stacklevel=4)
        # Variables only while no trace has succeeded yet (a first trace that failed does not count).
        trace = Trace(self.name, allow_variables=not self._cache and not self._relaxed)
        names = self._leaf_names(structure, len(leaves))
        with trace.active():
            args = []
            for v, spec, name in zip(leaves, specs, names):
                if spec is None:
                    args.append(v)
                else:
                    args.append(trace.placeholder(spec.name or name, spec.dtype, spec.shape))
            call_args, call_kwargs = unflatten(structure, args)
            outputs = self._traced_function()(*call_args, **call_kwargs)
            concrete = ConcreteFunction(trace, outputs, self.name)
        concrete.arg_names = names
        # the call it answers, for sf.save's object graph: tensors by spec, other leaves by value
        concrete.call_structure = (structure, [v if spec is None else spec for v, spec in zip(leaves, specs)])
        return concrete


def _param_names(fn) -> list[str]:
    try:
        return [p.name for p in inspect.signature(fn).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    except (TypeError, ValueError):
        return []


def _fast_key(args: tuple) -> tuple | None:
    """(dtype, shape) per argument when every one is a numpy array or eager tensor, else None."""
    key = []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            key.append((a.dtype, a.shape))
        elif t is EagerTensor:
            key.append((a.dtype, a.value.shape))
        else:
            return None
    return tuple(key)


def _spec_of(v) -> TensorSpec | None:
    if isinstance(v, TensorSpec):
        return v
    if _is_tensor_like(v):
        dt = v.dtype if isinstance(v, Tensor) else dtype_of(v)
        return TensorSpec(Shape(v.shape) if isinstance(v, np.ndarray) else v.shape, dt)
    return None


def _relaxed_key(v):
    k = _leaf_key(v)
    if k[0] == "T":
        return ("T", k[1], None if k[2] is None else len(k[2]))
    return k


def _fits(concrete: ConcreteFunction, tensors: list) -> bool:
    return all(s.is_compatible_with(Shape(v.shape) if isinstance(v, np.ndarray) else v.shape)
               for (_, s), v in zip(concrete.input_specs, tensors))


def _relax(specs: list, prev: ConcreteFunction) -> list:
    out, it = [], iter(prev.input_specs)
    for s in specs:
        if s is None:
            out.append(None)
            continue
        _, old = next(it)
        dims = [a if a == b else None for a, b in zip(s.shape.dims, old.dims)]
        out.append(TensorSpec(Shape(dims), s.dtype, s.name))
    return out


def function(fn=None, input_signature=None, autograph: bool = True, jit_compile=None, reduce_retracing: bool = False,
             experimental_relax_shapes: bool | None = None, name: str | None = None):
    """``@sf.function`` (or ``sf.function(fn, input_signature=[...])``), with TensorFlow's
    parameters: ``autograph`` (default on) converts Python ``if``/``while``/``for`` on tensors
    into sf.cond/sf.while_loop (api/autograph.py); ``jit_compile`` is accepted as a hint (there
    is no XLA here); ``experimental_relax_shapes`` is the old name of ``reduce_retracing``."""
    if experimental_relax_shapes is not None:
        reduce_retracing = reduce_retracing or bool(experimental_relax_shapes)
    if fn is None:
        return lambda f: Function(f, input_signature, reduce_retracing, name, autograph)
    return Function(fn, input_signature, reduce_retracing, name, autograph)
