"""Einsum: sums of products over labelled dims (``"bij,bjk->bik"``), with ``...`` for broadcast
batch dims. Its gradient with respect to one operand is another Einsum of the output gradient and
the other operands; labels that only that operand sums over come back by broadcasting."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specflow.errors import GraphError
from specflow.graph.shapes import Shape, broadcast_shapes
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.math_ops import require_real
from specflow.ops.registry import gradient, kernel, register_op
from specflow.ops.shape_args import shape_of

ELLIPSIS = "..."


@dataclass(frozen=True)
class Equation:
    inputs: tuple[tuple[str, ...], ...]  # each term's tokens: one letter each, or "..."
    output: tuple[str, ...]

    @staticmethod
    def text(terms) -> str:
        return "".join(terms)


def _tokens(fail, term: str) -> tuple[str, ...]:
    if term.count(ELLIPSIS) > 1:
        raise fail(f"'{term}' has more than one ellipsis")
    out: list[str] = []
    head, _, tail = term.partition(ELLIPSIS)
    for part, last in ((head, ELLIPSIS in term), (tail, False)):
        for ch in part:
            if not ch.isalpha():
                raise fail(f"'{term}' has an invalid label '{ch}' (labels are letters)")
            out.append(ch)
        if last:
            out.append(ELLIPSIS)
    return tuple(out)


def parse_equation(fail, equation: str, n: int) -> Equation:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != n:
        raise fail(f"equation '{equation}' has {len(terms)} input term(s), but the op has {n} input(s)")
    inputs = tuple(_tokens(fail, t) for t in terms)
    labels = [t for term in inputs for t in term if t != ELLIPSIS]
    if arrow:
        output = _tokens(fail, rhs)
        for t in output:  # a repeated output label puts values on a diagonal (TF's "inflate")
            if t != ELLIPSIS and t not in labels:
                raise fail(f"output label '{t}' does not appear in any input of '{equation}'")
    else:  # implicit: broadcast dims, then the labels used once, in order
        once = sorted(t for t in set(labels) if labels.count(t) == 1)
        output = ((ELLIPSIS,) if any(ELLIPSIS in t for t in inputs) else ()) + tuple(once)
    if ELLIPSIS in output and not any(ELLIPSIS in t for t in inputs):
        raise fail(f"output of '{equation}' has an ellipsis, but no input has one")
    return Equation(inputs, output)


def _einsum_shape(fail, eq: Equation, shapes: list[Shape]) -> Shape:
    dims: dict[str, int | None] = {}
    batch = Shape([])
    for term, s in zip(eq.inputs, shapes):
        if s.rank is None:
            if ELLIPSIS in term:
                batch = None
            continue
        fixed = len(term) - (ELLIPSIS in term)
        if s.rank < fixed or (ELLIPSIS not in term and s.rank != fixed):
            raise fail(f"term '{Equation.text(term)}' has {fixed} label(s), but its input has shape {s}")
        e = term.index(ELLIPSIS) if ELLIPSIS in term else None
        n_ell = s.rank - fixed
        if e is not None and n_ell and ELLIPSIS not in eq.output:
            raise fail(f"the '...' of term '{Equation.text(term)}' stands for dims of shape {s}, but the output has no '...'")
        for k, t in enumerate(term):
            if t == ELLIPSIS:
                continue
            d = s[k if e is None or k < e else k - 1 + n_ell]
            have = dims.get(t)
            if have is not None and d is not None and have != d:
                raise fail(f"label '{t}' has size {have} in one input and {d} in another")
            dims[t] = d if have is None else have
        if e is not None and batch is not None:
            try:
                batch = broadcast_shapes(batch, Shape(s.dims[e : e + n_ell]))
            except ValueError:
                raise fail(f"the ellipsis dims of the inputs cannot broadcast: {[str(x) for x in shapes]}") from None
    if ELLIPSIS in eq.output and batch is None:
        return Shape.unknown()
    out: list[int | None] = []
    for t in eq.output:
        out.extend(batch.dims if t == ELLIPSIS else [dims.get(t)])
    return Shape(out)


def _einsum_infer(ic: InferenceContext) -> list[Shape]:
    eq = parse_equation(ic.fail, ic.attr("equation"), ic.num_inputs)
    return [_einsum_shape(ic.fail, eq, [ic.shape(i) for i in range(ic.num_inputs)])]


register_op(
    "Einsum",
    inputs=["inputs: N * T"],
    outputs=["output: T"],
    attrs=["equation: string", "N: int >= 1", "T: {bfloat16, float16, float32, float64, int32, int64, complex64, complex128}"],
    shape=_einsum_infer,
    doc="Sums of products over labelled dims, as numpy.einsum: `equation` like 'bij,bjk->bik'; "
    "'...' stands for broadcast batch dims.",
)


@kernel("Einsum")
def _einsum(ctx, *xs):
    eq = parse_equation(ctx.fail, ctx.attrs["equation"], len(xs))
    _einsum_shape(ctx.fail, eq, [shape_of(x) for x in xs])
    unique = tuple(dict.fromkeys(eq.output))
    xs, terms = _presum(xs, eq)
    text = ",".join(Equation.text(t) for t in terms) + "->" + Equation.text(unique)
    try:
        out = ctx.xp.einsum(text, *xs, optimize=len(xs) > 2)
    except ValueError as e:  # what the shape check cannot see; say it in one line
        raise ctx.fail(f"einsum '{ctx.attrs['equation']}': {e}") from None
    if unique != eq.output:
        out = _inflate(ctx.xp, out, unique, eq.output)
    return out.astype(xs[0].dtype, copy=False)


def _presum(xs, eq: Equation):
    """Each operand summed first over its labels that no other operand nor the output has, as TF
    does (a ReduceSum before its BatchMatMul): the order decides inf - inf, e.g. 'bij,jk->k' with
    a column summing to 0 against an inf is inf (0 * x + s * inf) in TF, not NaN."""
    out, terms = list(xs), []
    for i, term in enumerate(eq.inputs):
        others = set(eq.output).union(*(t for j, t in enumerate(eq.inputs) if j != i))
        if ELLIPSIS in term:
            terms.append(term)
            continue
        drop = tuple(a for a, t in enumerate(term) if t not in others and term.count(t) == 1)
        if drop:
            out[i] = out[i].sum(axis=drop, dtype=out[i].dtype)
            term = tuple(t for a, t in enumerate(term) if a not in drop)
        terms.append(term)
    return out, terms


def _inflate(xp, u, unique: tuple[str, ...], full: tuple[str, ...]):
    """``u`` (axes labelled ``unique``) spread onto the diagonals of a zero tensor labelled
    ``full``, in which some labels repeat: y[..., i, ..., i, ...] = u[..., i, ...]."""
    n_ell = u.ndim - (len(unique) - (ELLIPSIS in unique))
    axes: dict[str, list[int]] = {}
    pos = 0
    for t in unique:
        axes[t] = list(range(pos, pos + n_ell)) if t == ELLIPSIS else [pos]
        pos += len(axes[t])
    where = [a for t in full for a in axes[t]]  # u's axis behind each axis of y
    y = xp.zeros([u.shape[a] for a in where], dtype=u.dtype)
    index = tuple(xp.arange(u.shape[a]).reshape([u.shape[a] if j == a else 1 for j in range(u.ndim)]) for a in where)
    y[index] = u
    return y


@gradient("Einsum")
def _einsum_grad(b, node, dys):
    require_real(node)
    eq = parse_equation(lambda m: GraphError(m, node=node.name, location=node.location),
                        node.attrs["equation"], len(node.data_inputs))  # fmt: skip
    return [_operand_grad(b, node, eq, i, dys[0]) for i in range(len(eq.inputs))]


def _operand_grad(b, node, eq: Equation, i: int, dy: str) -> str:
    """d loss / d input i, TF's way: Einsum(dy, the other inputs) onto input i's labels; labels
    only input i had (summed in the forward pass) are broadcast back through a second Einsum
    (which also restores repeated labels' diagonals); broadcast '...' dims are summed."""
    x, term = node.data_inputs[i], eq.inputs[i]

    def unsupported(why: str) -> GraphError:
        return GraphError(f"the gradient of Einsum '{node.attrs['equation']}' is not supported: {why}",
                          node=node.name, location=node.location)  # fmt: skip

    if ELLIPSIS in eq.output and ELLIPSIS not in term:
        term = term + (ELLIPSIS,)  # x has no batch dims: its gradient sums them (as TF)
    others = [t for k, t in enumerate(eq.inputs) if k != i]
    available = set(eq.output).union(*others)
    reduced = [t for t in dict.fromkeys(term) if t not in available and t != ELLIPSIS]
    if ELLIPSIS in term and ELLIPSIS not in available:
        raise unsupported("the broadcast dims are summed over")
    left = tuple(t for t in term if t not in reduced)
    text = ",".join(Equation.text(t) for t in [eq.output, *others]) + "->" + Equation.text(left)
    operands = [dy, *(node.data_inputs[k] for k in range(len(eq.inputs)) if k != i)]
    grad = gu.emit(b, "Einsum", *operands, equation=text)
    if reduced:
        grad = _spread_reduced(b, grad, x, term, left, reduced, unsupported)
    return _unbroadcast(b, grad, x, term) if ELLIPSIS in term else grad


def _spread_reduced(b, grad: str, x: str, term, left, reduced: list[str], unsupported) -> str:
    """The gradient of the reduction term -> left: grad broadcast along the reduced labels (put
    first), then an Einsum back to ``term``'s layout."""
    s = b.spec(x).shape
    if s.rank is None:
        raise unsupported("an input summed on its own needs a known rank")
    n_ell = s.rank - (len(term) - (ELLIPSIS in term))
    axis, pos = {}, 0
    for t in term:
        axis.setdefault(t, pos)  # the leftmost occurrence, as TF
        pos += n_ell if t == ELLIPSIS else 1
    where = [axis[t] for t in reduced]
    dims = [s[a] for a in where]
    if None in dims:
        sizes = gu.emit(b, "GatherV2", gu.emit(b, "Shape", x), gu.const(b, where, "int32"), gu.const(b, 0, "int32"))
    else:
        sizes = gu.const(b, np.array(dims, np.int32))
    g_shape = gu.shape_of(b, grad)
    ones = gu.const(b, np.ones(len(reduced), np.int32))
    axis0 = gu.const(b, 0, "int32")
    spread = gu.emit(b, "BroadcastTo", gu.emit(b, "Reshape", grad, gu.emit(b, "ConcatV2", ones, g_shape, axis0)),
                     gu.emit(b, "ConcatV2", sizes, g_shape, axis0))  # fmt: skip
    text = Equation.text(tuple(reduced) + tuple(left)) + "->" + Equation.text(term)
    return gu.emit(b, "Einsum", spread, equation=text)


def _unbroadcast(b, grad: str, x: str, term) -> str:
    """Sum ``grad`` over the '...' dims x was broadcast along (they sit at the same place in both)."""
    gs, xs = b.spec(grad).shape, b.spec(x).shape
    if gs.is_fully_defined and xs.is_fully_defined and gs == xs:
        return grad
    start, after = term.index(ELLIPSIS), len(term) - term.index(ELLIPSIS) - 1

    def sub(shape: str) -> str:
        end = {"end_mask": 1} if after == 0 else {}
        return gu.emit(b, "StridedSlice", shape, gu.const(b, [start], "int32"), gu.const(b, [-after], "int32"),
                       gu.const(b, [1], "int32"), **end)  # fmt: skip

    x_shape = gu.shape_of(b, x)
    rx, _ = gu.outputs(b, "BroadcastGradientArgs", 2, sub(x_shape), sub(gu.shape_of(b, grad)))
    axes = gu.emit(b, "AddV2", rx, gu.const(b, start, "int32"))
    return gu.emit(b, "Reshape", gu.emit(b, "Sum", grad, axes, keep_dims=False), x_shape)
