"""``sf.custom_gradient``: a function that gives its own gradient, as ``tf.custom_gradient``.

``f(*args)`` returns ``(y, grad_fn)``; ``grad_fn(*dys)`` returns one gradient per tensor argument
(a single one for a single argument). When ``f`` reads variables, ``grad_fn`` takes them as
``variables=`` and returns ``(input_gradients, variable_gradients)``.

As in TensorFlow, ``y`` passes through one IdentityN with the arguments (and the variables'
reads) beside it, whose ``_gradient_op_type`` attr names ``grad_fn`` in
``train/gradients.OVERRIDES``: the gradient reaching ``y`` goes to ``grad_fn``, and none flows
back through ``f``'s own ops. Eagerly the tapes record ``f``'s ops and then that IdentityN; when
a tape replays them, ``grad_fn`` runs on the replay graph's tensors (a Trace over the tape's
builder), so outer tapes differentiate its ops again (second derivatives, as in TensorFlow). Inside sf.function the
IdentityN joins the trace and ``grad_fn`` is traced where the gradient is built. An override
lives as long as the tensors (or the trace) that can still reach it.
"""

from __future__ import annotations

import functools
import itertools
import weakref

import numpy as np

from specflow.api.context import STATE
from specflow.api.control_flow import _as_graph
from specflow.api.function import flatten, unflatten
from specflow.api.op_functions import convert_to_tensor
from specflow.api.tensor import EagerTensor, Tensor
from specflow.api.trace import Trace
from specflow.errors import GraphError
from specflow.train.gradients import OVERRIDES

_KEYS = itertools.count()


def custom_gradient(f=None):
    """Decorator: ``f`` returns ``(y, grad_fn)``; gradients of ``y`` go through ``grad_fn``."""
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        if STATE.trace is not None:
            return _traced(f, args, kwargs)
        return _eager(f, args, kwargs)

    return wrapped


def _differentiable(a) -> bool:
    """An argument that gets a gradient: a tensor, a variable, an array or a Python number (as
    TensorFlow converts them); anything else (``self``, a flag object) is passed to ``f`` only."""
    return isinstance(a, (Tensor, np.ndarray, np.generic, float, int)) and not isinstance(a, bool)


class _Reads:
    """Stands in STATE.tapes while ``f`` runs eagerly: records nothing, notes the variables read."""

    _recording = True

    def __init__(self) -> None:
        self.variables: dict[str, object] = {}

    def _record(self, *args) -> None:
        pass

    def _record_read(self, var, t) -> None:
        self.variables.setdefault(var._uid, var)


def _eager(f, args, kwargs):
    reads = _Reads()
    saved, STATE.tapes = STATE.tapes, [*STATE.tapes, reads]
    try:  # the tapes record f's ops too (as TF's): grad_fn's use of them is differentiable again
        y, grad_fn = f(*args, **kwargs)
    finally:
        STATE.tapes = saved
    tapes = [t for t in STATE.tapes if t._recording]
    if not tapes:
        return y
    variables = list(reads.variables.values())
    _check_signature(f, grad_fn, variables)
    from specflow.api.variables import Variable

    inputs = [a._read() if isinstance(a, Variable) else a if isinstance(a, Tensor) else convert_to_tensor(a)
              for a in flatten(list(args))[0] if _differentiable(a)]  # fmt: skip
    ys, structure = flatten(y)
    ys = [convert_to_tensor(t) if not isinstance(t, Tensor) else t for t in ys]
    flat = ys + inputs + [v._read() for v in variables]  # the reads: the tapes see them
    outs = [EagerTensor(t.value, t.dtype, t.device) for t in flat]
    key = _register(grad_fn, len(ys), len(inputs), variables, f)
    attrs = {"T": [t.dtype for t in flat], "_gradient_op_type": key}
    for tape in STATE.tapes:
        if tape._recording:
            tape._record("IdentityN", attrs, flat, outs)
    weakref.finalize(outs[0], OVERRIDES.pop, key, None)
    return unflatten(structure, outs[: len(ys)])


def _traced(f, args, kwargs):
    trace = STATE.trace
    used: dict[str, object] = {}
    handle = trace.variable_handle

    def spy(var):  # every read in a trace asks for the variable's handle
        used.setdefault(var._uid, var)
        return handle(var)

    trace.variable_handle = spy
    try:
        y, grad_fn = f(*args, **kwargs)
    finally:
        del trace.variable_handle
    variables = list(used.values())
    _check_signature(f, grad_fn, variables)
    from specflow.api.variables import Variable

    with trace.active():
        inputs = [a._read(trace) if isinstance(a, Variable) else _as_graph(trace, a)
                  for a in flatten(list(args))[0] if _differentiable(a)]  # fmt: skip
        ys, structure = flatten(y)
        ys = [_as_graph(trace, t) for t in ys]
        flat = ys + inputs + [v._read(trace) for v in variables]
        key = _register(grad_fn, len(ys), len(inputs), variables, f)
        b = trace.builder
        node = b.add_op("IdentityN", [t.name for t in flat], {"T": [t.dtype for t in flat], "_gradient_op_type": key},
                        name=b.unique_name("CustomGradient"), exact_name=True)
        weakref.finalize(trace, OVERRIDES.pop, key, None)
        return unflatten(structure, [trace._tensor(node.name if k == 0 else f"{node.name}:{k}")
                                     for k in range(len(ys))])  # fmt: skip


def _check_signature(f, grad_fn, variables) -> None:
    if not callable(grad_fn):
        raise TypeError(f"custom_gradient: {f.__name__} must return (y, grad_fn), got a {type(grad_fn).__name__} "
                        "as grad_fn")
    if variables and not _takes_variables(grad_fn):
        names = ", ".join(v.name for v in variables)
        raise TypeError(f"custom_gradient: {f.__name__} reads variables ({names}), so its grad_fn must take a "
                        "keyword argument 'variables' and return (input_gradients, variable_gradients)")


def _takes_variables(fn) -> bool:
    import inspect

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True
    return "variables" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _register(grad_fn, n_y: int, n_inputs: int, variables: list, f) -> str:
    key = f"CustomGradient-{next(_KEYS)}"
    OVERRIDES[key] = _gradient(grad_fn, n_y, n_inputs, variables, getattr(f, "__name__", "f"))
    return key


def _gradient(grad_fn, n_y: int, n_inputs: int, variables: list, fname: str):
    """The IdentityN's gradient function: ``grad_fn`` on its outputs' gradients, traced into the
    builder the gradient is being built in."""

    def fn(b, node, dys):
        trace = STATE.trace if STATE.trace is not None and STATE.trace.builder is b else _replay_trace(b)
        with trace.active():
            dy = [trace._tensor(d) for d in dys[:n_y]]
            if variables:
                got = grad_fn(*dy, variables=variables)
                if not (isinstance(got, (list, tuple)) and len(got) == 2):
                    raise GraphError(f"custom_gradient: {fname}'s grad_fn takes variables, so it must return "
                                     "(input_gradients, variable_gradients)")
                input_grads, var_grads = got
                var_grads = list(var_grads)
            else:
                input_grads, var_grads = grad_fn(*dy), []
            input_grads = list(input_grads) if isinstance(input_grads, (list, tuple)) else [input_grads]
            if len(input_grads) != n_inputs or len(var_grads) != len(variables):
                raise GraphError(f"custom_gradient: {fname}'s grad_fn returned {len(input_grads)} gradient(s) for "
                                 f"{n_inputs} argument(s)" + (f" and {len(var_grads)} for {len(variables)} variable(s)"
                                                               if variables else ""))
            names = [None if g is None else _as_graph(trace, g).name for g in input_grads + var_grads]
        return [None] * n_y + names

    return fn


class _ReplayTrace(Trace):
    """A Trace building into a tape's replay graph ``b``: an eager tensor grad_fn closes over is
    the replay's own node for it when the tape recorded it (so an outer tape sees grad_fn's ops
    read the very tensor), else a Const standing for it."""

    def __init__(self, b) -> None:
        super().__init__("custom_gradient")
        self.builder = b
        self._names, self._values = b.eager_replay  # id -> tensor name; name -> EagerTensor

    def capture(self, t: EagerTensor):
        name = self._names.get(id(t))
        if name is None:
            name = super().capture(t).name
            self._names[id(t)] = name
            self._values[name] = t
        return self._tensor(name)


def _replay_trace(b) -> Trace:
    return _ReplayTrace(b)
