"""tf.strings' ops (and what Keras's preprocessing layers build from them), as TF 2.21's CPU kernels.

StringLength (BYTE or UTF8_CHAR), StringLower/StringUpper (ASCII, or Unicode case mapping with
``encoding="utf-8"``: Python's str.lower/upper stand in for ICU; invalid UTF-8 becomes U+FFFD as
ICU makes it), StringStrip (ASCII whitespace), AsString (printf formats as TF builds them, nan and
inf as glibc prints them), StringToNumber (TF's parsers: floats with hex, inf/infinity/nan, an
overflow to inf; integers with an optional sign, no overflow), Substr (BYTE or UTF8_CHAR; pos and
len broadcast against the input), ReduceJoin, StringSplitV2 (a SparseTensor), StringNGrams,
StringToHashBucketFast (farmhash Fingerprint64), StringToHashBucketStrong (SipHash-2-4),
Fingerprint ("farmhash64"), RaggedBincount (Keras's multi_hot/count/tf_idf over ragged tokens).

Regular expressions are in regex_ops.py.
"""

from __future__ import annotations

import math
import re
import struct

import numpy as np

from specflow.graph import dtypes
from specflow.graph.shapes import Shape, broadcast_shapes
from specflow.ops.inference import InferenceContext, unchanged_shape
from specflow.ops.registry import kernel, not_differentiable, register_op
from specflow.ops.string_hash import fingerprint64, siphash24

_CPU = ("CPU",)
_WHITESPACE = b" \t\n\v\f\r"


def _strings(x) -> np.ndarray:
    return np.asarray(x, dtype=object)


def _b(x) -> bytes:
    return x if isinstance(x, bytes) else str(x).encode("utf-8")


def _map(x, fn, dtype=object) -> np.ndarray:
    arr = _strings(x)
    out = np.empty(arr.shape, dtype=dtype)
    flat = out.reshape(-1)
    for i, s in enumerate(arr.reshape(-1).tolist()):
        flat[i] = fn(_b(s))
    return out


def _attr_bytes(v) -> bytes:
    return v.encode("utf-8") if isinstance(v, str) else bytes(v)


# --- StringLength, StringLower/Upper, StringStrip --------------------------------------------------


def utf8_length(s: bytes) -> int:
    """Characters of UTF-8 text as TF counts them: bytes that are not continuation bytes."""
    return sum(1 for c in s if c & 0xC0 != 0x80)


register_op("StringLength", inputs=["input: string"], outputs=["output: int32"],
            attrs=["unit: {'BYTE', 'UTF8_CHAR'} = 'BYTE'"], shape=unchanged_shape,
            doc="The length of each string, in bytes or UTF-8 characters.")


@kernel("StringLength", devices=_CPU)
def _string_length(ctx, input):
    count = len if ctx.attrs["unit"] == "BYTE" else utf8_length
    return _map(input, count, np.int32)


def _check_encoding(ctx) -> str:
    enc = ctx.attrs["encoding"]
    if enc not in ("", "utf-8"):
        raise ctx.fail(f"only utf-8 or '' (no encoding) is supported, received {enc}")
    return enc


def _case_op(name: str, ascii_fn, unicode_fn) -> None:
    register_op(name, inputs=["input: string"], outputs=["output: string"], attrs=["encoding: string = ''"],
                shape=unchanged_shape,
                doc=f"{name}: ASCII letters only, or (encoding 'utf-8') Unicode's full case mapping.")

    @kernel(name, devices=_CPU)
    def _case(ctx, input):
        if _check_encoding(ctx) == "":
            return _map(input, ascii_fn)
        return _map(input, lambda s: unicode_fn(s.decode("utf-8", "replace")).encode("utf-8"))


_case_op("StringLower", bytes.lower, str.lower)  # bytes.lower/upper touch ASCII letters only
_case_op("StringUpper", bytes.upper, str.upper)

register_op("StringStrip", inputs=["input: string"], outputs=["output: string"], shape=unchanged_shape,
            doc="Each string without leading and trailing ASCII whitespace.")


@kernel("StringStrip", devices=_CPU)
def _string_strip(ctx, input):
    return _map(input, lambda s: s.strip(_WHITESPACE))


# --- AsString ------------------------------------------------------------------------------------

_AS_STRING_TYPES = ("T: {float32, float64, int32, uint8, int16, int8, int64, bfloat16, uint16, float16, "
                    "uint32, uint64, complex64, complex128, bool, string}")

register_op(
    "AsString",
    inputs=["input: T"],
    outputs=["output: string"],
    attrs=[_AS_STRING_TYPES, "precision: int = -1", "scientific: bool = false", "shortest: bool = false",
           "width: int = -1", "fill: string = ''"],
    shape=unchanged_shape,
    doc="Each element as text, printf-style: %d/%u for integers, %f (%e scientific, %g shortest) "
        "for floats, '(re,im)' for complex, true/false for bools; `width` pads with spaces or the "
        "`fill` flag ('0', '-' to the left, '+', ' ', '#').",
)


def _as_string_format(ctx, dtype) -> tuple[str, str]:
    """(flags+width+precision, conversion) as TF's AsStringOp builds its format, with its checks."""
    a = ctx.attrs
    fill, width, precision = a["fill"], a["width"], a["precision"]
    scientific, shortest = a["scientific"], a["shortest"]
    floating = dtype.is_floating or dtype.is_complex
    checked = not floating and dtype.name != "string"  # a string takes any flags (precision truncates)
    if checked and (scientific or shortest):
        raise ctx.fail(f"scientific and shortest format not supported for datatype {dtype.name}")
    if checked and precision > -1:
        raise ctx.fail(f"precision not supported for datatype {dtype.name}")
    if len(fill) > 1:
        raise ctx.fail("Fill string must be one or fewer characters")
    if scientific and shortest:
        raise ctx.fail("Cannot select both scientific and shortest notation")
    spec = ""
    if fill:
        if fill[0] not in " +-0#":
            raise ctx.fail(f'Fill argument not supported: "{fill}"')
        spec += fill
    if width > -1:
        spec += str(width)
    if precision > -1:
        spec += f".{precision}"
    if floating:
        conv = "g" if shortest else "e" if scientific else "f"
    elif dtype.is_integer:
        conv = "d"
        if dtype.name.startswith("uint"):  # %u ignores the sign flags
            spec = spec.replace("+", "").replace(" ", "")
    else:
        conv = "s"  # bool (true/false), string
    return spec, conv


def _c_float(spec: str, conv: str, x: float) -> str:
    """printf("%" spec conv, x) as glibc prints it: non-finite values as [-]nan/[-]inf, padded with
    spaces even under the '0' flag."""
    if math.isfinite(x):
        return ("%" + spec + conv) % x
    flags = re.match(r"[-+ 0#]*", spec).group(0)
    width = int(re.match(r"\d*", spec[len(flags):]).group(0) or 0)
    sign = "-" if math.copysign(1.0, x) < 0 else "+" if "+" in flags else " " if " " in flags else ""
    text = sign + ("nan" if math.isnan(x) else "inf")
    return text.ljust(width) if "-" in flags else text.rjust(width)


@kernel("AsString", devices=_CPU)
def _as_string(ctx, input):
    dtype = dtypes.as_dtype(ctx.attrs["T"])
    spec, conv = _as_string_format(ctx, dtype)
    arr = np.asarray(input)
    out = np.empty(arr.shape, dtype=object)
    flat, src = out.reshape(-1), arr.reshape(-1)
    if dtype.is_complex:
        for i, v in enumerate(src.tolist()):
            flat[i] = f"({_c_float(spec, conv, v.real)},{_c_float(spec, conv, v.imag)})".encode()
    elif dtype.is_floating:
        for i, v in enumerate(src.astype(np.float64).tolist()):
            flat[i] = _c_float(spec, conv, v).encode()
    elif dtype.is_integer:
        fmt = "%" + spec + conv
        for i, v in enumerate(src.tolist()):
            flat[i] = (fmt % v).encode()
    elif dtype.is_bool:  # no format: true/false whatever the width
        for i, v in enumerate(src.tolist()):
            flat[i] = b"true" if v else b"false"
    else:  # strings: formatted only when a width is given (as TF)
        fmt = ("%" + spec + "s").encode()
        width = ctx.attrs["width"]
        for i, v in enumerate(src.tolist()):
            flat[i] = fmt % _b(v) if width > 0 else _b(v)
    return out


# --- StringToNumber ------------------------------------------------------------------------------

register_op(
    "StringToNumber",
    inputs=["string_tensor: string"],
    outputs=["output: out_type"],
    attrs=["out_type: {float32, float64, int32, int64, uint32, uint64} = float32"],
    shape=unchanged_shape,
    doc="Each string parsed as a number of `out_type` (surrounding whitespace allowed); a string "
        "that is not one fails the step, naming it.",
)

_DECIMAL = re.compile(rb"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_SPECIAL = re.compile(rb"([+-]?)(inf|infinity|nan)", re.IGNORECASE)
_HEX = re.compile(rb"([+-]?)0[xX]([0-9a-fA-F]+(\.[0-9a-fA-F]*)?|\.[0-9a-fA-F]+)([pP][+-]?\d+)?")
_INTEGER = re.compile(rb"[+-]?\d+")


def parse_float(s: bytes) -> float | None:
    t = s.strip(_WHITESPACE)
    if _DECIMAL.fullmatch(t):
        return float(t)
    m = _SPECIAL.fullmatch(t)
    if m:
        v = math.nan if m.group(2).lower() == b"nan" else math.inf
        return -v if m.group(1) == b"-" else v
    m = _HEX.fullmatch(t)
    if m:
        v = float.fromhex(t.lstrip(b"+-").decode() + ("" if m.group(4) else "p0"))
        return -v if m.group(1) == b"-" else v
    return None


def parse_int(s: bytes, lo: int, hi: int) -> int | None:
    t = s.strip(_WHITESPACE)
    if not _INTEGER.fullmatch(t):
        return None
    v = int(t)
    return v if lo <= v <= hi else None


@kernel("StringToNumber", devices=_CPU)
def _string_to_number(ctx, string_tensor):
    dtype = dtypes.as_dtype(ctx.attrs["out_type"])
    arr = _strings(string_tensor)
    out = np.empty(arr.shape, dtype=dtype.numpy)
    flat = out.reshape(-1)
    info = None if dtype.is_floating else np.iinfo(dtype.numpy)
    with np.errstate(over="ignore"):  # a float32 overflow is inf, as TF's parser gives
        _parse_into(ctx, arr, flat, info)
    return out


def _parse_into(ctx, arr, flat, info) -> None:
    for i, s in enumerate(arr.reshape(-1).tolist()):
        s = _b(s)
        v = parse_float(s) if info is None else parse_int(s, int(info.min), int(info.max))
        if v is None:
            raise ctx.fail(f"StringToNumberOp could not correctly convert string: {s.decode('utf-8', 'replace')}")
        flat[i] = v


# --- Substr --------------------------------------------------------------------------------------


def _substr_shape(ic: InferenceContext) -> list[Shape]:
    pos, ln = ic.shape(1), ic.shape(2)
    if pos.rank is not None and ln.rank is not None and not pos.is_compatible_with(ln):
        raise ic.fail(f"pos and len should have the same shape, got: {pos} vs. {ln}")
    try:
        return [broadcast_shapes(ic.shape(0), pos)]
    except ValueError:
        raise ic.fail(f"Incompatible shapes: {ic.shape(0)} vs. {pos}") from None


register_op(
    "Substr",
    inputs=["input: string", "pos: T", "len: T"],
    outputs=["output: string"],
    attrs=["T: {int32, int64}", "unit: {'BYTE', 'UTF8_CHAR'} = 'BYTE'"],
    shape=_substr_shape,
    doc="input[pos:pos + len] of each string (bytes or UTF-8 characters; a negative pos counts from "
        "the end); pos and len, of one shape, broadcast against input.",
)


def _utf8_starts(s: bytes) -> list[int]:
    return [i for i, c in enumerate(s) if c & 0xC0 != 0x80]


def _substr_utf8(s: bytes, pos: int, ln: int) -> bytes | None:
    starts = _utf8_starts(s)
    n = len(starts)
    if pos < 0:
        pos += n
    if not 0 <= pos <= n:
        return None
    if ln <= 0:
        return b""
    bounds = starts + [len(s)]
    return s[bounds[pos]:bounds[min(n, pos + ln)]]


@kernel("Substr", devices=_CPU)
def _substr(ctx, input, pos, length):
    arr, p, n = _strings(input), np.asarray(pos), np.asarray(length)
    if p.shape != n.shape:
        raise ctx.fail(f"pos and len should have the same shape, got: {Shape(p.shape)} vs. {Shape(n.shape)}")
    try:
        shape = np.broadcast_shapes(arr.shape, p.shape)
    except ValueError:
        raise ctx.fail(f"Incompatible shapes: {Shape(arr.shape)} vs. {Shape(p.shape)}") from None
    strs = np.broadcast_to(arr, shape).reshape(-1).tolist()
    ps = np.broadcast_to(p, shape).reshape(-1).tolist()
    ns = np.broadcast_to(n, shape).reshape(-1).tolist()
    out = np.empty(shape, dtype=object)
    flat = out.reshape(-1)
    utf8 = ctx.attrs["unit"] == "UTF8_CHAR"
    for i, (s, a, k) in enumerate(zip(strs, ps, ns)):
        s = _b(s)
        if utf8:
            sub = _substr_utf8(s, a, k)
            if sub is None:
                raise ctx.fail(f"pos {a} out of range for string at index {i}")
        else:
            if abs(a) > len(s):
                raise ctx.fail(f"pos {a} out of range for string b'{s.decode('utf-8', 'replace')}' at index {i}")
            start = a + len(s) if a < 0 else a
            sub = s[start:] if k < 0 else s[start:start + k]
        flat[i] = sub
    return out



# --- ReduceJoin ----------------------------------------------------------------------------------


def _reduce_join_shape(ic: InferenceContext) -> list[Shape]:
    x = ic.shape(0)
    axes = ic.value(1)
    if axes is None or x.rank is None:
        return [Shape.unknown()]
    rank = x.rank
    reduced = set(_join_dims(ic, axes, rank))
    keep = ic.attr("keep_dims")
    return [Shape([1 if d in reduced else x[d] for d in range(rank)] if keep
                  else [x[d] for d in range(rank) if d not in reduced])]


def _join_dims(c, axes, rank: int) -> list[int]:
    """ReduceJoin's dimensions in the order listed, made non-negative; TF's errors for one out of
    range or repeated (``c``: the shape function's or the kernel's context)."""
    order: list[int] = []
    for a in np.asarray(axes).reshape(-1).tolist():
        r = a + rank if a < 0 else a
        if not 0 <= r < rank:
            raise c.fail(f"Invalid reduction dimension {a} for input with {rank} dimension(s)")
        if r in order:
            raise c.fail(f"Duplicate reduction dimension {r}")
        order.append(r)
    return order


register_op(
    "ReduceJoin",
    inputs=["inputs: string", "reduction_indices: int32"],
    outputs=["output: string"],
    attrs=["keep_dims: bool = false", "separator: string = ''"],
    shape=_reduce_join_shape,
    doc="Joins the strings along `reduction_indices` with `separator` (the first listed dimension "
        "varies fastest); no indices: nothing is reduced.",
)


@kernel("ReduceJoin", devices=_CPU)
def _reduce_join(ctx, inputs, reduction_indices):
    arr = _strings(inputs)
    rank = arr.ndim
    order = _join_dims(ctx, reduction_indices, rank)
    kept = [d for d in range(rank) if d not in order]
    perm = kept + order[::-1]  # the last listed dimension outermost among the joined ones
    moved = np.transpose(arr, perm)
    out_shape = [arr.shape[d] for d in kept]
    rows = moved.reshape(int(np.prod(out_shape, dtype=np.int64)), -1) if arr.size else None
    sep = _attr_bytes(ctx.attrs["separator"])
    out = np.empty(out_shape, dtype=object)
    flat = out.reshape(-1)
    for i in range(flat.size):
        flat[i] = sep.join(_b(s) for s in rows[i].tolist()) if rows is not None else b""
    if ctx.attrs["keep_dims"]:
        out = out.reshape([1 if d in order else arr.shape[d] for d in range(rank)])
    return out


# --- StringSplitV2, StringNGrams -----------------------------------------------------------------


def _split_shape(ic: InferenceContext) -> list[Shape]:
    if ic.shape(0).rank not in (None, 1):
        raise ic.fail(f"input must be a vector, got shape: {ic.shape(0)}")
    if ic.shape(1).rank not in (None, 0):
        raise ic.fail(f"sep must be a scalar, got shape: {ic.shape(1)}")
    return [Shape([None, 2]), Shape([None]), Shape([2])]


register_op(
    "StringSplitV2",
    inputs=["input: string", "sep: string"],
    outputs=["indices: int64", "values: string", "shape: int64"],
    attrs=["maxsplit: int = -1"],
    shape=_split_shape,
    doc="Splits each string of the vector `input` at `sep` (empty: at runs of whitespace, as "
        "Python's str.split()), at most `maxsplit` times, as a SparseTensor [batch, most pieces].",
)


def _split_v2(text: bytes, sep: bytes | None, maxsplit: int) -> list[bytes]:
    """TF's SplitV2: Python's str.split, except that whitespace splitting (sep None) that reaches
    `maxsplit` keeps the rest after its leading whitespace, even when that is empty."""
    if maxsplit == 0:
        return [text]
    if sep is not None:
        return text.split(sep, maxsplit)
    out: list[bytes] = []
    text = text.lstrip(_WHITESPACE)
    while text:
        cut = next((i for i, c in enumerate(text) if c in _WHITESPACE), len(text))
        out.append(text[:cut])
        text = text[cut:].lstrip(_WHITESPACE)
        if 0 < maxsplit == len(out):
            out.append(text)
            break
    return out


@kernel("StringSplitV2", devices=_CPU)
def _string_split_v2(ctx, input, sep):
    arr = _strings(input)
    if arr.ndim != 1:
        raise ctx.fail(f"input must be a vector, got shape: [{','.join(map(str, arr.shape))}]")
    s = np.asarray(sep, dtype=object)
    if s.ndim != 0:
        raise ctx.fail(f"sep must be a scalar, got shape: [{','.join(map(str, s.shape))}]")
    sep_b = _b(s.item()) or None
    maxsplit = ctx.attrs["maxsplit"]
    indices, values, widest = [], [], 0
    for row, text in enumerate(arr.tolist()):
        parts = _split_v2(_b(text), sep_b, maxsplit)
        indices.extend((row, j) for j in range(len(parts)))
        values.extend(parts)
        widest = max(widest, len(parts))
    idx = np.array(indices, dtype=np.int64).reshape(-1, 2)
    vals = np.empty(len(values), dtype=object)
    vals[:] = values
    return idx, vals, np.array([arr.shape[0], widest], dtype=np.int64)


def _ngrams_shape(ic: InferenceContext) -> list[Shape]:
    if ic.shape(0).rank not in (None, 1):
        raise ic.fail(f"data must be a vector, got shape: {ic.shape(0)}")
    if ic.shape(1).rank not in (None, 1):
        raise ic.fail(f"data_splits must be a vector, got shape: {ic.shape(1)}")
    return [Shape([None]), ic.shape(1)]


register_op(
    "StringNGrams",
    inputs=["data: string", "data_splits: Tsplits"],
    outputs=["ngrams: string", "ngrams_splits: Tsplits"],
    attrs=["separator: string", "ngram_widths: list(int) >= 0", "left_pad: string", "right_pad: string",
           "pad_width: int", "preserve_short_sequences: bool", "Tsplits: {int32, int64} = int64"],
    shape=_ngrams_shape,
    doc="The n-grams of each row of a ragged string tensor (tf.strings.ngrams), with TF's padding.",
)


@kernel("StringNGrams", devices=_CPU)
def _string_ngrams(ctx, data, data_splits):
    a = ctx.attrs
    sep, lpad, rpad = (_attr_bytes(a[k]) for k in ("separator", "left_pad", "right_pad"))
    widths, pad_attr, preserve = a["ngram_widths"], a["pad_width"], a["preserve_short_sequences"]
    tokens = [_b(t) for t in _strings(data).tolist()]
    splits = np.asarray(data_splits).tolist()
    if splits and (splits[0] != 0 or splits[-1] != len(tokens) or any(x > y for x, y in zip(splits, splits[1:]))):
        raise ctx.fail(f"Invalid split values: data_splits must start at 0, not decrease and end at the "
                       f"data's size {len(tokens)}; got {splits}")

    def pad_of(width: int) -> int:
        return min(pad_attr if pad_attr >= 0 else width - 1, width - 1)

    def count(length: int, width: int) -> int:
        return max(0, length + 2 * pad_of(width) - width + 1)

    def make(start: int, pad: int, num: int, width: int) -> list[bytes]:
        out = []
        for k in range(num):
            left = max(0, pad - k)
            right = max(0, pad - (num - (k + 1)))
            take = width - (left + right)
            first = 0 if left > 0 else k - pad
            out.append(sep.join([lpad] * left + tokens[start + first:start + first + take] + [rpad] * right))
        return out

    grams: list[bytes] = []
    out_splits = [0]
    for i in range(max(0, len(splits) - 1)):
        start, length = splits[i], splits[i + 1] - splits[i]
        row: list[bytes] = []
        for w in widths:
            row += make(start, pad_of(w), count(length, w), w)
        if preserve and not row and length > 0:
            row = make(start, pad_attr, 1, length + 2 * pad_attr)
        grams += row
        out_splits.append(out_splits[-1] + len(row))
    out = np.empty(len(grams), dtype=object)
    out[:] = grams
    return out, np.array(out_splits, dtype=np.asarray(data_splits).dtype)


# --- Hashes --------------------------------------------------------------------------------------


def _bucket_op(name: str, extra_attrs: list[str], doc: str, hash_fn) -> None:
    register_op(name, inputs=["input: string"], outputs=["output: int64"],
                attrs=["num_buckets: int >= 1", *extra_attrs], shape=unchanged_shape, doc=doc)

    @kernel(name, devices=_CPU)
    def _bucket(ctx, input):
        n = ctx.attrs["num_buckets"]
        h = hash_fn(ctx)
        return _map(input, lambda s: h(s) % n, np.int64)


_bucket_op("StringToHashBucketFast", [], "farmhash Fingerprint64 of each string, mod num_buckets.",
           lambda ctx: fingerprint64)


def _strong(ctx):
    key = ctx.attrs["key"]
    if len(key) != 2:
        raise ctx.fail(f"Invalid key: {list(key)}, key must have exactly 2 elements")
    return lambda s: siphash24((key[0], key[1]), s)


_bucket_op("StringToHashBucketStrong", ["key: list(int)"],
           "SipHash-2-4 of each string under the 128-bit `key`, mod num_buckets.", _strong)


def _fingerprint_shape(ic: InferenceContext) -> list[Shape]:
    x = ic.shape(0)
    if x.rank == 0:
        raise ic.fail("data must have rank at least one, got 0")
    return [Shape([x[0] if x.rank is not None else None, 8])]


register_op(
    "Fingerprint",
    inputs=["data: T", "method: string"],
    outputs=["fingerprint: uint8"],
    attrs=["T: type"],
    shape=_fingerprint_shape,
    doc="An 8-byte farmhash64 fingerprint of each row (first dimension) of `data`: of its bytes, or "
        "for strings of the string (one per row) or of its strings' fingerprints.",
)


def _fp_bytes(s: bytes) -> bytes:
    return struct.pack("<Q", fingerprint64(s))


@kernel("Fingerprint", devices=_CPU, host_inputs=(0, 1))
def _fingerprint(ctx, data, method):
    m = np.asarray(method, dtype=object)
    if m.ndim != 0:
        raise ctx.fail(f"`method` should be a scalar string: {Shape(m.shape)}")
    if _b(m.item()) != b"farmhash64":
        raise ctx.fail(f"Unsupported fingerprint method: {_b(m.item()).decode('utf-8', 'replace')}")
    arr = np.asarray(data)
    if arr.ndim == 0:
        raise ctx.fail("`data` should have at least one dimension: []")
    rows = arr.shape[0]
    out = np.empty((rows, 8), dtype=np.uint8)
    if arr.dtype == object:
        per_row = arr.reshape(rows, -1) if rows else arr.reshape(0, 0)
        for r in range(rows):
            items = [_b(s) for s in per_row[r].tolist()]
            fp = _fp_bytes(items[0]) if len(items) == 1 else _fp_bytes(b"".join(_fp_bytes(s) for s in items))
            out[r] = np.frombuffer(fp, np.uint8)
    else:
        flat = np.ascontiguousarray(arr).reshape(rows, -1)
        for r in range(rows):
            out[r] = np.frombuffer(_fp_bytes(flat[r].tobytes()), np.uint8)
    return out


# --- RaggedBincount ------------------------------------------------------------------------------


def _ragged_bincount_shape(ic: InferenceContext) -> list[Shape]:
    splits = ic.shape(0)
    size = ic.value(2)
    rows = splits[0] - 1 if splits.rank == 1 and splits[0] is not None else None
    return [Shape([rows, int(np.asarray(size).reshape(-1)[0]) if size is not None else None])]


register_op(
    "RaggedBincount",
    inputs=["splits: int64", "values: Tidx", "size: Tidx", "weights: T"],
    outputs=["output: T"],
    attrs=["Tidx: {int32, int64}", "T: {int32, int64, float32, float64}", "binary_output: bool = false"],
    shape=_ragged_bincount_shape,
    doc="Per row of a ragged tensor (row splits, values): counts of each value below `size` "
        "(weighted by `weights` unless empty; 1 where present with binary_output).",
)


@kernel("RaggedBincount", devices=_CPU, host_inputs=(0, 1, 2, 3))
def _ragged_bincount(ctx, splits, values, size, weights):
    sp, vals, w = np.asarray(splits), np.asarray(values), np.asarray(weights)
    n = np.asarray(size)
    if n.ndim != 0:
        raise ctx.fail(f"Shape must be rank 0 but is rank {n.ndim} for size")
    n = int(n)
    if n < 0:
        raise ctx.fail(f"size ({n}) must be non-negative")
    if sp.ndim != 1 or sp.size == 0:
        raise ctx.fail("Splits must be non-empty")
    if sp[0] != 0:
        raise ctx.fail(f"Splits must start with 0, not with {sp[0]}")
    if sp[-1] != vals.size:
        raise ctx.fail(f"Splits must end with the number of values, got {sp[-1]} instead of {vals.size}")
    if np.any(np.diff(sp) < 0):
        raise ctx.fail("Splits must be non-decreasing")
    if w.size and w.shape != vals.shape:
        raise ctx.fail(f"weights and values must have the same shape. Weight shape: {Shape(w.shape)}; "
                       f"values shape: {Shape(vals.shape)}")
    if vals.size and vals.min() < 0:
        raise ctx.fail(f"Input must be non-negative. Got {int(vals.min())}")
    dtype = dtypes.as_dtype(ctx.attrs["T"]).numpy
    rows = np.repeat(np.arange(sp.size - 1), np.diff(sp))
    out = np.zeros((sp.size - 1, n), dtype=dtype)
    keep = vals.reshape(-1) < n
    r, c = rows[keep], vals.reshape(-1)[keep]
    if ctx.attrs["binary_output"]:
        out[r, c] = 1
    else:
        np.add.at(out, (r, c), w.reshape(-1)[keep] if w.size else 1)
    return out


not_differentiable("StringLength", "StringLower", "StringUpper", "StringStrip", "AsString", "StringToNumber",
                   "Substr", "ReduceJoin", "StringSplitV2", "StringNGrams", "StringToHashBucketFast", "StringToHashBucketStrong",
                   "Fingerprint", "RaggedBincount")
