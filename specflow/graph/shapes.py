"""Static tensor shapes with unknown dimensions (``None``) and unknown rank."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


class Shape:
    """An immutable, possibly partial shape. ``Shape(None)`` has unknown rank."""

    __slots__ = ("dims",)

    def __init__(self, dims: Iterable[int | None] | None):
        if dims is None or (isinstance(dims, Shape) and dims.dims is None):
            self.dims = None
        else:
            out = []
            for d in dims:
                if d is None or (isinstance(d, int) and d < 0):
                    out.append(None)
                else:
                    out.append(int(d))
            self.dims: tuple[int | None, ...] | None = tuple(out)

    @classmethod
    def unknown(cls) -> Shape:
        return cls(None)

    @classmethod
    def scalar(cls) -> Shape:
        return cls(())

    @classmethod
    def unknown_of_rank(cls, rank: int) -> Shape:
        return cls([None] * rank)

    @property
    def rank(self) -> int | None:
        return None if self.dims is None else len(self.dims)

    @property
    def is_fully_defined(self) -> bool:
        return self.dims is not None and all(d is not None for d in self.dims)

    def num_elements(self) -> int | None:
        if not self.is_fully_defined:
            return None
        n = 1
        for d in self.dims:
            n *= d
        return n

    def as_list(self) -> list[int | None] | None:
        return None if self.dims is None else list(self.dims)

    def __getitem__(self, i):
        if self.dims is None:
            return None
        return self.dims[i]

    def __len__(self) -> int:
        if self.dims is None:
            raise ValueError("shape of unknown rank has no length")
        return len(self.dims)

    def __iter__(self):
        if self.dims is None:
            raise ValueError("cannot iterate over a shape of unknown rank")
        return iter(self.dims)

    def __eq__(self, other) -> bool:
        other = as_shape(other) if not isinstance(other, Shape) else other
        return self.dims == other.dims

    def __hash__(self) -> int:
        return hash(self.dims)

    def __str__(self) -> str:
        if self.dims is None:
            return "<unknown>"
        return "[" + ", ".join("?" if d is None else str(d) for d in self.dims) + "]"

    __repr__ = __str__

    def is_compatible_with(self, other: Shape) -> bool:
        other = as_shape(other)  # a list or tuple too (TensorFlow's TensorShape takes them)
        if self.dims is None or other.dims is None:
            return True
        if len(self.dims) != len(other.dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self.dims, other.dims))

    def merge_with(self, other: Shape) -> Shape:
        """The most specific shape compatible with both; ValueError if incompatible."""
        if self.dims is None:
            return other
        if other.dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"shapes {self} and {other} are incompatible")
        return Shape(a if a is not None else b for a, b in zip(self.dims, other.dims))

    def with_rank(self, rank: int) -> Shape:
        """Self with the rank checked (or fixed, if unknown); ValueError on mismatch."""
        if self.dims is None:
            return Shape.unknown_of_rank(rank)
        if len(self.dims) != rank:
            raise ValueError(f"expected rank {rank}, got shape {self}")
        return self

    def concatenate(self, other: Shape) -> Shape:
        if self.dims is None or other.dims is None:
            return Shape(None)
        return Shape(self.dims + other.dims)

    def to_json(self) -> list[int | None] | None:
        return self.as_list()


def as_shape(value) -> Shape:
    """Accepts a Shape, None (unknown rank) or a sequence of ints / None / -1."""
    if isinstance(value, Shape):
        return value
    if value is None:
        return Shape(None)
    if isinstance(value, (int,)):
        raise TypeError(f"a shape is a list of dimensions, got {value!r}")
    return Shape(list(value))


def broadcast_shapes(a: Shape, b: Shape) -> Shape:
    """numpy broadcasting on partial shapes; ValueError when statically incompatible."""
    if a.dims is None or b.dims is None:
        return Shape(None)
    rank = max(len(a.dims), len(b.dims))
    da = (1,) * (rank - len(a.dims)) + a.dims
    db = (1,) * (rank - len(b.dims)) + b.dims
    out: list[int | None] = []
    for x, y in zip(da, db):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            # One side unknown, the other a known non-1 size: the result is that size
            # (an unknown 1 would broadcast, anything else must match).
            out.append(x if y is None else y)
        elif x == y:
            out.append(x)
        else:
            raise ValueError(f"shapes {a} and {b} cannot be broadcast together")
    return Shape(out)


def normalize_axis(axis: int, rank: int) -> int:
    """Negative axes count from the end; ValueError when out of range."""
    if not -rank <= axis < max(rank, 1) or (rank == 0 and axis not in (0, -1)):
        raise ValueError(f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def shape_of_dims(dims: Sequence[int | None] | None) -> Shape:
    return Shape(dims)
