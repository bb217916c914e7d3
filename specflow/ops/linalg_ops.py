"""Linear algebra on (batches of) matrices: Cholesky, MatrixInverse, Qr, MatrixBandPart,
MatrixDiagV3/MatrixDiagPartV3/MatrixSetDiagV3, Diag/DiagPart, Cross. (Matrix products are in ``matmul_ops``,
Einsum in ``einsum_ops``.) Every op works on the innermost two dims; outer dims are a batch.
"""

from __future__ import annotations

import numpy as np

from specflow.errors import GraphError
from specflow.graph.shapes import Shape
from specflow.ops import grad_util as gu
from specflow.ops.inference import InferenceContext
from specflow.ops.math_ops import require_real
from specflow.ops.registry import gradient, kernel, register_op
from specflow.ops.shape_args import scalar_arg, shape_of

_LINALG_TYPES = "{float16, float32, float64, complex64, complex128}"


def _square_shape(fail, s: Shape, what: str = "input") -> Shape:
    if s.rank is not None and s.rank < 2:
        raise fail(f"{what} must have rank >= 2, got shape {s}")
    if s.rank is not None and s[-1] is not None and s[-2] is not None and s[-1] != s[-2]:
        raise fail(f"{what} must be a batch of square matrices, got shape {s}")
    return s


def _mm(b, x, y, adj_x=False, adj_y=False) -> str:
    return gu.emit(b, "BatchMatMulV2", x, y, adj_x=adj_x, adj_y=adj_y)


def _transpose(b, x) -> str:
    """x with its last two dims swapped."""
    rank = b.spec(x).shape.rank
    return gu.emit(b, "Transpose", x, gu.const(b, np.array([*range(rank - 2), rank - 1, rank - 2], np.int32)))


def _run_linalg(ctx, fn, x, message: str):
    if x.dtype == np.float16:  # LAPACK has no half type: float32, rounded once by the caller's astype
        x = x.astype(np.float32)
    try:
        return fn(x)
    except Exception as e:  # numpy's LinAlgError, cupy's: name TF's condition, not LAPACK's
        if type(e).__name__ == "LinAlgError":
            raise ctx.fail(message) from None
        raise


# --- Cholesky ---------------------------------------------------------------------------------

register_op(
    "Cholesky",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=[f"T: {_LINALG_TYPES}"],
    shape=lambda ic: [_square_shape(ic.fail, ic.shape(0))],
    doc="The lower-triangular L with L @ adjoint(L) = input, for each Hermitian positive-definite "
    "matrix; only the lower triangle of the input is read.",
)


@kernel("Cholesky", T={"float32", "float64", "complex64", "complex128"})  # TF has no half Cholesky kernel
def _cholesky(ctx, x):
    _square_shape(ctx.fail, shape_of(x))
    xp = ctx.xp
    low = xp.tril(x)  # read the lower triangle only, as TF does
    herm = low + xp.conj(xp.swapaxes(xp.tril(x, -1), -1, -2))
    out = _run_linalg(ctx, xp.linalg.cholesky, herm,
                      "Cholesky decomposition was not successful. The input might not be valid.")  # fmt: skip
    if not bool(xp.isfinite(out).all()):  # cupy reports failure with NaNs instead of raising
        raise ctx.fail("Cholesky decomposition was not successful. The input might not be valid.")
    return out.astype(x.dtype, copy=False)


@gradient("Cholesky")
def _cholesky_grad(b, node, dys):
    # TF's formula (Murray 2016): with P = L^H dL, phi(P) = its lower triangle with half the
    # diagonal, dA = sym(L^-H phi(P) L^-1), split evenly between the two triangles.
    require_real(node)  # the complex form needs Conj in the symmetrization
    low = node.name
    inv = gu.emit(b, "MatrixInverse", low)
    middle = _mm(b, low, dys[0], adj_x=True)
    lower = gu.emit(b, "MatrixBandPart", middle, gu.const(b, -1, "int64"), gu.const(b, 0, "int64"))
    diag = gu.emit(b, "MatrixBandPart", middle, gu.const(b, 0, "int64"), gu.const(b, 0, "int64"))
    half = gu.const(b, 0.5, b.spec(low).dtype)
    phi = gu.emit(b, "Sub", lower, gu.emit(b, "Mul", diag, half))
    grad = _mm(b, _mm(b, inv, phi, adj_x=True), inv)
    return [gu.emit(b, "Mul", gu.emit(b, "AddV2", grad, _transpose(b, grad)), half)]


# --- MatrixInverse ----------------------------------------------------------------------------

register_op(
    "MatrixInverse",
    inputs=["input: T"],
    outputs=["output: T"],
    attrs=["adjoint: bool = false", f"T: {_LINALG_TYPES}"],
    shape=lambda ic: [_square_shape(ic.fail, ic.shape(0))],
    doc="The inverse of each square matrix (of its adjoint, with adjoint=true); a singular matrix "
    "is an error.",
)


@kernel("MatrixInverse")
def _matrix_inverse(ctx, x):
    _square_shape(ctx.fail, shape_of(x))
    xp = ctx.xp
    if ctx.attrs["adjoint"]:
        x = xp.conj(xp.swapaxes(x, -1, -2))
    out = _run_linalg(ctx, xp.linalg.inv, x, "Input is not invertible.")
    if not bool(xp.isfinite(out).all()) and bool(xp.isfinite(x).all()):
        raise ctx.fail("Input is not invertible.")
    return out.astype(x.dtype, copy=False)


@gradient("MatrixInverse")
def _matrix_inverse_grad(b, node, dys):
    # d(A^-1) = -A^-1 dA A^-1, so dA = -A^-H g A^-H (the adjoint case mirrors it).
    inv, adj = node.name, node.attrs["adjoint"]
    inner = _mm(b, dys[0], inv, adj_x=adj, adj_y=not adj)
    return [gu.emit(b, "Neg", _mm(b, inv, inner, adj_x=not adj))]


# --- Qr ---------------------------------------------------------------------------------------


def _qr_shapes(fail, s: Shape, full: bool) -> tuple[Shape, Shape]:
    if s.rank is None:
        return Shape.unknown(), Shape.unknown()
    if s.rank < 2:
        raise fail(f"input must have rank >= 2, got shape {s}")
    *batch, m, n = s.dims
    p = m if full else (None if m is None or n is None else min(m, n))
    return Shape([*batch, m, p]), Shape([*batch, p, n])


register_op(
    "Qr",
    inputs=["input: T"],
    outputs=["q: T", "r: T"],
    attrs=["full_matrices: bool = false", "T: {float64, float32, float16, complex64, complex128}"],
    shape=lambda ic: list(_qr_shapes(ic.fail, ic.shape(0), ic.attrs["full_matrices"])),
    doc="The QR decomposition of each [M, N] matrix: q with orthonormal columns and upper-triangular "
    "r, q @ r = input; q is [M, P], r [P, N] with P = min(M, N), or P = M with full_matrices.",
)


@kernel("Qr")
def _qr(ctx, x):
    _qr_shapes(ctx.fail, shape_of(x), False)
    xp = ctx.xp
    # LAPACK (numpy's, cuSOLVER's) has no half-precision QR: factor in float32, round back.
    work = x.astype(xp.float32) if x.dtype == xp.float16 else x
    q, r = xp.linalg.qr(work, mode="complete" if ctx.attrs["full_matrices"] else "reduced")
    return q.astype(x.dtype, copy=False), r.astype(x.dtype, copy=False)


def _solve_upper_right(b, x, r):
    """x @ inverse(r)^H for the square upper-triangular r (TF solves it triangularly)."""
    return _mm(b, x, gu.emit(b, "MatrixInverse", r), adj_y=True)


def _adjoint(b, x) -> str:
    t = _transpose(b, x)
    return gu.emit(b, "Conj", t) if b.spec(x).dtype.is_complex else t


def _qr_grad_tall(b, q, r, dq, dr):
    # TF's QrGrad for M >= N, reduced: with qdq = q^H dq and rdr = r dr^H,
    # dA = q (dr + tril(qdq - qdq^H + rdr - rdr^H) r^-H) + (dq - q qdq) r^-H.
    qdq = _mm(b, q, dq, adj_x=True)
    rdr = _mm(b, r, dr, adj_y=True)
    skew = gu.emit(b, "AddV2", gu.emit(b, "Sub", qdq, _adjoint(b, qdq)), gu.emit(b, "Sub", rdr, _adjoint(b, rdr)))
    tril = gu.emit(b, "MatrixBandPart", skew, gu.const(b, -1, "int64"), gu.const(b, 0, "int64"))
    first = _mm(b, q, gu.emit(b, "AddV2", dr, _solve_upper_right(b, tril, r)))
    grad = gu.emit(b, "AddV2", first, _solve_upper_right(b, gu.emit(b, "Sub", dq, _mm(b, q, qdq)), r))
    if not b.spec(q).dtype.is_complex:
        return grad
    # Complex: r's real diagonal fixes the phases; TF adds the imaginary part of diag(rdr - qdq^H)
    # back, i.e. i Im(D) = (D - conj(D)) / 2 for the diagonal matrix D.
    diag = gu.emit(b, "MatrixBandPart", gu.emit(b, "Sub", rdr, _adjoint(b, qdq)),
                   gu.const(b, 0, "int64"), gu.const(b, 0, "int64"))  # fmt: skip
    imag = gu.emit(b, "Mul", gu.emit(b, "Sub", diag, gu.emit(b, "Conj", diag)), gu.const(b, 0.5, b.spec(q).dtype))
    return gu.emit(b, "AddV2", grad, _solve_upper_right(b, _mm(b, q, imag, adj_y=True), r))


@gradient("Qr")
def _qr_grad(b, node, dys):
    x = node.data_inputs[0]
    q, r = node.name, f"{node.name}:1"
    s = b.spec(x).shape
    if s.rank is None or s[-1] is None or s[-2] is None:
        raise GraphError(f"the gradient of Qr needs static matrix dimensions, got input shape {s}",
                         node=node.name, location=node.location)
    m, n = s[-2], s[-1]
    if node.attrs["full_matrices"] and m > n:
        raise GraphError(f"the gradient of Qr is not defined for full_matrices=true with more rows than "
                         f"columns (input shape {s}), as in TensorFlow", node=node.name, location=node.location)
    dq, dr = dys
    if m >= n:
        return [_qr_grad_tall(b, q, r, dq, dr)]
    # Wide: split input = [X, Y] and r = [U, V] after M columns; X = q U is the square case with
    # q's gradient also collecting Y dV^H, and dY = q dV.
    axis = gu.const(b, -1, "int32")
    sizes = gu.const(b, [m, n - m], "int32")
    _, y = gu.outputs(b, "SplitV", 2, x, sizes, axis, num_split=2)
    u, _ = gu.outputs(b, "SplitV", 2, r, sizes, axis, num_split=2)
    du, dv = gu.outputs(b, "SplitV", 2, dr, sizes, axis, num_split=2)
    dx = _qr_grad_tall(b, q, u, gu.emit(b, "AddV2", dq, _mm(b, y, dv, adj_y=True)), du)
    return [gu.emit(b, "ConcatV2", dx, _mm(b, q, dv), axis, N=2)]


# --- MatrixBandPart ---------------------------------------------------------------------------


def _band_args(fail, s: Shape, lower, upper):
    if s.rank is not None and s.rank < 2:
        raise fail(f"input must have rank >= 2, got shape {s}")
    for name, v, dim in (("num_lower", lower, -2), ("num_upper", upper, -1)):
        if v is None or s.rank is None or s[dim] is None:
            continue
        if v > s[dim]:
            what = "rows" if dim == -2 else "columns"
            raise fail(f"{name} must be negative or at most the number of {what} ({s[dim]}), got {v}")


def _band_infer(ic: InferenceContext) -> list[Shape]:
    _band_args(ic.fail, ic.shape(0), scalar_arg(ic.fail, ic.value(1), "num_lower"),
               scalar_arg(ic.fail, ic.value(2), "num_upper"))  # fmt: skip
    return [ic.shape(0)]


register_op(
    "MatrixBandPart",
    inputs=["input: T", "num_lower: Tindex", "num_upper: Tindex"],
    outputs=["band: T"],
    attrs=["T: type", "Tindex: {int32, int64} = int64"],
    shape=_band_infer,
    doc="Each matrix with everything outside a band zeroed: kept where i - j <= num_lower and "
    "j - i <= num_upper (a negative bound keeps that whole triangle).",
)


def _band_mask(xp, rows: int, cols: int, lower: int, upper: int):
    d = xp.arange(cols)[None, :] - xp.arange(rows)[:, None]  # j - i
    return ((lower < 0) | (-d <= lower)) & ((upper < 0) | (d <= upper))


@kernel("MatrixBandPart", host_inputs=(1, 2))
def _matrix_band_part(ctx, x, lower, upper):
    lower = scalar_arg(ctx.fail, ctx.host(lower), "num_lower")
    upper = scalar_arg(ctx.fail, ctx.host(upper), "num_upper")
    _band_args(ctx.fail, shape_of(x), lower, upper)
    xp = ctx.xp
    return xp.where(_band_mask(xp, x.shape[-2], x.shape[-1], lower, upper), x, xp.zeros((), x.dtype))


@gradient("MatrixBandPart")
def _matrix_band_part_grad(b, node, dys):
    _, lower, upper = node.data_inputs
    return [gu.emit(b, "MatrixBandPart", dys[0], lower, upper), None, None]


# --- MatrixDiagV3 / MatrixDiagPartV3 ----------------------------------------------------------

_ALIGNS = "{'LEFT_RIGHT', 'RIGHT_LEFT', 'LEFT_LEFT', 'RIGHT_RIGHT'}"


def _k_range(fail, k) -> tuple[int, int]:
    k = np.asarray(k).reshape(-1)
    if k.size not in (1, 2):
        raise fail(f"k must be a scalar or a pair [low, high], got {k.size} values")
    lo, hi = int(k[0]), int(k[-1])
    if lo > hi:
        raise fail(f"k's lower diagonal ({lo}) must not be above its upper diagonal ({hi})")
    return lo, hi


def _diag_index(xp, rows: int, cols: int, lo: int, hi: int, max_len: int, align: str):
    """For each (i, j): whether it lies on a diagonal in [lo, hi], which row of the packed
    diagonals holds it (the highest diagonal first), and its position in that row."""
    i, j = xp.arange(rows)[:, None], xp.arange(cols)[None, :]
    d = j - i
    inside = (d >= lo) & (d <= hi)
    length = xp.minimum(rows + xp.minimum(d, 0), cols - xp.maximum(d, 0))
    super_right, sub_right = align.split("_")[0] == "RIGHT", align.split("_")[1] == "RIGHT"
    right = xp.where(d >= 0, super_right, sub_right)
    pos = xp.minimum(i, j) + xp.where(right, max_len - length, 0)
    row = xp.clip(hi - d, 0, hi - lo)
    return inside, row, xp.clip(pos, 0, max(max_len - 1, 0))


def _diag_dims(fail, diag: Shape, lo: int, hi: int, rows: int, cols: int):
    """(batch dims, max_len, rows, cols) of MatrixDiagV3, TF's rules for -1 rows/cols."""
    lead = 1 if lo == hi else 2
    if diag.rank is not None and diag.rank < lead:
        raise fail(f"diagonal must have rank >= {lead} for k = [{lo}, {hi}], got shape {diag}")
    if lead == 2 and diag.rank is not None and diag[-2] is not None and diag[-2] != hi - lo + 1:
        raise fail(f"diagonal must hold {hi - lo + 1} diagonals for k = [{lo}, {hi}], got shape {diag}")
    max_len = None if diag.rank is None else diag[-1]
    if max_len is None:
        return None, None, rows if rows >= 0 else None, cols if cols >= 0 else None
    min_rows, min_cols = max_len - min(hi, 0), max_len + max(lo, 0)
    if rows < 0 and cols < 0:
        rows = cols = max(min_rows, min_cols)
    elif rows < 0:
        rows = min_rows
    elif cols < 0:
        cols = min_cols
    if rows != min_rows and cols != min_cols:
        raise fail(f"{rows} rows and {cols} columns do not fit diagonals [{lo}, {hi}] of length {max_len}")
    return list(diag.dims[:-lead]), max_len, rows, cols


def _matrix_diag_infer(ic: InferenceContext) -> list[Shape]:
    k, nr, nc = ic.value(1), ic.value(2), ic.value(3)
    if k is None or nr is None or nc is None or ic.shape(0).rank is None:
        return [Shape.unknown()]
    lo, hi = _k_range(ic.fail, k)
    nr, nc = scalar_arg(ic.fail, nr, "num_rows"), scalar_arg(ic.fail, nc, "num_cols")
    batch, _, rows, cols = _diag_dims(ic.fail, ic.shape(0), lo, hi, nr, nc)
    return [Shape(batch + [rows, cols]) if batch is not None else Shape.unknown()]


register_op(
    "MatrixDiagV3",
    inputs=["diagonal: T", "k: int32", "num_rows: int32", "num_cols: int32", "padding_value: T"],
    outputs=["output: T"],
    attrs=["T: type", f"align: {_ALIGNS} = 'RIGHT_LEFT'"],
    shape=_matrix_diag_infer,
    doc="Matrices with the given diagonals k = d or [low, high] (packed highest first, short ones "
    "aligned per `align`) and padding_value elsewhere; -1 rows/cols are inferred.",
)


@kernel("MatrixDiagV3", host_inputs=(1, 2, 3))
def _matrix_diag(ctx, diag, k, num_rows, num_cols, pad):
    xp = ctx.xp
    lo, hi = _k_range(ctx.fail, ctx.host(k))
    if pad.ndim != 0:
        raise ctx.fail(f"padding_value must be a scalar, got shape {shape_of(pad)}")
    rows, cols = (scalar_arg(ctx.fail, ctx.host(v), name) for v, name in ((num_rows, "num_rows"), (num_cols, "num_cols")))
    _, max_len, rows, cols = _diag_dims(ctx.fail, shape_of(diag), lo, hi, rows, cols)
    inside, row, pos = _diag_index(xp, rows, cols, lo, hi, max_len, ctx.attrs["align"])
    packed = diag[..., None, :] if lo == hi else diag
    picked = packed[..., row, pos] if max_len else xp.zeros(packed.shape[:-2] + (rows, cols), diag.dtype)
    return xp.where(inside, picked, pad.reshape(()))


@gradient("MatrixDiagV3")
def _matrix_diag_grad(b, node, dys):
    _, k, _, _, pad = node.data_inputs
    zero = gu.zeros_like(b, pad)
    part = gu.emit(b, "MatrixDiagPartV3", dys[0], k, zero, align=node.attrs["align"])
    return [part, None, None, None, None]  # TF gives padding_value no gradient either


def _diag_part_dims(fail, s: Shape, lo: int, hi: int):
    if s.rank is not None and s.rank < 2:
        raise fail(f"input must have rank >= 2, got shape {s}")
    if s.rank is None:
        return None
    rows, cols = s[-2], s[-1]
    for name, d in (("lower", lo), ("upper", hi)):  # TF's bounds: inside the matrix, or the main diagonal
        if rows is not None and cols is not None and d != 0 and not -rows < d < cols:
            raise fail(f"the {name} diagonal index {d} is out of bounds: it must be between {-rows} and {cols}")
    max_len = None if rows is None or cols is None else min(rows + min(hi, 0), cols - max(lo, 0))
    return list(s.dims[:-2]) + ([] if lo == hi else [hi - lo + 1]) + [max_len]


def _matrix_diag_part_infer(ic: InferenceContext) -> list[Shape]:
    if ic.value(1) is None:
        return [Shape.unknown()]
    dims = _diag_part_dims(ic.fail, ic.shape(0), *_k_range(ic.fail, ic.value(1)))
    return [Shape.unknown() if dims is None else Shape(dims)]


register_op(
    "MatrixDiagPartV3",
    inputs=["input: T", "k: int32", "padding_value: T"],
    outputs=["diagonal: T"],
    attrs=["T: type", f"align: {_ALIGNS} = 'RIGHT_LEFT'"],
    shape=_matrix_diag_part_infer,
    doc="The diagonals k = d or [low, high] of each matrix, packed highest first, short ones padded "
    "with padding_value per `align` (MatrixDiagV3's inverse; its gradient).",
)


@kernel("MatrixDiagPartV3", host_inputs=(1,))
def _matrix_diag_part(ctx, x, k, pad):
    xp = ctx.xp
    lo, hi = _k_range(ctx.fail, ctx.host(k))
    if pad.ndim != 0:
        raise ctx.fail(f"padding_value must be a scalar, got shape {shape_of(pad)}")
    dims = _diag_part_dims(ctx.fail, shape_of(x), lo, hi)
    rows, cols, max_len = x.shape[-2], x.shape[-1], dims[-1]
    out = xp.full(x.shape[:-2] + (hi - lo + 1, max_len), pad.reshape(()), dtype=x.dtype)
    inside, row, pos = _diag_index(xp, rows, cols, lo, hi, max_len, ctx.attrs["align"])
    if max_len and rows and cols:
        # Each in-band (i, j) fills one packed slot; no two share a slot.
        ii, jj = xp.nonzero(inside)
        out[..., row[ii, jj], pos[ii, jj]] = x[..., ii, jj]
    return out.reshape(dims) if lo == hi else out


@gradient("MatrixDiagPartV3")
def _matrix_diag_part_grad(b, node, dys):
    x, k, _ = node.data_inputs
    shape = gu.shape_of(b, x)
    rows = gu.emit(b, "StridedSlice", shape, gu.const(b, [-2], "int32"), gu.const(b, [-1], "int32"),
                   gu.const(b, [1], "int32"), shrink_axis_mask=1)  # fmt: skip
    cols = gu.emit(b, "StridedSlice", shape, gu.const(b, [-1], "int32"), gu.const(b, [0], "int32"),
                   gu.const(b, [1], "int32"), end_mask=1, shrink_axis_mask=1)  # fmt: skip
    zero = gu.const(b, 0, b.spec(x).dtype)
    return [gu.emit(b, "MatrixDiagV3", dys[0], k, rows, cols, zero, align=node.attrs["align"]), None, None]


def _set_diag_infer(ic: InferenceContext) -> list[Shape]:
    x = ic.shape(0)
    if ic.value(2) is not None and x.rank is not None:
        dims = _diag_part_dims(ic.fail, x, *_k_range(ic.fail, ic.value(2)))
        if not ic.shape(1).is_compatible_with(Shape(dims)):
            raise ic.fail(f"diagonal must have shape {Shape(dims)} for an input of shape {x}, got {ic.shape(1)}")
    return [x]


register_op(
    "MatrixSetDiagV3",
    inputs=["input: T", "diagonal: T", "k: int32"],
    outputs=["output: T"],
    attrs=["T: type", f"align: {_ALIGNS} = 'RIGHT_LEFT'"],
    shape=_set_diag_infer,
    doc="input with its diagonals k = d or [low, high] replaced by `diagonal` (packed as "
    "MatrixDiagPartV3 gives them); TF's gradient of Cholesky uses it.",
)


@kernel("MatrixSetDiagV3", host_inputs=(2,))
def _matrix_set_diag(ctx, x, diag, k):
    xp = ctx.xp
    lo, hi = _k_range(ctx.fail, ctx.host(k))
    dims = _diag_part_dims(ctx.fail, shape_of(x), lo, hi)
    if list(diag.shape) != dims:
        raise ctx.fail(f"diagonal must have shape {dims} for an input of shape {shape_of(x)}, got {shape_of(diag)}")
    rows, cols, max_len = x.shape[-2], x.shape[-1], dims[-1]
    if not (max_len and rows and cols):
        return x.copy()
    inside, row, pos = _diag_index(xp, rows, cols, lo, hi, max_len, ctx.attrs["align"])
    packed = diag[..., None, :] if lo == hi else diag
    return xp.where(inside, packed[..., row, pos], x)


@gradient("MatrixSetDiagV3")
def _matrix_set_diag_grad(b, node, dys):
    # The band's entries came from the diagonal, the rest from the input.
    x, diag, k = node.data_inputs
    align = node.attrs["align"]
    grad_x = gu.emit(b, "MatrixSetDiagV3", dys[0], gu.zeros_like(b, diag), k, align=align)
    grad_diag = gu.emit(b, "MatrixDiagPartV3", dys[0], k, gu.const(b, 0, b.spec(x).dtype), align=align)
    return [grad_x, grad_diag, None]


# --- Diag / DiagPart --------------------------------------------------------------------------

register_op(
    "Diag",
    inputs=["diagonal: T"],
    outputs=["output: T"],
    attrs=["T: {numeric}"],
    shape=lambda ic: [ic.shape(0).concatenate(ic.shape(0)) if ic.shape(0).rank is not None else Shape.unknown()],
    doc="A tensor of rank 2k with `diagonal` (rank k) on its diagonal: output[i..., i...] = "
    "diagonal[i...], zeros elsewhere.",
)


@kernel("Diag")
def _diag(ctx, x):
    xp = ctx.xp
    n = x.size
    out = xp.zeros((n, n), dtype=x.dtype)
    out[xp.arange(n), xp.arange(n)] = x.reshape(-1)
    return out.reshape(x.shape + x.shape)


@gradient("Diag")
def _diag_grad(b, node, dys):
    return [gu.emit(b, "DiagPart", dys[0])]


def _diag_part_shape(fail, s: Shape) -> Shape:
    if s.rank is None:
        return s
    if s.rank == 0 or s.rank % 2:
        raise fail(f"input must have an even, nonzero rank, got shape {s}")
    half = s.rank // 2
    try:
        return Shape(s.dims[:half]).merge_with(Shape(s.dims[half:]))
    except ValueError:
        raise fail(f"input's two halves of dims must match, got shape {s}") from None


register_op(
    "DiagPart",
    inputs=["input: T"],
    outputs=["diagonal: T"],
    attrs=["T: {numeric}"],
    shape=lambda ic: [_diag_part_shape(ic.fail, ic.shape(0))],
    doc="Diag's inverse: diagonal[i...] = input[i..., i...] for an input of rank 2k.",
)


@kernel("DiagPart")
def _diag_part(ctx, x):
    out = _diag_part_shape(ctx.fail, shape_of(x))
    n = int(np.prod(out.dims, dtype=np.int64))
    return ctx.xp.diagonal(x.reshape(n, n)).reshape(out.dims).copy()


@gradient("DiagPart")
def _diag_part_grad(b, node, dys):
    return [gu.emit(b, "Diag", dys[0])]


# --- Cross ------------------------------------------------------------------------------------


def _cross_shape(fail, a: Shape, c: Shape) -> Shape:
    try:
        s = a.merge_with(c)
    except ValueError:
        raise fail(f"a and b must have the same shape, got {a} and {c}") from None
    if s.rank == 0 or (s.rank is not None and s[-1] not in (None, 3)):
        raise fail(f"the innermost dimension must be 3, got shape {s}")
    return s


register_op(
    "Cross",
    inputs=["a: T", "b: T"],
    outputs=["product: T"],
    attrs=["T: {real}"],
    shape=lambda ic: [_cross_shape(ic.fail, ic.shape(0), ic.shape(1))],
    doc="The cross product of the 3-vectors along the last dimension of `a` and `b`.",
)


@kernel("Cross")
def _cross(ctx, a, c):
    _cross_shape(ctx.fail, shape_of(a), shape_of(c))
    return ctx.xp.cross(a, c).astype(a.dtype, copy=False)


@gradient("Cross")
def _cross_grad(b, node, dys):
    u, v = node.data_inputs
    return [gu.emit(b, "Cross", v, dys[0]), gu.emit(b, "Cross", dys[0], u)]
