"""Generated code for the straight line: a partition's topological order as one Python function.

The generic straight-line loop (``straight_line.py``) pays per node for tuple unpacking, list
indexing, branches on the input count and timers. Once a partition's costs are settled, its
steps run a function generated for it instead: kernels, contexts and expected dtypes are
closure variables, values are local variables, a value's last use is followed by ``del``. For a
``_Arg -> Neg -> _Retval`` partition :func:`line_source` writes::

    def make(F, C, D, A, H, fix1, fixn):
        (f0, f1, f2,) = F
        (c0, c1, c2,) = C
        (d0,) = D

        def run_line(rv):
            k = -1
            try:
                # 0: 'x' '_Arg'
                if rv.error is not None: raise rv.error
                k = 0
                v0 = f0(c0)
                if type(v0) is not A or v0.dtype is not d0: v0 = fix1(0, v0)
                # 1: 'neg' 'Neg'
                if rv.error is not None: raise rv.error
                k = 1
                v1 = f1(c1, v0)
                if type(v1) is not A or v1.dtype is not d0: v1 = fix1(1, v1)
                del v0
                # 2: 'ret0' '_Retval'
                k = 2
                o = f2(c2, v1)
                if o is not None and (type(o) is not tuple or o): fixn(2, o)
                del o, v1
            except BaseException as e:
                return k, e, locals()
            return None

        return run_line

Every output passes the loop's checks: the fast test above, and anything else (a numpy scalar to
wrap, a list of outputs, a wrong dtype, a dead value) goes to ``fix1``/``fixn``, which run the
executor's full check. A dead value is what the generated code does not handle: ``fix*`` raise
:class:`Resume`, and the caller continues the step on the generic loop from the next node, with
the live values read back from ``locals()`` (``v<flat output index>``). Any exception returns
``(k, exception, locals())``: ``k`` is the last node started, so ``k + 1`` nodes ran.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from specflow.runtime.executor_types import NodeItem

# A line longer than this keeps the generic loop: Python's compiler takes ~0.1 ms a node on the
# 2-core machine of benchmarks/README.md, a little more per node the longer the function (0.6 s
# at 4,000 nodes), and a step should not stall that long when the line is first generated.
MAX_GENERATED_NODES = 4_000

_VALUE = re.compile(r"v(\d+)")

# Kernels whose output is the same immutable value every step (kernels never mutate their
# inputs): the generated code runs them once when it is made and reuses the value. On a GPU this
# also saves a Const's host-to-device copy per step.
HOISTED_OPS = frozenset({"Const"})
# Kernels with no outputs and no effect: the generated code only counts them.
SKIPPED_OPS = frozenset({"NoOp"})
# Bookkeeping kernels (a fraction of a microsecond, never blocking): no abort check before them.
# An abort (another partition failed, a timeout) is noticed before the next real kernel, or
# after the step by the caller, and each check costs about what these kernels do.
UNCHECKED_OPS = frozenset({"_Arg", "_Retval", "Identity", "StopGradient", "VarHandleOp", "ReadVariableOp"})


class Resume(Exception):
    """Raised by ``fix1``/``fixn`` when node outputs include a dead value: the generic loop,
    which propagates dead tensors, runs the rest of the step. ``outs``: the checked outputs."""

    def __init__(self, outs: Sequence[Any]):
        super().__init__("dead value on the straight line")
        self.outs = outs


def _names(prefix: str, n: int) -> str:
    """``f0, f1,`` (a tuple target even for one name)."""
    return "".join(f"{prefix}{i}, " for i in range(n)).rstrip(" ")


def line_source(nodes: Sequence[NodeItem]) -> str:
    """The source of ``make(F, C, D, A, H, fix1, fixn)``, which returns the partition's
    ``run_line(rv)``: F kernels, C contexts (one per node, in order), D the distinct
    expected dtypes (see :func:`line_dtypes`), A the device's array type, H the resource handle
    type."""
    dtypes = line_dtypes(nodes)
    dnum = {id(d): j for j, d in enumerate(dtypes)}
    body: list[str] = []
    hoisted: list[str] = []
    started = False  # a kernel runs before this node
    for item in nodes:
        i = item.id
        args = "".join(f", v{s}" for s in item.in_srcs)
        if item.op in HOISTED_OPS and item.n_out == 1 and not item.in_srcs and not item.node.control_inputs:
            # Its kernel returns the same immutable value every step: run it once, in make().
            hoisted += [f"k{i} = f{i}(c{i})", f"if {_bad(f'k{i}', item.checks[0], dnum)}: k{i} = fix1({i}, k{i})"]
            body += [f"# {i}: {_label(item)}, computed once", f"k = {i}"]
            if item.out_flat >= 0:
                body.append(f"v{item.out_flat} = k{i}")
            continue
        if item.op in SKIPPED_OPS:  # no outputs, no effect: only its place in the order matters
            body += [f"# {i}: {_label(item)}, nothing to run", f"k = {i}"]
            if item.frees:
                body.append(f"del {', '.join(f'v{f}' for f in item.frees)}")
            continue
        body.append(f"# {i}: {_label(item)}")
        if item.op not in UNCHECKED_OPS or not started:  # the first kernel checks: none runs if aborted
            body.append("if rv.error is not None: raise rv.error")
        started = True
        body.append(f"k = {i}")
        drop = [f"v{f}" for f in item.frees]
        targets: list[str | None] = [None] * item.n_out
        if item.n_out == 1:
            targets[0] = f"v{item.out_flat}" if item.out_flat >= 0 else None
        for k, flat, _ in item.outputs if item.n_out > 1 else ():
            targets[k] = f"v{flat}"
        if emit_call(body, i, item, f"f{i}(c{i}{args})", targets, dnum):
            drop.insert(0, "o")
        if drop:
            body.append(f"del {', '.join(drop)}")
    lines = make_prelude("F, C, D, A, H, fix1, fixn", len(nodes), len(dtypes), hoisted)
    lines += [
        "",
        "    def run_line(rv):",
        "        k = -1",
        "        try:",
        *(f"            {b}" for b in body or ["pass"]),
        "        except BaseException as e:",
        "            return k, e, locals()",
        "        return None",
        "",
        "    return run_line",
    ]
    return "\n".join(lines) + "\n"


def make_prelude(params: str, n_nodes: int, n_dtypes: int, hoisted: list[str]) -> list[str]:
    """The generated ``make(params)``'s first lines: the kernels, contexts and dtypes unpacked
    into locals, then the hoisted kernels' one-time runs."""
    lines = [f"def make({params}):"]
    if n_nodes:
        lines += [f"    ({_names('f', n_nodes)}) = F", f"    ({_names('c', n_nodes)}) = C"]
    if n_dtypes:
        lines.append(f"    ({_names('d', n_dtypes)}) = D")
    return lines + [f"    {h}" for h in hoisted]


def emit_call(body: list[str], i: int, item: NodeItem, call: str, targets: list[str | None], dnum) -> bool:
    """Lines running ``call`` (``item``'s kernel, number ``i`` for the fix-ups) and checking what
    it returned, its outputs into ``targets`` (a name per output; None: not used). Returns
    whether ``o`` holds something to drop after."""
    if item.n_out == 1:
        t = targets[0] or "o"
        body += [f"{t} = {call}", f"if {_bad(t, item.checks[0], dnum)}: {t} = fix1({i}, {t})"]
        return t == "o"
    body.append(f"o = {call}")
    if item.n_out == 0:
        body.append(f"if o is not None and (type(o) is not tuple or o): fixn({i}, o)")
    else:
        bad = " or ".join(_bad(f"o[{k}]", want, dnum) for k, want in enumerate(item.checks))
        body.append(f"if type(o) is not tuple or len(o) != {item.n_out} or {bad}: o = fixn({i}, o)")
        body += [f"{t} = o[{k}]" for k, t in enumerate(targets) if t is not None]
    return True


def _label(item: NodeItem) -> str:
    """A node's name and op for a comment line, through ``repr``: a name comes from a file, and
    ``repr`` of a str escapes every line break, so the text can never end the comment."""
    return f"{item.name!r} {item.op!r}"


def _bad(v: str, want: Any, dnum: dict[int, int]) -> str:
    """The fast test that an output is NOT what the op declares (then fix1/fixn check it)."""
    if want is None:  # a resource handle
        return f"type({v}) is not H"
    return f"type({v}) is not A or {v}.dtype is not d{dnum[id(want)]}"


def line_dtypes(nodes: Sequence[NodeItem]) -> list[Any]:
    """The distinct declared output dtypes of ``nodes``, in first-use order (``make``'s D)."""
    seen: dict[int, Any] = {}
    for item in nodes:
        for want in item.checks:
            if want is not None:
                seen.setdefault(id(want), want)
    return list(seen.values())


def compile_line(nodes: Sequence[NodeItem], where: str) -> Callable[..., Callable]:
    """Generate, compile and define ``make`` for ``nodes`` (``where`` names it in tracebacks)."""
    namespace: dict[str, Any] = {}
    # Only the comments hold text from a graph (escaped by repr); ``where`` is a file name for
    # tracebacks, never compiled, but repr keeps it on one line too.
    exec(compile(line_source(nodes), f"<straight line of {where!r}>", "exec"), namespace)
    return namespace["make"]


def values_from(env: dict[str, Any], count: int) -> list[Any]:
    """A failed or resumed run's live values (its ``locals()``) as the generic loop's list."""
    vals: list[Any] = [None] * count
    for name, v in env.items():
        m = _VALUE.fullmatch(name)
        if m:
            vals[int(m.group(1))] = v
    return vals
