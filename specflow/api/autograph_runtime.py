"""What AutoGraph's converted code calls (``ag__.*``, api/autograph.py): each decides, by the
values it meets while tracing, between plain Python and sf.cond / sf.while_loop.

A statement's state is the variables its blocks assign. Those holding tensors or Python numbers
become the cond's outputs or the loop's variables (numbers as tensors, as TensorFlow does);
other Python objects must come out of both branches the same; a variable first assigned inside
a branch of a tensor ``if`` (in one branch only) or inside a tensor loop is Undefined after it,
and using it is a one-line error saying why.
"""

from __future__ import annotations

import builtins

import numpy as np

from specflow.api.autograph import BUILTIN_LEN, BUILTIN_PRINT, BUILTIN_RANGE, convert, convertible_callee
from specflow.api.tensor import EagerTensor, GraphTensor, Tensor
from specflow.errors import GraphError


class Undefined:
    """A variable with no value here (see the module's docstring); any use raises."""

    __slots__ = ("name", "why")

    def __init__(self, name: str, why: str = "it is used before it is assigned") -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "why", why)

    def _fail(self, *args, **kwargs):
        raise GraphError(f"variable '{self.name}' has no value here: {self.why}")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        self._fail()

    def __repr__(self) -> str:
        return f"<undefined '{self.name}'>"

    __bool__ = __call__ = __iter__ = __len__ = __getitem__ = __array__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _fail
    __floordiv__ = __mod__ = __pow__ = __neg__ = __lt__ = __le__ = __gt__ = __ge__ = __matmul__ = _fail
    __int__ = __float__ = __index__ = _fail


def get_attr(obj, attr: str, name: str):
    """An attribute the converted block assigns (TF's composite names): Undefined if not set yet."""
    try:
        return getattr(obj, attr)
    except AttributeError:
        return Undefined(name)


def set_attr(obj, attr: str, value) -> None:
    """Set it back. Undefined (the object had no such attribute): the attribute a branch's trace
    set is removed again, so a read after it fails as Python's would."""
    if isinstance(value, Undefined):
        if hasattr(obj, attr):
            try:
                delattr(obj, attr)
            except AttributeError:
                setattr(obj, attr, value)
        return
    setattr(obj, attr, value)


def _is_graph(v) -> bool:
    return isinstance(v, GraphTensor)


def _value(v):
    """A variable's value (as its read inside a trace)."""
    from specflow.api.variables import Variable

    if isinstance(v, Variable):
        return v.read_value()
    return v


def _as_tensor(v):
    """A state value as a cond output or loop variable, or None when it is a Python object."""
    if isinstance(v, Tensor) or getattr(type(v), "_sf_composite", False):
        return v
    if isinstance(v, (bool, int, float, complex, np.ndarray, np.generic)) and not isinstance(v, Undefined):
        from specflow.api.op_functions import to_tensor

        return to_tensor(v)
    return None


def _truth(v) -> bool:
    if isinstance(v, EagerTensor):
        return bool(v.numpy())
    return bool(v)


def _where(line: int) -> str:
    return f"line {line}"


# --- if ------------------------------------------------------------------------------------------

def if_stmt(test, body, orelse, get_state, set_state, names, line: int = 0) -> None:
    test = _value(test)
    if not _is_graph(test):
        body() if _truth(test) else orelse()
        return
    from specflow.api.control_flow import cond

    init = get_state()
    then_kind: list = []  # per name: the then-branch's value, and its tensor or None
    else_vals: list = []

    def run_then():
        set_state(init)
        body()
        vals = get_state()
        outs = []
        for v in vals:
            t = _as_tensor(v)
            then_kind.append((v, t))
            if t is not None:
                outs.append(t)
        return tuple(outs) or None  # None: effects only (sf.cond's dummy output carries them)

    def run_else():
        set_state(init)
        orelse()
        vals = get_state()
        else_vals.extend(vals)
        outs = []
        for (_, t_then), v in zip(then_kind, vals):
            if t_then is None:
                continue
            t = _as_tensor(v)
            if t is None:  # settled after the cond: a placeholder of the then-branch's dtype keeps it buildable
                from specflow.api.op_functions import to_tensor

                t = to_tensor(np.zeros((), t_then.dtype.numpy)) if isinstance(t_then, Tensor) else t_then
            outs.append(t)
        return tuple(outs) or None

    merged = list(cond(test, run_then, run_else) or ())
    final = []
    for name, (v_then, t_then), v_else in zip(names, then_kind, else_vals):
        why = f"it is assigned in only one branch of the `if` on a tensor at {_where(line)}"
        if t_then is not None:
            out = merged.pop(0)
            if isinstance(v_else, Undefined):
                final.append(Undefined(name, why))
            elif _as_tensor(v_else) is None:
                raise GraphError(f"variable '{name}' is a tensor in one branch of the `if` on a tensor at "
                                 f"{_where(line)} and {type(v_else).__name__} in the other")
            else:
                final.append(out)
        elif isinstance(v_then, Undefined) and isinstance(v_else, Undefined):
            final.append(v_then)
        elif isinstance(v_then, Undefined) or isinstance(v_else, Undefined):
            final.append(Undefined(name, why))
        elif v_then is v_else or _same_object(v_then, v_else):
            final.append(v_then)
        else:
            raise GraphError(f"variable '{name}' gets different Python values ({type(v_then).__name__}) in the "
                             f"branches of the `if` on a tensor at {_where(line)}; make it a tensor")
    set_state(tuple(final))


def _same_object(a, b) -> bool:
    try:
        return type(a) is type(b) and isinstance(a, (str, bytes, type(None), tuple)) and a == b
    except Exception:  # noqa: BLE001 - an object whose == is not a bool
        return False


def if_exp(test, true_fn, false_fn):
    test = _value(test)
    if not _is_graph(test):
        return true_fn() if _truth(test) else false_fn()
    from specflow.api.control_flow import cond

    return cond(test, true_fn, false_fn)


# --- loops ---------------------------------------------------------------------------------------

def _loop_parts(init, names, line: int, what: str):
    """Which state entries become loop variables (tensors, numbers) and the others' values."""
    idx = [k for k, v in enumerate(init) if not isinstance(v, Undefined) and _as_tensor(v) is not None]
    fixed = list(init)
    for k, v in enumerate(init):
        if isinstance(v, Undefined):
            fixed[k] = Undefined(names[k], f"it is assigned only inside the {what} on a tensor at {_where(line)}; "
                                           "assign it before the loop")  # fmt: skip
    return idx, fixed


def _putter(set_state, idx, fixed):
    """Sets the state from the loop variables' values (the others at their fixed values)."""
    def put(vals):
        state = list(fixed)
        for k, v in zip(idx, vals):
            state[k] = v
        set_state(tuple(state))

    return put


def _loop_outputs(get_state, idx, names, line: int):
    vals = get_state()
    out = []
    for k in idx:
        t = _as_tensor(vals[k])
        if t is None:
            raise GraphError(f"variable '{names[k]}' of the loop on a tensor at {_where(line)} is a tensor before the "
                             f"loop and {type(vals[k]).__name__} after an iteration")
        out.append(t)
    return out


def while_stmt(test, body, get_state, set_state, names, line: int = 0) -> None:
    first = _value(test())
    if not _is_graph(first):
        ok = _truth(first)
        while ok:
            body()
            t = _value(test())
            if _is_graph(t):
                raise GraphError(f"the condition of the `while` at {_where(line)} became a tensor inside the loop: "
                                 "give its variables tensor values before it")
            ok = _truth(t)
        return
    from specflow.api.control_flow import while_loop

    init = get_state()
    idx, fixed = _loop_parts(init, names, line, "`while`")
    if not idx:
        raise GraphError(f"the `while` on a tensor at {_where(line)} changes no variable: it would never end")
    put = _putter(set_state, idx, fixed)

    def cond_fn(*vals):
        put(vals)
        return _value(test())

    def body_fn(*vals):
        put(vals)
        body()
        return tuple(_loop_outputs(get_state, idx, names, line))

    put(list(while_loop(cond_fn, body_fn, [_as_tensor(init[k]) for k in idx])))


class _Indexed:
    """``enumerate``/``zip`` of traced tensors: a tensor loop over their first dimension."""

    def __init__(self, tensors, start=None) -> None:
        self.tensors, self.start = tensors, start

    @property
    def shape(self):
        return self.tensors[0].shape

    def length(self):
        from specflow.api.tf_names import minimum, shape

        dims = [t.shape[0] for t in self.tensors]
        if all(d is not None for d in dims):
            return builtins.min(dims)
        n = shape(self.tensors[0])[0]
        for t in self.tensors[1:]:
            n = minimum(n, shape(t)[0])
        return n

    def __getitem__(self, i):
        items = tuple(t[i] for t in self.tensors)
        return (i + self.start, items[0]) if self.start is not None else items


def for_stmt(iterable, extra_test, body, get_state, set_state, names, line: int = 0) -> None:
    iterable = _value(iterable)
    if not _is_graph(iterable) and not isinstance(iterable, _Indexed):
        for item in iterable:
            if extra_test is not None:
                t = _value(extra_test())
                if not _is_graph(t) and not _truth(t):
                    break  # a tensor flag (a break under a tensor if) guards the rest itself
            body(item)
        return
    from specflow.api.control_flow import while_loop
    from specflow.api.tf_names import logical_and, shape

    if isinstance(iterable, _Indexed):
        n = iterable.length()
    else:
        if iterable.shape.rank == 0:
            raise GraphError(f"the `for` at {_where(line)} iterates over a scalar tensor")
        n = iterable.shape[0] if iterable.shape.rank else None
        if n is None:
            n = shape(iterable)[0]
    init = get_state()
    idx, fixed = _loop_parts(init, names, line, "`for`")
    put = _putter(set_state, idx, fixed)

    def cond_fn(i, *vals):
        put(vals)
        c = i < n
        if extra_test is not None:
            c = logical_and(c, _value(extra_test()))
        return c

    def body_fn(i, *vals):
        put(vals)
        body(iterable[i])
        return (i + 1, *_loop_outputs(get_state, idx, names, line))

    from specflow.api.op_functions import to_tensor

    out = while_loop(cond_fn, body_fn, [to_tensor(np.int32(0))] + [_as_tensor(init[k]) for k in idx])
    put(list(out)[1:])


def python_loop(value, line: int = 0):
    """The iterable or condition of a loop AutoGraph left Python (a ``return`` inside it)."""
    if _is_graph(_value(value)):
        raise GraphError(f"the loop at {_where(line)} returns from inside its body, which AutoGraph keeps as Python; "
                         "on a tensor, assign the result to a variable and `break` instead")
    return value


# --- expressions ---------------------------------------------------------------------------------

def and_(a_fn, b_fn):
    a = _value(a_fn())
    if not _is_graph(a):
        return a if not _truth(a) else b_fn()
    from specflow.api.control_flow import cond

    return cond(a, lambda: _as_bool(b_fn()), lambda: a)


def or_(a_fn, b_fn):
    a = _value(a_fn())
    if not _is_graph(a):
        return a if _truth(a) else b_fn()
    from specflow.api.control_flow import cond

    return cond(a, lambda: a, lambda: _as_bool(b_fn()))


def _as_bool(v):
    from specflow.api.op_functions import to_tensor

    v = _value(v)
    return v if isinstance(v, Tensor) else to_tensor(np.bool_(bool(v)))


def not_(a):
    a = _value(a)
    if _is_graph(a):
        from specflow.api.tf_names import logical_not

        return logical_not(a)
    return not _truth(a)


# --- calls ---------------------------------------------------------------------------------------

def call(f, *args, **kwargs):
    """A call in converted code: print/range/len on tensors become sf ops; a user's function is
    converted before it runs; anything else is called as is."""
    if f is BUILTIN_PRINT:
        if any(_is_graph(_value(a)) for a in args):
            from specflow.api.tf_control_names import print as sf_print

            return sf_print(*args, **{k: v for k, v in kwargs.items() if k in ("sep", "end")})
        return f(*args, **kwargs)
    if f is BUILTIN_RANGE:
        if any(_is_graph(a) for a in args):
            from specflow.api.tf_names import range as sf_range

            return sf_range(*args, **kwargs)
        return f(*[int(a.numpy()) if isinstance(a, EagerTensor) else a for a in args])
    if f is BUILTIN_LEN and len(args) == 1 and not kwargs:
        x = args[0]
        if _is_graph(x):
            if x.shape.rank == 0:
                raise GraphError("len() of a scalar tensor")
            d = x.shape[0] if x.shape.rank is not None else None
            if d is not None:
                return d
            from specflow.api.tf_names import shape

            return shape(x)[0]
        if getattr(type(x), "_sf_composite", False) and hasattr(x, "size"):
            return x.size()
        return f(x)
    if f is builtins.enumerate and args and _is_graph(args[0]):
        start = args[1] if len(args) > 1 else kwargs.get("start", 0)
        return _Indexed([args[0]], start)
    if f is builtins.zip and args and not kwargs and any(_is_graph(a) for a in args):
        if not all(_is_graph(a) for a in args):
            raise GraphError("zip() of a tensor with a Python iterable inside sf.function: make both tensors")
        return _Indexed(list(args))
    if convertible_callee(f):
        return convert(f)(*args, **kwargs)
    return f(*args, **kwargs)
