"""TensorFlow's core names beyond ops: ``sf.name_scope`` (node names inside ``sf.function``),
``sf.TensorShape`` (specflow's Shape), and the ``sf.dtypes`` namespace (``as_dtype``, ``DType``,
the dtype names)."""

from __future__ import annotations

import threading
import types

from specflow.api.context import STATE
from specflow.graph import dtypes as _dt
from specflow.graph.dtypes import DType
from specflow.graph.dtypes import as_dtype as _as_dtype
from specflow.graph.shapes import Shape

TensorShape = Shape


class _EagerScopes(threading.local):
    def __init__(self) -> None:
        self.stack: list[str] = []


_EAGER = _EagerScopes()


class name_scope:  # noqa: N801 (TensorFlow's name)
    """``with sf.name_scope("block") as scope:``: inside ``sf.function`` the nodes made in it are
    named "block/..." (nested scopes join with "/"; a name taken in the trace becomes "block_1",
    as in TensorFlow; a name ending in "/" is absolute). Eagerly it only gives the scope string
    (TF2's eager ops carry no names). ``scope`` is the full scope, ending in "/"."""

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise TypeError(f"name_scope takes a string name, got {type(name).__name__}")
        self._name = name
        self._exit = None

    @property
    def name(self) -> str:
        return self._name

    def __enter__(self) -> str:
        trace = STATE.trace
        if trace is None:
            parts = self._name.rstrip("/") if self._name.endswith("/") else "/".join([*_EAGER.stack, self._name])
            old, _EAGER.stack = _EAGER.stack, [p for p in parts.split("/") if p]
            self._exit = lambda: setattr(_EAGER, "stack", old)
            return "/".join(_EAGER.stack) + "/" if _EAGER.stack else ""
        b = trace.builder
        old = b._scope
        if self._name.endswith("/") or not self._name:
            b._scope = [p for p in self._name.split("/") if p]
        else:
            used = trace.__dict__.setdefault("_sf_scopes", set())
            full = b.scoped(self._name)
            unique, i = full, 0
            while unique in used or b.has_node(unique):
                i += 1
                unique = f"{full}_{i}"
            used.add(unique)
            b._scope = unique.split("/")

        def restore():
            b._scope = old

        self._exit = restore
        return "/".join(b._scope) + "/" if b._scope else ""

    def __exit__(self, *exc) -> None:
        exit_, self._exit = self._exit, None
        exit_()


def _dtypes_namespace() -> types.ModuleType:
    ns = types.ModuleType("specflow.dtypes", "TensorFlow's tf.dtypes: the dtypes, DType and as_dtype.")
    for d in _dt.ALL_DTYPES:
        setattr(ns, d.name, d)
    ns.half, ns.double = _dt.float16, _dt.float64
    ns.DType = DType
    ns.as_dtype = as_dtype
    from specflow.api.tf_array_names import complex as complex_
    from specflow.api.tf_array_names import saturate_cast
    from specflow.api.tf_names import cast

    ns.cast, ns.saturate_cast, ns.complex = cast, saturate_cast, complex_
    return ns


def as_dtype(type_value) -> DType:
    """TF's ``tf.as_dtype``: as specflow's, but Python's ``float`` is float32 and ``complex``
    complex128, as TF maps them (numpy's float64 stays float64)."""
    if type_value is float:
        return _dt.float32
    if type_value is complex:
        return _dt.complex128
    return _as_dtype(type_value)


dtypes = _dtypes_namespace()
