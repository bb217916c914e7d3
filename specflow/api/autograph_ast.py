"""AutoGraph's rewriting of a function's AST (api/autograph.py parses and compiles it): each
``if`` into ``ag__.if_stmt`` over two branch functions, each loop into ``ag__.while_stmt`` /
``ag__.for_stmt`` over a body function, the variables (and ``obj.attr`` targets) a block assigns
read and written through a get/set-state pair; ``break``/``continue`` into flags guarding what
follows; a ``return`` at the end of an ``if``'s branches into an assignment and one ``return``;
``and``/``or``/``not``, conditional expressions and calls into ``ag__`` helpers
(api/autograph_runtime.py decides what they build)."""

from __future__ import annotations

import ast

PREFIX = "ag__"
FN = "ag__fn_"  # generated helper functions: never state

# --- what a block assigns ------------------------------------------------------------------------

class _Assigned(ast.NodeVisitor):
    """Names a block binds in its own scope (not inside nested functions, classes, lambdas or
    comprehensions; a nested def's or class's own name counts)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def _add(self, name: str) -> None:
        if name not in self.names and not name.startswith(FN):
            self.names.append(name)

    def visit_Name(self, node: ast.Name) -> None:  # noqa: N802 (ast's visitor names)
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._add(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:  # noqa: N802
        # ``obj.attr = ...`` (obj a plain name): state too, as TF's composite names
        if isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name):
            self._add(f"{node.value.id}.{node.attr}")
        self.visit(node.value)

    def visit_FunctionDef(self, node) -> None:  # noqa: N802
        self._add(node.name)
        for d in node.decorator_list:
            self.visit(d)

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815
    visit_ClassDef = visit_FunctionDef  # noqa: N815

    def visit_Lambda(self, node) -> None:  # noqa: N802
        pass

    def visit_ListComp(self, node) -> None:  # noqa: N802
        pass

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp  # noqa: N815

    def visit_NamedExpr(self, node) -> None:  # noqa: N802
        self._add(node.target.id)
        self.visit(node.value)

    def visit_ExceptHandler(self, node) -> None:  # noqa: N802
        if node.name:
            self._add(node.name)
        self.generic_visit(node)

    def visit_alias(self, node) -> None:  # noqa: N802
        self._add((node.asname or node.name).split(".")[0])


def _assigned(nodes) -> list[str]:
    v = _Assigned()
    for n in nodes:
        v.visit(n)
    return v.names


def _walk_scope(nodes):
    """Every node of ``nodes`` in their own scope (nested functions/classes/lambdas skipped)."""
    stack = list(nodes)
    while stack:
        n = stack.pop()
        yield n
        for c in ast.iter_child_nodes(n):
            if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                stack.append(c)


def _has(nodes, kinds, into_loops: bool = True) -> bool:
    """Whether a statement of ``kinds`` sits in ``nodes`` (not in nested scopes; not in nested
    loops unless ``into_loops``)."""
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            return True
        for c in ast.iter_child_nodes(n):
            if isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if not into_loops and isinstance(c, (ast.For, ast.While, ast.AsyncFor)):
                continue
            stack.append(c)
    return False


# --- helpers to build code -----------------------------------------------------------------------

def _name(id_: str, ctx=None) -> ast.Name:
    return ast.Name(id=id_, ctx=ctx or ast.Load())


def _ag(attr: str) -> ast.Attribute:
    return ast.Attribute(value=_name("ag__"), attr=attr, ctx=ast.Load())


def _call(func, args, keywords=()) -> ast.Call:
    return ast.Call(func=func, args=list(args), keywords=list(keywords))


def _lambda(body) -> ast.Lambda:
    none = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                         defaults=[])
    return ast.Lambda(args=none, body=body)


def _def(name: str, params: list[str], body: list) -> ast.FunctionDef:
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], vararg=None, kwonlyargs=[],
                         kw_defaults=[], kwarg=None, defaults=[])
    return ast.FunctionDef(name=name, args=args, body=body or [ast.Pass()], decorator_list=[], returns=None,
                           type_params=[])


def _assign(target: str, value) -> ast.Assign:
    return ast.Assign(targets=[_name(target, ast.Store())], value=value)


def _const(v) -> ast.Constant:
    return ast.Constant(value=v)


# --- the rewriting of one function scope ---------------------------------------------------------

class _Scope:
    """One function's body rewritten: its declared globals/nonlocals stay what they are."""

    def __init__(self, fn_node, counter: list[int]) -> None:
        self.globals = {name for n in _walk_scope(fn_node.body) if isinstance(n, ast.Global) for name in n.names}
        self.counter = counter

    def fresh(self) -> int:
        self.counter[0] += 1
        return self.counter[0]

    def _declare(self, names: list[str]) -> list:
        out = []
        names = [n for n in names if "." not in n]  # an attribute is set on its object, not bound here
        glob = [n for n in names if n in self.globals]
        nonl = [n for n in names if n not in self.globals]
        if glob:
            out.append(ast.Global(names=glob))
        if nonl:
            out.append(ast.Nonlocal(names=nonl))
        return out

    def _prelude(self, names: list[str]) -> list:
        """``x`` bound (to Undefined) if it is not yet, so the helpers' ``nonlocal x`` has a binding."""
        out = []
        for n in names:
            if n in self.globals or "." in n:
                continue
            out.append(ast.Try(body=[ast.Expr(value=_name(n))],
                               handlers=[ast.ExceptHandler(type=_name("NameError"), name=None,
                                                           body=[_assign(n, _call(_ag("Undefined"), [_const(n)]))])],
                               orelse=[], finalbody=[]))  # fmt: skip
        return out

    def _state_fns(self, k: int, names: list[str]) -> tuple[list, str, str]:
        get, set_ = f"{FN}get_state_{k}", f"{FN}set_state_{k}"

        def load(n):  # an attribute through ag__.get_attr: Undefined where the object has none yet
            if "." not in n:
                return _name(n)
            obj, attr = n.split(".", 1)
            return _call(_ag("get_attr"), [_name(obj), _const(attr), _const(n)])

        get_fn = _def(get, [], [ast.Return(value=ast.Tuple(elts=[load(n) for n in names], ctx=ast.Load()))])
        body = self._declare(names)
        for i, n in enumerate(names):
            value = ast.Subscript(value=_name("ag__vals"), slice=_const(i), ctx=ast.Load())
            if "." in n:
                obj, attr = n.split(".", 1)
                body.append(ast.Expr(value=_call(_ag("set_attr"), [_name(obj), _const(attr), value])))
            else:
                body.append(ast.Assign(targets=[_name(n, ast.Store())], value=value))
        return [get_fn, _def(set_, ["ag__vals"], body or [ast.Pass()])], get, set_

    # statements ----------------------------------------------------------------------------------

    def stmts(self, body: list) -> list:
        out = []
        for s in body:
            r = self.stmt(s)
            out.extend(r if isinstance(r, list) else [r])
        return out

    def stmt(self, s):
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return convert_function_node(s, self.counter)
        if isinstance(s, ast.ClassDef):
            return s
        if isinstance(s, ast.If):
            return self.if_(s)
        if isinstance(s, ast.While):
            return self.while_(s)
        if isinstance(s, ast.For):
            return self.for_(s)
        for field in ("body", "orelse", "finalbody"):  # with/try: their blocks
            if isinstance(getattr(s, field, None), list):
                setattr(s, field, self.stmts(getattr(s, field)))
        for h in getattr(s, "handlers", None) or ():
            h.body = self.stmts(h.body)
            _Exprs().visit_children(h)
        _Exprs().visit_children(s)
        return s

    def if_(self, s: ast.If) -> list:
        if _has([s], ast.Return):  # a return not at a branch's end (see _tail_returns): left as written
            s.body, s.orelse = self.stmts(s.body), self.stmts(s.orelse)
            s.test = _Exprs().visit(s.test)
            return [s]
        names = _assigned(s.body + s.orelse)
        k = self.fresh()
        test = _Exprs().visit(s.test)
        body, orelse = self.stmts(s.body), self.stmts(s.orelse)
        then_fn = _def(f"{FN}if_true_{k}", [], self._declare(names) + body)
        else_fn = _def(f"{FN}if_false_{k}", [], self._declare(names) + orelse)
        state, get, set_ = self._state_fns(k, names)
        call = _call(_ag("if_stmt"), [test, _name(then_fn.name), _name(else_fn.name), _name(get), _name(set_),
                                      ast.Tuple(elts=[_const(n) for n in names], ctx=ast.Load()),
                                      _const(getattr(s, "lineno", 0))])  # fmt: skip
        return self._prelude(names) + [then_fn, else_fn] + state + [ast.Expr(value=call)]

    def while_(self, s: ast.While) -> list:
        if _has(s.body, ast.Return) or s.orelse and _has(s.orelse, ast.Return):
            return self._loop_as_written(s)
        names = _assigned(s.body)
        k = self.fresh()
        test_fn = _def(f"{FN}loop_test_{k}", [], [ast.Return(value=_Exprs().visit(s.test))])
        body_fn = _def(f"{FN}loop_body_{k}", [], self._declare(names) + self.stmts(s.body))
        state, get, set_ = self._state_fns(k, names)
        call = _call(_ag("while_stmt"), [_name(test_fn.name), _name(body_fn.name), _name(get), _name(set_),
                                         ast.Tuple(elts=[_const(n) for n in names], ctx=ast.Load()),
                                         _const(getattr(s, "lineno", 0))])  # fmt: skip
        return self._prelude(names) + [test_fn, body_fn] + state + [ast.Expr(value=call)] + self.stmts(s.orelse)

    def for_(self, s: ast.For) -> list:
        if _has(s.body, ast.Return) or s.orelse and _has(s.orelse, ast.Return):
            return self._loop_as_written(s)
        names = _assigned([s.target] + s.body)
        k = self.fresh()
        extra = getattr(s, "ag_extra_test", None)
        item = f"ag__item_{k}"
        body = [ast.Assign(targets=[s.target], value=_name(item))] + self.stmts(s.body)
        body_fn = _def(f"{FN}loop_body_{k}", [item], self._declare(names) + body)
        pre = [body_fn]
        extra_arg = _const(None)
        if extra is not None:
            test_fn = _def(f"{FN}loop_test_{k}", [], [ast.Return(value=_Exprs().visit(extra))])
            pre.append(test_fn)
            extra_arg = _name(test_fn.name)
        state, get, set_ = self._state_fns(k, names)
        call = _call(_ag("for_stmt"), [_Exprs().visit(s.iter), extra_arg, _name(body_fn.name), _name(get), _name(set_),
                                       ast.Tuple(elts=[_const(n) for n in names], ctx=ast.Load()),
                                       _const(getattr(s, "lineno", 0))])  # fmt: skip
        return self._prelude(names) + pre + state + [ast.Expr(value=call)] + self.stmts(s.orelse)

    def _loop_as_written(self, s):
        """A loop with a ``return`` inside stays a Python loop; over a traced tensor its
        iterable or condition is a one-line error saying so (ag__.python_loop)."""
        s.body, s.orelse = self.stmts(s.body), self.stmts(s.orelse)
        _Exprs().visit_children(s, skip=("body", "orelse"))
        field = "iter" if isinstance(s, ast.For) else "test"
        setattr(s, field, _call(_ag("python_loop"), [getattr(s, field), _const(getattr(s, "lineno", 0))]))
        return [s]


class _Exprs(ast.NodeTransformer):
    """Expressions: boolean operators, conditional expressions and calls (not into nested scopes)."""

    def visit_children(self, node, skip=("body", "orelse", "finalbody", "handlers")):
        for field, value in ast.iter_fields(node):
            if field in skip:
                continue
            if isinstance(value, list):
                setattr(node, field, [self.visit(v) if isinstance(v, ast.AST) else v for v in value])
            elif isinstance(value, ast.AST):
                setattr(node, field, self.visit(value))
        return node

    def visit_Lambda(self, node):  # noqa: N802
        return node

    def visit_BoolOp(self, node):  # noqa: N802
        self.generic_visit(node)
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        out = node.values[-1]
        for v in reversed(node.values[:-1]):
            out = _call(_ag(fn), [_lambda(v), _lambda(out)])
        return ast.copy_location(out, node)

    def visit_UnaryOp(self, node):  # noqa: N802
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_call(_ag("not_"), [node.operand]), node)
        return node

    def visit_IfExp(self, node):  # noqa: N802
        self.generic_visit(node)
        return ast.copy_location(_call(_ag("if_exp"), [node.test, _lambda(node.body), _lambda(node.orelse)]), node)

    def visit_Call(self, node):  # noqa: N802
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id == "super" and not node.args and not node.keywords:
            return node  # zero-argument super() is fixed up by convert_function_node
        if isinstance(f, ast.Name) and f.id.startswith(PREFIX):
            return node
        # every call through ag__.call: builtins it knows (print, range, len) and user functions,
        # converted in turn, decide at trace time; anything else is called as is
        return ast.copy_location(_call(_ag("call"), [f] + node.args, node.keywords), node)


# --- break, continue and returns -----------------------------------------------------------------

def _jumps(body: list, loop_k: int):
    """Rewrite this loop level's ``break``/``continue`` in ``body`` as flag assignments and guard
    the statements after them; returns (body, break flag or None, continue flag or None)."""
    has_break = _has(body, ast.Break, into_loops=False)
    has_continue = _has(body, ast.Continue, into_loops=False)
    brk = f"ag__break_{loop_k}" if has_break else None
    cnt = f"ag__continue_{loop_k}" if has_continue else None
    if not (brk or cnt):
        return body, None, None
    flags = [f for f in (brk, cnt) if f]

    def stop_test():
        tests = [_name(f) for f in flags]
        return tests[0] if len(tests) == 1 else ast.BoolOp(op=ast.Or(), values=tests)

    def guard(stmts: list) -> list:
        out = []
        for i, s in enumerate(stmts):
            if isinstance(s, ast.Break):
                out.append(_assign(brk, _const(True)))
                return out
            if isinstance(s, ast.Continue):
                out.append(_assign(cnt, _const(True)))
                return out
            jumps = _has([s], (ast.Break, ast.Continue), into_loops=False) and not isinstance(s, (ast.For, ast.While))
            if jumps:
                for field in ("body", "orelse", "finalbody"):
                    if isinstance(getattr(s, field, None), list):
                        setattr(s, field, guard(getattr(s, field)))
                for h in getattr(s, "handlers", []) or []:
                    h.body = guard(h.body)
            out.append(s)
            if jumps and stmts[i + 1:]:
                out.append(ast.copy_location(ast.If(test=ast.UnaryOp(op=ast.Not(), operand=stop_test()),
                                                    body=guard(stmts[i + 1:]), orelse=[]), stmts[i + 1]))
                return out
        return out

    new = guard(body)
    if cnt:
        new = [_assign(cnt, _const(False))] + new
    return new, brk, cnt


class _Loops(ast.NodeTransformer):
    """Loops with ``break``/``continue`` (innermost first), before the control flow is converted."""

    def __init__(self, counter: list[int]) -> None:
        self.counter = counter

    def visit_FunctionDef(self, node):  # noqa: N802 (nested functions: their own pass)
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef  # noqa: N815

    def _loop(self, node):
        self.generic_visit(node)
        if _has(node.body, ast.Return):
            return node  # a loop with a return stays a Python loop
        self.counter[0] += 1
        k = self.counter[0]
        node.body, brk, _ = _jumps(node.body, k)
        if brk is None:
            return node
        not_broken = ast.UnaryOp(op=ast.Not(), operand=_name(brk))
        if isinstance(node, ast.While):
            node.test = ast.BoolOp(op=ast.And(), values=[not_broken, node.test])
        else:
            node.ag_extra_test = not_broken
        out = [_assign(brk, _const(False)), node]
        if node.orelse:  # a loop's else runs when it was not broken out of
            out.append(ast.If(test=ast.UnaryOp(op=ast.Not(), operand=_name(brk)), body=node.orelse, orelse=[]))
            node.orelse = []
        return out

    visit_While = visit_For = _loop  # noqa: N815


def _always_returns(stmts: list) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    return False


def _tail_returns(stmts: list, counter: list[int]) -> list:
    """``if c: ...; return a`` followed by more statements: the rest moves into the ``else``,
    so both branches end in a return; then, where every return of an ``if`` is at a branch's
    end, they become ``ag__retval_k = value`` and one ``return ag__retval_k`` follows."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, ast.If) and _always_returns(s.body) and not _always_returns(s.orelse) \
                and not _has(s.orelse, ast.Return) and stmts[i + 1:] and _always_returns(stmts[i + 1:]):
            s.orelse = s.orelse + list(stmts[i + 1:])
            out.append(s)
            break
        out.append(s)
    for s in out:
        if isinstance(s, ast.If):
            s.body, s.orelse = _tail_returns(s.body, counter), _tail_returns(s.orelse, counter)
    last = out[-1] if out else None
    if isinstance(last, ast.If) and _always_returns([last]) and _only_tail_returns(last):
        counter[0] += 1
        rv = f"ag__retval_{counter[0]}"
        _returns_to_assign(last, rv)
        out.append(ast.Return(value=_name(rv)))
    return out


def _only_tail_returns(node: ast.If) -> bool:
    def ok(stmts):
        for j, s in enumerate(stmts):
            tail = j == len(stmts) - 1
            if isinstance(s, ast.Return):
                if not tail:
                    return False
            elif isinstance(s, ast.If):
                if not (ok(s.body) and ok(s.orelse)) or (not tail and _has([s], ast.Return)):
                    return False
            elif _has([s], ast.Return):
                return False
        return True

    return ok(node.body) and ok(node.orelse)


def _returns_to_assign(node: ast.If, rv: str) -> None:
    for stmts in (node.body, node.orelse):
        last = stmts[-1]
        if isinstance(last, ast.Return):
            stmts[-1] = ast.copy_location(_assign(rv, last.value or _const(None)), last)
        else:
            _returns_to_assign(last, rv)


# --- a whole function -----------------------------------------------------------------------------

def needs_conversion(fn_node) -> bool:
    return _has(fn_node.body, (ast.If, ast.While, ast.For, ast.BoolOp, ast.IfExp, ast.UnaryOp, ast.Call,
                               ast.FunctionDef))


def convert_function_node(node, counter: list[int]):
    node.body = _tail_returns(node.body, counter)
    loops = _Loops(counter)
    body = []
    for s in node.body:
        r = loops.visit(s)
        body.extend(r if isinstance(r, list) else [r])
    node.body = _Scope(node, counter).stmts(body)
    node.decorator_list = [_Exprs().visit(d) for d in node.decorator_list]
    return node
