"""Einsum: sums of products over labelled dims (``"bij,bjk->bik"``), with ``...`` for broadcast
batch dims. Its gradient with respect to one operand is another Einsum of the output gradient and
the other operands; labels that only that operand sums over come back by broadcasting."""

from __future__ import annotations

from dataclasses import dataclass

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
        seen = set()
        for t in output:
            if t in seen:
                raise fail(f"output label '{t}' appears more than once in '{equation}'")
            seen.add(t)
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
    attrs=["equation: string", "N: int >= 1", "T: {float16, float32, float64, int32, int64, complex64, complex128}"],
    shape=_einsum_infer,
    doc="Sums of products over labelled dims, as numpy.einsum: `equation` like 'bij,bjk->bik'; "
    "'...' stands for broadcast batch dims.",
)


@kernel("Einsum")
def _einsum(ctx, *xs):
    eq = parse_equation(ctx.fail, ctx.attrs["equation"], len(xs))
    _einsum_shape(ctx.fail, eq, [shape_of(x) for x in xs])
    text = ",".join(Equation.text(t) for t in eq.inputs) + "->" + Equation.text(eq.output)
    out = ctx.xp.einsum(text, *xs, optimize=len(xs) > 2)
    return out.astype(xs[0].dtype, copy=False)


@gradient("Einsum")
def _einsum_grad(b, node, dys):
    require_real(node)
    eq = parse_equation(lambda m: GraphError(m, node=node.name, location=node.location),
                        node.attrs["equation"], len(node.data_inputs))  # fmt: skip
    return [_operand_grad(b, node, eq, i, dys[0]) for i in range(len(eq.inputs))]


def _operand_grad(b, node, eq: Equation, i: int, dy: str) -> str:
    """d loss / d input i: Einsum(dy, the other inputs) over the labels they share with input i;
    the labels only input i had (summed over in the forward pass) are broadcast back."""
    x, term = node.data_inputs[i], eq.inputs[i]

    def unsupported(why: str) -> GraphError:
        return GraphError(f"the gradient of Einsum '{node.attrs['equation']}' is not supported: {why}",
                          node=node.name, location=node.location)  # fmt: skip

    letters = [t for t in term if t != ELLIPSIS]
    if len(set(letters)) != len(letters):
        raise unsupported(f"term '{Equation.text(term)}' repeats a label (a diagonal)")
    if ELLIPSIS in term and ELLIPSIS not in eq.output:
        raise unsupported("the broadcast dims are summed over")
    others = [t for k, t in enumerate(eq.inputs) if k != i]
    available = set(eq.output).union(*others) if others else set(eq.output)
    kept = tuple(t for t in term if t in available)
    text = ",".join(Equation.text(t) for t in [eq.output, *others]) + "->" + Equation.text(kept)
    operands = [dy, *(node.data_inputs[k] for k in range(len(eq.inputs)) if k != i)]
    grad = gu.emit(b, "Einsum", *operands, equation=text)
    if kept != term:
        rank = b.spec(x).shape.rank
        if rank is None:
            raise unsupported("an input summed on its own needs a known rank")
        n_ell = rank - (len(term) - (ELLIPSIS in term))
        pos, dims = 0, []
        for t in term:  # where each missing label's dim sits in x
            if t == ELLIPSIS:
                pos += n_ell
                continue
            if t not in available:
                dims.append(pos)
            pos += 1
        for d in dims:  # increasing: each insert lands where x has that dim
            grad = gu.emit(b, "ExpandDims", grad, gu.const(b, d, "int32"))
        grad = gu.emit(b, "Mul", grad, gu.emit(b, "OnesLike", x))  # broadcast to x's dims
    return gu.sum_to(b, grad, x) if ELLIPSIS in term else grad

