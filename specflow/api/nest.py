"""``sf.nest``: TensorFlow's tf.nest on plain Python structures.

Lists, tuples, namedtuples and mappings (dicts, OrderedDicts) are structure; everything else
(tensors, arrays, None, strings, numbers) is a leaf. A mapping's values go in sorted-key order,
as TensorFlow orders them; ``pack_sequence_as`` rebuilds a mapping in its own key order.
"""

from __future__ import annotations

from collections.abc import Mapping


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def is_nested(seq) -> bool:
    """Whether ``seq`` is a structure (list, tuple, namedtuple, mapping), not a leaf."""
    return isinstance(seq, (list, tuple, Mapping))


def _sorted_keys(m: Mapping) -> list:
    try:
        return sorted(m)
    except TypeError:
        raise TypeError("nest only supports dicts with sortable keys") from None


def _children(x) -> list:
    if isinstance(x, Mapping):
        return [x[k] for k in _sorted_keys(x)]
    return list(x)


def flatten(structure, expand_composites: bool = False) -> list:
    """The leaves of ``structure``, depth first (a mapping's values by sorted key)."""
    if not is_nested(structure):
        return [structure]
    out: list = []
    for child in _children(structure):
        out.extend(flatten(child))
    return out


def _sequence_like(instance, values: list):
    if isinstance(instance, Mapping):
        by_key = dict(zip(_sorted_keys(instance), values))
        items = [(k, by_key[k]) for k in instance]
        if type(instance) is dict:
            return dict(items)
        try:
            return type(instance)(items)
        except TypeError:  # a mapping whose constructor takes no items: a plain dict
            return dict(items)
    if _is_namedtuple(instance):
        return type(instance)(*values)
    if isinstance(instance, tuple):
        return tuple(values) if type(instance) is tuple else type(instance)(values)
    return type(instance)(values) if type(instance) is not list else list(values)


def pack_sequence_as(structure, flat_sequence, expand_composites: bool = False):
    """``flat_sequence``'s leaves put into the shape of ``structure`` (TF's inverse of flatten)."""
    flat = list(flat_sequence)
    if not is_nested(structure):
        if len(flat) != 1:
            raise ValueError(f"structure is a leaf, but flat_sequence has {len(flat)} elements")
        return flat[0]
    need = len(flatten(structure))
    if need != len(flat):
        raise ValueError(f"could not pack a sequence of {len(flat)} elements into a structure of {need} leaves")
    it = iter(flat)

    def build(s):
        if not is_nested(s):
            return next(it)
        return _sequence_like(s, [build(c) for c in _children(s)])

    return build(structure)


def _same_type(a, b) -> bool:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return True  # TF treats dict-like types as one kind
    if _is_namedtuple(a) or _is_namedtuple(b):
        return (_is_namedtuple(a) and _is_namedtuple(b) and type(a).__name__ == type(b).__name__
                and type(a)._fields == type(b)._fields)
    return type(a) is type(b)


def assert_same_structure(nest1, nest2, check_types: bool = True, expand_composites: bool = False) -> None:
    """ValueError if the two differ in nesting or lengths (or a mapping's keys); TypeError if
    ``check_types`` and a sequence's type differs (a list where the other has a tuple)."""

    def walk(a, b, path: str) -> None:
        na, nb = is_nested(a), is_nested(b)
        if na != nb:
            raise ValueError(f"The two structures don't have the same nested structure at {path or 'the root'}: "
                             f"{type(a).__name__} vs {type(b).__name__}")
        if not na:
            return
        if check_types and not _same_type(a, b):
            raise TypeError(f"The two structures don't have the same sequence type at {path or 'the root'}: "
                            f"{type(a).__name__} vs {type(b).__name__}")
        if isinstance(a, Mapping) != isinstance(b, Mapping):
            raise ValueError(f"The two structures don't have the same nested structure at {path or 'the root'}")
        if isinstance(a, Mapping) and set(a) != set(b):
            raise ValueError(f"The two dictionaries don't have the same set of keys at {path or 'the root'}: "
                             f"{_sorted_keys(a)} vs {_sorted_keys(b)}")
        ca, cb = _children(a), _children(b)
        if len(ca) != len(cb):
            raise ValueError(f"The two structures don't have the same number of elements at {path or 'the root'}: "
                             f"{len(ca)} vs {len(cb)}")
        keys = _sorted_keys(a) if isinstance(a, Mapping) else range(len(ca))
        for k, x, y in zip(keys, ca, cb):
            walk(x, y, f"{path}[{k!r}]")

    walk(nest1, nest2, "")


def map_structure(func, *structure, check_types: bool = True, expand_composites: bool = False):
    """``func`` applied to the matching leaves of one or more structures of the same shape; the
    result has the first structure's shape."""
    if not structure:
        raise ValueError("map_structure needs at least one structure")
    for other in structure[1:]:
        assert_same_structure(structure[0], other, check_types=check_types)
    flats = [flatten(s) for s in structure]
    return pack_sequence_as(structure[0], [func(*xs) for xs in zip(*flats)])
