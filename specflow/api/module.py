"""sf.Module: a Python object tracking the variables and submodules assigned to its attributes
(directly, or inside lists, tuples and dicts), named by attribute path for checkpoints."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


class Module:
    def __init__(self, name: str | None = None):
        self._module_name = name or _snake(type(self).__name__)

    @property
    def name(self) -> str:
        return getattr(self, "_module_name", _snake(type(self).__name__))

    @property
    def name_scope(self):
        """This module's name scope (absolute: "name/"), as TensorFlow's ``Module.name_scope``."""
        from specflow.api.tf_core_names import name_scope

        return name_scope(self.name + "/")

    @classmethod
    def with_name_scope(cls, method):
        """Decorates a method to run inside the module's name scope (TF's ``Module.with_name_scope``):
        inside ``sf.function`` its nodes are named "module_name/..."."""

        @functools.wraps(method)
        def scoped(self, *args, **kwargs):
            with self.name_scope:
                return method(self, *args, **kwargs)

        return scoped

    def _walk(self, seen: set[int] | None = None, prefix: str = "") -> Iterator[tuple[str, object]]:
        """(attribute path, value) for every variable and module reachable from this one's
        attributes, depth first in attribute-name order; each object once."""
        from specflow.api.variables import Variable

        seen = {id(self)} if seen is None else seen

        def visit(path: str, value) -> Iterator[tuple[str, object]]:
            if isinstance(value, (Variable, Module)):
                if id(value) in seen:
                    return
                seen.add(id(value))
                yield path, value
                if isinstance(value, Module):
                    yield from value._walk(seen, path + "/")
            elif isinstance(value, (list, tuple)):
                for i, v in enumerate(value):
                    yield from visit(f"{path}/{i}", v)
            elif isinstance(value, dict):
                for k in sorted(value, key=str):
                    yield from visit(f"{path}/{k}", value[k])

        for attr in sorted(vars(self)):
            if attr.startswith("_sf_function_") or attr == "_module_name":
                continue
            yield from visit(prefix + attr, vars(self)[attr])

    def named_variables(self) -> dict[str, object]:
        """Attribute path -> variable (``"dense/kernel"``): the names a checkpoint uses."""
        from specflow.api.variables import Variable

        return {p: v for p, v in self._walk() if isinstance(v, Variable)}

    @property
    def variables(self) -> tuple:
        return tuple(self.named_variables().values())

    @property
    def trainable_variables(self) -> tuple:
        return tuple(v for v in self.variables if v.trainable)

    @property
    def submodules(self) -> tuple:
        return tuple(v for _, v in self._walk() if isinstance(v, Module))

    def __repr__(self) -> str:
        return f"<sf.Module '{self.name}': {len(self.variables)} variable(s)>"
