"""AutoGraph: Python ``if``/``while``/``for``, ``break``/``continue``, ``and``/``or``/``not`` and
early ``return`` on tensors inside ``sf.function``, as TensorFlow 2 converts them.

``convert(fn)`` rewrites the function's source (Python's ``ast``, by ``autograph_ast.py``) once,
and compiles it with the function's own globals and closure cells: each ``if`` becomes
``ag__.if_stmt`` over two branch functions, each loop ``ag__.while_stmt``/``ag__.for_stmt`` over a
body function, the variables they assign read and written through a get/set-state pair, and
``and``/``or``/``not``/``x if c else y``/``print``/``range``/``len`` calls to helpers that decide
when they run. What to build is decided then, by value (``autograph_runtime.py``): a Python
condition runs plain Python (so Python loops unroll, as before); a traced tensor builds
sf.cond/sf.while_loop. ``break`` and ``continue`` become flags guarding the statements after
them (and the loop's condition); a ``return`` at the end of an ``if``'s branches becomes an
assignment and one ``return`` after it. Functions the converted code calls are converted in
turn (not specflow's, numpy's or the standard library's). Anything AutoGraph cannot convert
(no source, a lambda) runs as written, with the usual one-line error at a tensor used as a bool.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import sys
import textwrap
import types
import weakref

from specflow.api.autograph_ast import convert_function_node, needs_conversion

_converted: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _Unconvertible(Exception):
    pass


def _source_node(fn):
    if hasattr(fn, "__wrapped__"):  # a decorator's wrapper: its source is not the code that runs
        raise _Unconvertible("a wrapper")
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise _Unconvertible(str(e)) from None
    if first != fn.__code__.co_firstlineno or inspect.getsourcefile(fn) != fn.__code__.co_filename:
        raise _Unconvertible("the source found is not the function's")
    src = textwrap.dedent("".join(lines))
    try:
        tree = ast.parse(src)
    except SyntaxError as e:  # a lambda's line, a decorator expression cut off
        raise _Unconvertible(str(e)) from None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef) or node.name != fn.__name__:
        raise _Unconvertible("not a def statement")
    ast.increment_lineno(tree, first - 1)
    return node


def _fix_super(node, first_arg: str | None) -> bool:
    """Zero-argument ``super()`` needs the compiler's ``__class__`` cell: make it explicit."""
    used = False
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super" and not n.args:
            if first_arg is None:
                raise _Unconvertible("super() without a first argument")
            n.args = [ast.Name(id="__class__", ctx=ast.Load()), ast.Name(id=first_arg, ctx=ast.Load())]
            used = True
    return used


def convert(fn):
    """``fn`` with AutoGraph's conversion (cached); ``fn`` itself where it cannot be converted."""
    if isinstance(fn, types.MethodType):
        inner = convert(fn.__func__)
        return fn if inner is fn.__func__ else types.MethodType(inner, fn.__self__)
    if not isinstance(fn, types.FunctionType) or getattr(fn, "__ag_converted__", False):
        return fn
    hit = _converted.get(fn)
    if hit is not None:
        return hit
    try:
        out = _convert(fn)
    except _Unconvertible:
        out = fn
    _converted[fn] = out
    return out


def _convert(fn):
    from specflow.api import autograph_runtime

    node = _source_node(fn)
    if not needs_conversion(node):
        raise _Unconvertible("nothing to convert")
    node.decorator_list = []
    params = [a.arg for a in node.args.posonlyargs + node.args.args]
    uses_super = _fix_super(node, params[0] if params else None)
    node = convert_function_node(node, [0])
    free = list(fn.__code__.co_freevars)
    if uses_super and "__class__" not in free:
        raise _Unconvertible("super() outside a class")
    factory_params = ["ag__"] + [f for f in free if f != "ag__"]
    factory = ast.FunctionDef(
        name="ag__factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in factory_params], vararg=None,
                           kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[node, ast.Return(value=ast.Name(id=node.name, ctx=ast.Load()))], decorator_list=[], returns=None, type_params=[])
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    filename = inspect.getsourcefile(fn) or "<autograph>"
    try:
        code = compile(module, filename, "exec")
    except SyntaxError as e:
        raise _Unconvertible(str(e)) from None
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    inner = next(c for c in factory_code.co_consts if isinstance(c, types.CodeType) and c.co_name == fn.__name__)
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    closure = []
    for name in inner.co_freevars:
        if name == "ag__":
            closure.append(types.CellType(autograph_runtime))
        elif name in cells:
            closure.append(cells[name])
        else:
            raise _Unconvertible(f"free variable {name}")
    out = types.FunctionType(inner, fn.__globals__, fn.__name__, fn.__defaults__, tuple(closure) or None)
    out.__kwdefaults__ = fn.__kwdefaults__
    out.__dict__.update(fn.__dict__)
    out.__wrapped__ = fn
    out.__doc__, out.__qualname__, out.__module__ = fn.__doc__, fn.__qualname__, fn.__module__
    out.__ag_converted__ = True
    return out


_SKIP_MODULES = ("specflow", "numpy", "builtins", "functools", "typing", "collections", "abc")


def convertible_callee(f) -> bool:
    """A user's Python function: converted when the converted code calls it."""
    fn = f.__func__ if isinstance(f, types.MethodType) else f
    if not isinstance(fn, types.FunctionType) or getattr(fn, "__ag_converted__", False):
        return False
    mod = getattr(fn, "__module__", "") or ""
    if mod.split(".")[0] in _SKIP_MODULES:
        return False
    path = fn.__code__.co_filename
    stdlib = (sys.base_prefix, sys.prefix)
    if "site-packages" in path or "dist-packages" in path or any(path.startswith(p + "/lib/") for p in stdlib):
        return False
    return fn.__name__ != "<lambda>"


BUILTIN_RANGE, BUILTIN_LEN, BUILTIN_PRINT = builtins.range, builtins.len, builtins.print
