"""Tensors saved in slices: how TensorFlow checkpoints a partitioned variable.

A sliced tensor ``name`` has one index entry under ``name`` with its dtype, its full shape and
the list of its slices (``TensorSliceProto``s, no data), and one ordinary entry per slice under
a binary key: ``OrderedCode`` of 0, the name, the rank, then each dimension's start and length
(-1 for a whole dimension), as ``checkpoint::EncodeTensorNameSlice`` writes it. ``SaveV2`` and
``RestoreV2`` name a slice with a ``shape_and_slices`` string: the full shape's dimensions, then
``start,length`` or ``-`` per dimension joined by ``:`` (``"100 64 0,50:-"``).
"""

from __future__ import annotations

from dataclasses import dataclass

from specflow.errors import CheckpointError
from specflow.io.extra_protos import TensorSliceProto

SLICE_KEY_MARK = b"\x00"  # OrderedCode of the number 0: every slice key begins with it; no name does


@dataclass(frozen=True)
class SliceSpec:
    """Slice ``extents`` ((start, length) per dimension, length -1 for all of it) of the tensor
    ``full_name`` whose shape is ``full_shape``."""

    full_name: str
    full_shape: tuple[int, ...]
    extents: tuple[tuple[int, int], ...]

    @classmethod
    def rows(cls, full_name: str, full_shape, offset: int, rows: int) -> SliceSpec:
        """Rows ``[offset, offset + rows)`` of a tensor split along axis 0 (a partitioned
        variable); the other dimensions spelled out whole, as TensorFlow's ``SaveSliceInfo`` does."""
        full_shape = tuple(int(d) for d in full_shape)
        return cls(full_name, full_shape, ((offset, rows), *((0, d) for d in full_shape[1:])))

    @classmethod
    def parse(cls, full_name: str, text: str) -> SliceSpec:
        """A ``shape_and_slices`` string such as ``"10 4 0,5:-"``."""
        parts = text.split(" ")
        try:
            shape = tuple(int(p) for p in parts[:-1])
            extents = []
            for ext in parts[-1].split(":"):
                if ext == "-":
                    extents.append((0, -1))
                else:
                    start, length = (int(x) for x in ext.split(","))
                    extents.append((start, length))
        except ValueError:
            raise CheckpointError(f"tensor '{full_name}': cannot parse shape_and_slices {text!r}") from None
        spec = cls(full_name, shape, tuple(extents))
        if len(extents) != len(shape) or any(d < 0 for d in shape) or not all(
            s >= 0 and (n == -1 or (n >= 0 and s + n <= d)) for (s, n), d in zip(extents, shape)
        ):
            raise CheckpointError(f"tensor '{full_name}': shape_and_slices {text!r} is not a slice of shape {list(shape)}")
        return spec

    def text(self) -> str:
        exts = ":".join("-" if n == -1 else f"{s},{n}" for s, n in self.extents)
        return " ".join([*(str(d) for d in self.full_shape), exts])

    @property
    def bounds(self) -> list[tuple[int, int]]:
        """(start, end) per dimension."""
        return [(0, d) if n == -1 else (s, s + n) for (s, n), d in zip(self.extents, self.full_shape)]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(e - s for s, e in self.bounds)

    @property
    def is_full(self) -> bool:
        return all(s == 0 and e == d for (s, e), d in zip(self.bounds, self.full_shape))

    def key(self) -> bytes:
        """The slice's own index key (``EncodeTensorNameSlice``)."""
        out = bytearray(SLICE_KEY_MARK)
        out += _ordered_string(self.full_name.encode("utf-8"))
        out += _ordered_unsigned(len(self.extents))
        for s, n in self.extents:
            out += _ordered_signed(s)
            out += _ordered_signed(n)
        return bytes(out)

    def proto(self):
        """Its ``TensorSliceProto`` (a whole dimension is an empty extent, as TensorFlow writes it)."""
        p = TensorSliceProto()
        for s, n in self.extents:
            e = p.extent.add()
            if n != -1:
                e.start, e.length = s, n
        return p

    @classmethod
    def from_proto(cls, full_name: str, full_shape, proto) -> SliceSpec:
        extents = tuple((e.start, e.length) if e.HasField("length") else (0, -1) for e in proto.extent)
        return cls(full_name, tuple(full_shape), extents)


def overlap(want: SliceSpec, stored: SliceSpec) -> tuple[tuple[slice, ...], tuple[slice, ...]] | None:
    """Where slices ``want`` and ``stored`` meet: (the index into ``stored``'s data, the index
    into a ``want``-shaped array), or None when they do not."""
    src, dst = [], []
    for (ws, we), (ss, se) in zip(want.bounds, stored.bounds):
        lo, hi = max(ws, ss), min(we, se)
        if lo >= hi:
            return None
        src.append(slice(lo - ss, hi - ss))
        dst.append(slice(lo - ws, hi - ws))
    return tuple(src), tuple(dst)


# -- OrderedCode (tensorflow/core/lib/strings/ordered_code): order-preserving byte encodings -----


def _ordered_unsigned(value: int) -> bytes:
    """A length byte, then the value big-endian without leading zero bytes."""
    body = value.to_bytes(8, "big").lstrip(b"\x00")
    return bytes([len(body)]) + body


def _ordered_string(data: bytes) -> bytes:
    """0x00 becomes 0x00 0xff and 0xff becomes 0xff 0x00; 0x00 0x01 ends the string."""
    escaped = {0: b"\x00\xff", 255: b"\xff\x00"}
    return b"".join(escaped.get(c, bytes((c,))) for c in data) + b"\x00\x01"


def _ordered_signed(value: int) -> bytes:
    """A sign bit, as many further bits equal to it as there are bytes after the first, a
    delimiting bit, then the value in two's complement: n bytes hold [-2^(7n-1), 2^(7n-1))."""
    magnitude = ~value if value < 0 else value
    n = (magnitude.bit_length() + 7) // 7  # the smallest n with bit_length <= 7n - 1
    raw = bytearray((value & ((1 << (8 * n)) - 1)).to_bytes(n, "big"))
    header = (1 << 16) - (1 << (16 - n))  # n ones from the top of the first two bytes
    raw[0] ^= header >> 8
    if n > 1:
        raw[1] ^= header & 0xFF
    return bytes(raw)
