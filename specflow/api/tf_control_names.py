"""TensorFlow's functional control flow and its helpers: ``sf.map_fn``, ``sf.scan``,
``sf.foldl``/``sf.foldr``, ``sf.vectorized_map``, ``sf.switch_case``, ``sf.case``,
``sf.control_dependencies``, ``sf.group``, ``sf.no_op``, ``sf.gradients``, ``sf.init_scope``,
``sf.executing_eagerly``, ``sf.is_tensor``, ``sf.get_static_value``, ``sf.ensure_shape``,
``sf.print`` (``sf.custom_gradient`` is api/custom_gradient.py; asserts are api/debugging.py).

Eagerly each is plain Python over the values (a loop, an ``if``). Inside ``sf.function`` the
element loops become one ``sf.while_loop`` that reads its elements from TensorLists and writes
its outputs to TensorLists, as TF2's ``map_fn`` builds it: a map over a tensor of unknown length
is one loop, not a copy per element, and its gradient is the loop's backward loop. Branches are
nested ``sf.cond``s."""

from __future__ import annotations

import builtins
import sys
from contextlib import contextmanager

import numpy as np

from specflow.api.context import STATE
from specflow.api.control_flow import _as_graph, _trace_of, cond, while_loop
from specflow.api.function import TensorSpec, flatten, unflatten
from specflow.api.op_functions import call, convert_to_tensor
from specflow.api.tensor import EagerTensor, GraphTensor, Tensor
from specflow.errors import GraphError
from specflow.graph import dtypes
from specflow.graph.dtypes import as_dtype

# --- element loops ---------------------------------------------------------------------------------


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False,
           infer_shape=True, name=None, fn_output_signature=None):
    """``fn`` on each element of ``elems`` (unpacked along dimension 0; a nested structure of
    tensors gives ``fn`` that structure), the results stacked. ``fn_output_signature`` (or the
    older ``dtype``) gives the output's dtypes where they differ from ``elems``'."""
    signature = fn_output_signature if fn_output_signature is not None else dtype
    leaves, structure = flatten(elems)
    if not leaves:
        raise ValueError("map_fn: elems must hold at least one tensor")
    if signature is None:
        signature = unflatten(structure, [_t(x).dtype for x in leaves])
    sig_leaves, sig_structure = flatten(signature)
    specs = [_spec_of(s) for s in sig_leaves]

    def step(acc, x):
        out = fn(x)
        flat, got = flatten(out)
        if got != sig_structure or len(flat) != len(specs):
            raise GraphError(f"map_fn: fn returned {_describe(out)}, but the output signature is "
                             f"{_describe(signature)}; give fn_output_signature=")
        return acc, [_checked(o, s, "map_fn") for o, s in zip(flat, specs)]

    _, outs = _loop(step, leaves, structure, [], [], specs, reverse=False, skip_first=False,
                    parallel_iterations=parallel_iterations or 10, name=name or "map")
    return unflatten(sig_structure, outs)


def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """``map_fn(fn, elems)``'s values: TensorFlow vectorizes ``fn`` where it can and falls back to
    this loop where it cannot; here it is always the loop (same results, one element at a time)."""
    return map_fn(fn, elems, fn_output_signature=_output_signature(fn, elems))


def _output_signature(fn, elems):
    """The dtypes ``fn`` returns for the first element (eagerly known; in a trace, elems' own)."""
    leaves, structure = flatten(elems)
    if _trace_of(*leaves) is None and all(_t(x).shape.rank != 0 and _t(x).shape[0] for x in leaves):
        first = fn(unflatten(structure, [_t(x)[0] for x in leaves]))
        return unflatten(flatten(first)[1], [_t(o).dtype for o in flatten(first)[0]])
    return None


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False,
         infer_shape=True, reverse=False, name=None):
    """``acc = fn(acc, x)`` over the elements (from the last with ``reverse``), every ``acc``
    stacked, in the elements' order. Without ``initializer`` the first element is the first
    ``acc`` (and the first output)."""
    return _accumulate(fn, elems, initializer, reverse, parallel_iterations, name or "scan", collect=True)


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """``acc = fn(acc, x)`` over the elements in order; the last ``acc``."""
    return _accumulate(fn, elems, initializer, False, parallel_iterations, name or "foldl", collect=False)


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """``acc = fn(acc, x)`` over the elements from the last; the last ``acc``."""
    return _accumulate(fn, elems, initializer, True, parallel_iterations, name or "foldr", collect=False)


def _accumulate(fn, elems, initializer, reverse: bool, parallel_iterations, name: str, collect: bool):
    """scan (``collect``: every accumulator stacked) and the folds (the last one)."""
    leaves, structure = flatten(elems)
    if not leaves:
        raise ValueError(f"{name}: elems must hold at least one tensor")
    init = _first(leaves, structure, reverse) if initializer is None else initializer
    init_leaves, init_structure = flatten(init)
    init_leaves = [_t(a) for a in init_leaves]
    specs = [TensorSpec(a.shape, a.dtype) for a in init_leaves]

    def step(acc, x):
        out = fn(unflatten(init_structure, acc), x)
        flat, got = flatten(out)
        if got != init_structure or len(flat) != len(acc):
            raise GraphError(f"{name}: fn returned {_describe(out)} for an accumulator of {_describe(init)}")
        flat = [_checked(o, s, name) for o, s in zip(flat, specs)]
        return flat, flat if collect else []

    # without an initializer the first element is the first accumulator (and scan's first output)
    acc, outs = _loop(step, leaves, structure, init_leaves, specs, specs if collect else [], reverse=reverse,
                      skip_first=initializer is None, parallel_iterations=parallel_iterations, name=name,
                      first_out=init_leaves if collect else None)
    return unflatten(init_structure, outs if collect else acc)


def _loop(step, leaves, structure, acc, acc_specs, out_specs, reverse: bool, skip_first: bool,
          parallel_iterations: int, name: str, first_out=None):
    """``acc, outs = step(acc, element)`` for each element of the flat ``leaves`` (rebuilt as
    ``structure``) in order (or reversed), skipping the first visited one with ``skip_first``
    (``first_out``: the outputs standing at its index); returns the last ``acc`` and each output
    stacked (in the elements' order)."""
    trace = _trace_of(*leaves, *acc)
    if trace is None:
        xs = [_t(x) for x in leaves]
        n = _length(xs, name)
        order = list(builtins.range(n))[::-1] if reverse else list(builtins.range(n))
        got = {}
        if skip_first:
            if first_out is not None and order:
                got[order[0]] = list(first_out)
            order = order[1:]
        for i in order:
            acc, outs = step(acc, unflatten(structure, [x[i] for x in xs]))
            got[i] = outs
        rows = [got[i] for i in sorted(got)]
        stacked = [call("Pack", [r[k] for r in rows], axis=0) if rows else _empty(s) for k, s in enumerate(out_specs)]
        return acc, stacked
    with trace.active():
        xs = [_as_graph(trace, x) for x in leaves]
        n = _graph_length(xs, name)
        lists = [call("TensorListFromTensor", x, _element_shape(x), element_dtype=x.dtype) for x in xs]
        outs = [call("TensorListReserve", _shape_vector(s.shape), n, element_dtype=s.dtype) for s in out_specs]
        first = np.int32(1 if skip_first else 0)
        if skip_first and first_out is not None:
            at = n - 1 if reverse else np.int32(0)
            outs = [call("TensorListSetItem", lst, at, _as_graph(trace, o), element_dtype=s.dtype)
                    for lst, o, s in zip(outs, first_out, out_specs)]
        k_acc = len(acc)
        shapes: list = [None] * len(out_specs)  # the outputs' static shapes, found in the body

        def body(j, *state):
            i = (n - 1 - j) if reverse else j  # j counts the steps from the first element visited
            elem = [call("TensorListGetItem", lst, i, _element_shape(x), element_dtype=x.dtype)
                    for lst, x in zip(lists, xs)]
            new_acc, got = step(list(state[:k_acc]), unflatten(structure, elem))
            written = []
            for k, (lst, o) in enumerate(zip(state[k_acc:], got)):
                shapes[k] = o.shape
                written.append(call("TensorListSetItem", lst, i, o, element_dtype=o.dtype))
            return [j + 1, *new_acc, *written]

        result = while_loop(lambda j, *state: j < n, body, [first, *acc, *outs],
                            parallel_iterations=parallel_iterations, name=name)
        final = list(result[1:1 + k_acc])
        stacked = [call("TensorListStack", lst, _shape_vector(shape), element_dtype=s.dtype,
                        num_elements=_static_length(xs))
                   for lst, shape, s in zip(result[1 + k_acc:], shapes, out_specs)]
        return final, stacked


def _t(x) -> Tensor:
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


def _length(xs: list, what: str) -> int:
    lengths = {int(x.shape[0]) for x in xs if x.shape.rank}
    if any(not x.shape.rank for x in xs):
        raise GraphError(f"{what}: elements are unpacked along dimension 0, but an input is a scalar")
    if len(lengths) != 1:
        raise GraphError(f"{what}: the inputs' first dimensions differ: {sorted(lengths)}")
    return lengths.pop()


def _static_length(xs: list) -> int:
    known = [x.shape[0] for x in xs if x.shape.rank and x.shape[0] is not None]
    return int(known[0]) if known else -1


def _graph_length(xs: list, what: str):
    if any(x.shape.rank == 0 for x in xs):
        raise GraphError(f"{what}: elements are unpacked along dimension 0, but an input is a scalar")
    static = _static_length(xs)
    if static >= 0:
        return np.int32(static)
    return call("StridedSlice", call("Shape", xs[0]), np.array([0], np.int32), np.array([1], np.int32),
                np.array([1], np.int32), shrink_axis_mask=1)


def _shape_vector(shape) -> np.ndarray:
    """A TensorList element shape: -1 for an unknown dimension, a scalar -1 for an unknown rank."""
    if shape is None or getattr(shape, "rank", 0) is None:
        return np.int32(-1)
    dims = shape.as_list() if hasattr(shape, "as_list") else list(shape)
    return np.asarray([-1 if d is None else d for d in dims], np.int32)


def _element_shape(x) -> np.ndarray:
    """The shape of ``x``'s elements along dimension 0, as a TensorList takes it."""
    return _shape_vector(None if x.shape.rank is None else x.shape.as_list()[1:])


def _first(leaves: list, structure, reverse: bool):
    """The first element visited (the last one, reversed): the accumulator's start."""
    xs = [_t(x) for x in leaves]
    trace = _trace_of(*xs)
    if trace is not None:
        with trace.active():
            xs = [_as_graph(trace, x) for x in xs]
            return unflatten(structure, [x[-1] if reverse else x[0] for x in xs])
    return unflatten(structure, [x[-1] if reverse else x[0] for x in xs])


def _empty(spec: TensorSpec):
    rest = [0 if d is None else d for d in (spec.shape.as_list() if spec.shape.rank is not None else [])]
    return convert_to_tensor(np.zeros([0, *rest], spec.dtype.numpy))


def _spec_of(s) -> TensorSpec:
    if isinstance(s, TensorSpec):
        return s
    return TensorSpec(None, as_dtype(s))


def _checked(value, spec: TensorSpec, what: str):
    v = _t(value)
    if v.dtype != spec.dtype:
        raise GraphError(f"{what}: fn returned {v.dtype.name} where {spec.dtype.name} was expected "
                         "(give the output signature)")
    return v


def _describe(value) -> str:
    leaves, structure = flatten(value)
    kinds = ", ".join(getattr(x, "name", None) or str(getattr(x, "dtype", type(x).__name__)) for x in leaves)
    return f"{type(value).__name__} of {len(leaves)} ({kinds})"


# --- branches --------------------------------------------------------------------------------------


def switch_case(branch_index, branch_fns, default=None, name: str = "switch_case"):
    """The branch ``branch_index`` names (``branch_fns``: a list, or pairs / a dict keyed by
    int); an index out of range runs ``default``, or the last branch when there is none."""
    pairs = sorted(branch_fns.items()) if isinstance(branch_fns, dict) else list(
        branch_fns if branch_fns and isinstance(branch_fns[0], tuple) else enumerate(branch_fns))
    if not pairs:
        raise ValueError("switch_case: branch_fns is empty")
    fallback = default if default is not None else pairs[-1][1]
    if _trace_of(branch_index) is None:
        k = int(np.asarray(branch_index.numpy() if isinstance(branch_index, Tensor) else branch_index))
        return dict(pairs).get(k, fallback)()
    index = _t(branch_index)
    fn = fallback
    for k, branch in reversed(pairs):
        fn = _branch(call("Equal", index, np.asarray(k, index.dtype.numpy)), branch, fn, name)
    return fn()


def case(pred_fn_pairs, default=None, exclusive: bool = False, strict: bool = False, name: str = "case"):
    """The first pair whose predicate holds runs; none: ``default`` (without one, the last pair,
    whose predicate must then hold). ``exclusive``: at most one predicate may hold."""
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) else list(pred_fn_pairs)
    if not pairs:
        raise ValueError("case: pred_fn_pairs is empty")
    preds = [_t(p) for p, _ in pairs]
    if exclusive:
        count = call("Sum", call("Cast", call("Pack", preds, axis=0), DstT=dtypes.int32), np.int32(0))
        call("Assert", call("LessEqual", count, np.int32(1)),
             [np.array("Input error: exclusive=True: more than 1 condition evaluated as True"), count],
             summarize=3)
    if default is None:
        (last_pred, last_fn), pairs = pairs[-1], pairs[:-1]

        def default():
            call("Assert", _t(last_pred), [np.array("None of the conditions evaluated as True")], summarize=3)
            return last_fn()

    fn = default
    for pred, branch in reversed(pairs):
        fn = _branch(pred, branch, fn, name)
    return fn()


def _branch(pred, true_fn, false_fn, name: str):
    return lambda: cond(pred, true_fn, false_fn, name=name)


# --- the graph's order, gradients, scopes --------------------------------------------------------


@contextmanager
def control_dependencies(control_inputs):
    """Inside sf.function, the ops made in the block run after ``control_inputs`` (tensors or
    ops); eagerly ops run in program order already (a no-op, as in TensorFlow)."""
    trace = STATE.trace
    if trace is None or control_inputs is None:
        yield
        return
    names = [_op_name(trace, c) for c in control_inputs if c is not None]
    with trace.builder.control_dependencies(names):
        yield


def _op_name(trace, c) -> str:
    if isinstance(c, _Op):
        return c.name
    if isinstance(c, GraphTensor):
        if c.trace is not trace:
            trace.capture_outer(c)
        return c.name.split(":")[0]
    if isinstance(c, EagerTensor):
        return trace.capture(c).name
    raise TypeError(f"control_dependencies takes tensors or ops, got {type(c).__name__}")


class _Op:
    """An op made for its effects (``sf.group``, ``sf.no_op`` inside sf.function): a control
    input for ``control_dependencies`` or another group."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<sf.Operation '{self.name}'>"


def group(*inputs, name: str | None = None):
    """An op that runs after every input (inside sf.function); eagerly None, as TensorFlow's."""
    trace = STATE.trace
    if trace is None:
        return None
    deps = [_op_name(trace, c) for c in inputs if c is not None]
    b = trace.builder
    node = b.add_op("NoOp", [], name=b.unique_name(name or "group_deps"), exact_name=True, control_inputs=deps)
    return _Op(node.name)


def no_op(name: str | None = None):
    return group(name=name or "NoOp")


def gradients(ys, xs, grad_ys=None, name: str = "gradients", gate_gradients: bool = False,
              aggregation_method=None, stop_gradients=None, unconnected_gradients="none"):
    """d(sum of ys)/d(x) for each x, inside sf.function (TensorFlow 2's rule: eagerly use a
    GradientTape)."""
    from specflow.api.tape import GradientTape

    trace = STATE.trace
    if trace is None:
        raise RuntimeError("sf.gradients is not supported when eager execution is enabled; use sf.GradientTape "
                           "(or call it inside an sf.function)")
    tape = GradientTape(persistent=True)
    xs, ys = list(flatten(xs)[0]), list(flatten(ys)[0])  # a list of gradients, one per x, always (TF's)
    seeds = None if grad_ys is None else list(flatten(grad_ys)[0])
    tape._watched_graph.update(x.name for x in xs if isinstance(x, GraphTensor))
    if stop_gradients is not None:
        stops = {s.name for s in flatten(stop_gradients)[0]}
        return _gradients_stopped(trace, ys, xs, seeds, stops)
    return list(tape.gradient(ys, xs, output_gradients=seeds, unconnected_gradients=unconnected_gradients))


def _gradients_stopped(trace, ys, xs, grad_ys, stops: set[str]):
    from specflow.api.variables import Variable
    from specflow.train.gradients import gradients as build

    names = [trace.variable_handle(x).name if isinstance(x, Variable) else x.name for x in xs]
    seeds = None if grad_ys is None else [None if g is None else _as_graph(trace, g).name for g in grad_ys]
    got = build(trace.builder, [y.name for y in ys], names, grad_ys=seeds, stop_gradients=sorted(stops))
    return [None if g is None else trace._tensor(g) for g in got]


@contextmanager
def init_scope():
    """Ops made in the block run eagerly, outside any sf.function being traced (where a
    function makes its variables' initial values once)."""
    saved, STATE.trace = STATE.trace, None
    try:
        yield
    finally:
        STATE.trace = saved


# --- queries and checks ----------------------------------------------------------------------------


def executing_eagerly() -> bool:
    return STATE.trace is None


def is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def get_static_value(tensor, partial: bool = False):
    """The value as a numpy array when known without running anything: an eager tensor's, or a
    traced one the graph computes from constants alone; else None."""
    if isinstance(tensor, EagerTensor):
        return np.asarray(tensor)
    if isinstance(tensor, GraphTensor):
        value = tensor.trace.constant_value(tensor)
        return None if value is None else np.asarray(value)
    if isinstance(tensor, Tensor):  # a variable: its value changes, so it has no static one
        return None
    return np.asarray(tensor)


def ensure_shape(x, shape, name: str | None = None):
    """``x``, checked to have ``shape`` (None for an unknown dimension) when it runs."""
    from specflow.graph.shapes import as_shape

    return call("EnsureShape", _t(x), shape=as_shape(shape), name=name)


def print(*inputs, output_stream=None, summarize: int = 3, sep: str = " ", end: str = "\n",
          name: str | None = None):  # noqa: A001 (TensorFlow's name)
    """The values as TensorFlow prints them (ops/print_ops.py: ``summarize`` items from each end
    of every dimension); Python values and structures as Python writes them, tensors inside.
    Inside sf.function it is a StringFormat and a PrintV2 op, run in program order."""
    from specflow.ops.print_ops import format_tensor

    tensors: list = []
    texts = [_print_template(x, tensors) for x in inputs]
    if output_stream is None or output_stream is sys.stderr:  # TensorFlow's default, sys.stderr
        output_stream = "stderr"
    stream = "stdout" if output_stream is sys.stdout else output_stream
    parts = [part for x in texts for part in x + [sep]][:-1]  # the inputs' parts, sep between
    if STATE.trace is None:
        values = iter(format_tensor(np.asarray(t.numpy()), summarize) for t in tensors)
        text = "".join(next(values) if p is _SLOT else p for p in parts)
        target = stream if hasattr(stream, "write") else {"stdout": sys.stdout}.get(stream, sys.stderr)
        target.write(text + end)
        target.flush()
        return None
    if not isinstance(stream, str):
        raise GraphError("sf.print inside an sf.function prints to sys.stderr or sys.stdout only")
    placeholder = "{}"
    if any(placeholder in p for p in parts if p is not _SLOT):
        placeholder = "{sf_print_slot}"
    template = "".join(placeholder if p is _SLOT else p for p in parts)
    line = call("StringFormat", tensors, template=template, placeholder=placeholder, summarize=int(summarize))
    return call("PrintV2", line, output_stream=stream, end=end, name=name)


_SLOT = object()  # where a tensor goes in a print's template


def _print_template(x, tensors: list) -> list:
    """``x`` as text parts, a tensor as a _SLOT (appended to ``tensors``): structures as Python
    writes them (``[1, <tensor>]``, ``{'a': <tensor>}``)."""
    from specflow.api.variables import Variable

    if isinstance(x, Variable):
        x = x._read()
    if isinstance(x, Tensor):
        tensors.append(x)
        return [_SLOT]
    if isinstance(x, (list, tuple)) and any(isinstance(v, Tensor) for v in flatten(x)[0]):
        inner = [p for i, v in enumerate(x) for p in ([", "] if i else []) + _print_template(v, tensors)]
        close = "," if isinstance(x, tuple) and len(x) == 1 else ""
        return ["[" if isinstance(x, list) else "(", *inner, close + ("]" if isinstance(x, list) else ")")]
    if isinstance(x, dict) and any(isinstance(v, Tensor) for v in flatten(x)[0]):
        inner = [p for i, (k, v) in enumerate(x.items()) for p in ([", "] if i else []) + [f"{k!r}: "]
                 + _print_template(v, tensors)]
        return ["{", *inner, "}"]
    return [str(x)]


NAMES = ["map_fn", "vectorized_map", "scan", "foldl", "foldr", "switch_case", "case", "control_dependencies",
         "group", "no_op", "gradients", "init_scope", "executing_eagerly", "is_tensor", "get_static_value",
         "ensure_shape", "print"]
