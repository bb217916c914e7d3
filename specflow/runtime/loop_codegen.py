"""Generated code for a compiled loop (``loop_plan.py``): the loop's nodes as one Python function
that runs every iteration, the straight line's way (``line_codegen.py``: kernels, contexts and
expected dtypes are closure variables, values local variables, a value dropped after its last
use in the iteration). For ``t, h = 0, h0; while t < n: t, h = t + 1, tanh(h @ U)`` it writes
(abridged: every output also gets the line's type check)::

    def make(F, C, D, A, H, fix1, fixn, T, N, R):
        (f0, f1, f2, f3, f4, f5, f6, f7,) = F
        (c0, c1, c2, c3, c4, c5, c6, c7,) = C
        (d0, d1, d2,) = D
        k4 = f4(c4)                            # the body's Const 1: computed once
        def run_loop(rv, i0, i1, i2, i3):      # the Enters' values: h0, n, U, 0
            k = -1
            n = 0
            try:
                m0 = i0                        # the loop variables h and t
                m1 = i3
                while True:
                    if rv.error is not None: raise rv.error
                    k = -1
                    # 0: 'while/cond/Less' 'Less'
                    k = 0
                    v0_0 = f0(c0, m1, i1)
                    # 1: 'while/LoopCond' 'LoopCond'
                    k = 1
                    v1_0 = f1(c1, v0_0)
                    del v0_0
                    if not T(v1_0): break
                    del v1_0
                    # 2: 'while/v0/Identity' 'Identity' (aliased: no kernel call)
                    k = 2
                    v2_0 = m1
                    ...
                    # 7: 'while/body/Tanh' 'Tanh'
                    k = 7
                    v7_0 = f7(c7, v5_0)
                    del v5_0
                    m0, m1, = v7_0, v6_0,
                    n += 1
                return None, (m0, ), n         # the Exits' values
            except BaseException as e:
                return k, e, n
        return run_loop

``i*`` are the loop node's inputs (the Enters' values; constant Enters are read directly), ``m*``
the loop variables, ``v<node>_<output>`` the nodes' values, ``k`` the node running (its index
in the program), ``n`` the iterations done; every kernel but the bookkeeping ones
(``UNCHECKED_OPS``) is preceded by an abort check, as on the line.
Outputs get the line's checks (``fix1``/``fixn`` for anything unusual); ``T`` reads a predicate
on the host, as ``Switch`` does. A traced step runs a second variant that times each node
(``R``, ``N``): the trace shows every node run of every iteration, as on frames.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from specflow.runtime.executor_types import NodeItem
from specflow.runtime.line_codegen import (
    HOISTED_OPS,
    UNCHECKED_OPS,
    _bad,
    _label,
    emit_call,
    line_dtypes,
    make_prelude,
)

# Kernels that return their one input unchanged (its type already checked where it was made).
ALIASED_OPS = frozenset({"Identity"})


def loop_source(prog: Sequence[NodeItem], n_cond: int, names: Callable[[NodeItem], list[str]],
                outs: Callable[[NodeItem], list[str | None]], pred: str, inits: Sequence[str],
                nexts: Sequence[str], results: Sequence[str], n_inputs: int, traced: bool = False) -> str:  # fmt: skip
    """The source of ``make(F, C, D, A, H, fix1, fixn, T)``. ``prog``: the nodes that run (the
    first ``n_cond`` every iteration, the LoopCond last of them; the rest while the predicate
    holds); ``names(item)``: the variables its inputs are in; ``outs(item)``: its outputs'
    variables (None: unused); ``pred``: the LoopCond's output; ``inits``/``nexts``: per loop
    variable ``m<j>``, its first and its next value; ``results``: the Exits' values. ``traced``:
    each node run is timed and reported as ``R(position, start_ns, outputs)`` (``N``: the clock)."""
    dtypes = line_dtypes(prog)
    dnum = {id(d): j for j, d in enumerate(dtypes)}
    last: dict[str, int] = {}  # a node output -> the position of its last use in an iteration
    for pos, item in enumerate(prog):
        for v in names(item):
            last[v] = pos
    keep = set(nexts) | {pred}
    drops: dict[int, list[str]] = {}
    for v, pos in last.items():
        if v.startswith("v") and v not in keep:
            drops.setdefault(pos, []).append(v)
    hoisted: list[str] = []
    body: list[str] = []
    for pos, item in enumerate(prog):
        i = pos
        targets = outs(item)
        if pos == n_cond:  # the predicate decides before the first body node
            body += [f"if not T({pred}): break", f"del {pred}"]
        if item.op in HOISTED_OPS and item.n_out == 1 and not item.n_in:
            # The same immutable value every run (its control input only puts it in the frame).
            hoisted += [
                f"k{i} = f{i}(c{i})",
                f"if {_bad(f'k{i}', item.checks[0], dnum)}: k{i} = fix1({i}, k{i})",
            ]
            if targets[0] is not None:
                body.append(f"{targets[0]} = k{i}")
            if traced:
                body.append(f"R({i}, N(), (k{i},))")
            continue
        body.append(f"# {i}: {_label(item)}")
        if item.op in ALIASED_OPS and item.n_in == 1 and item.n_out == 1:
            # Identity forwards its input (the loop's pivots): no kernel call, the same value.
            t, src = targets[0] or "o", names(item)[0]
            body += [f"k = {i}", f"{t} = {src}"]
            if traced:
                body.append(f"R({i}, N(), ({t},))")
            drop = list(drops.get(pos, ()))
            if t == "o":
                drop.insert(0, "o")
            if drop:
                body.append(f"del {', '.join(drop)}")
            continue
        if item.op not in UNCHECKED_OPS:
            body.append("if rv.error is not None: raise rv.error")
        body.append(f"k = {i}")
        if traced:
            body.append("t0 = N()")
        call = f"f{i}(c{i}{''.join(f', {a}' for a in names(item))})"
        drop = list(drops.get(pos, ()))
        uses_o = emit_call(body, i, item, call, targets, dnum)
        if traced:
            body.append(f"R({i}, t0, ({targets[0] or 'o'},))" if item.n_out == 1 else f"R({i}, t0, o or ())")
        if uses_o:
            drop.insert(0, "o")
        if drop:
            body.append(f"del {', '.join(drop)}")
    if n_cond == len(prog):
        body += [f"if not T({pred}): break", f"del {pred}"]
    m = [f"m{j}" for j in range(len(inits))]
    body += [f"{', '.join(m)}, = {', '.join(nexts)},", "n += 1"]
    args = "".join(f", i{j}" for j in range(n_inputs))
    lines = make_prelude("F, C, D, A, H, fix1, fixn, T, N, R", len(prog), len(dtypes), hoisted)
    lines += [
        "",
        f"    def run_loop(rv{args}):",
        "        k = -1",
        "        n = 0",
        "        try:",
        *(f"            m{j} = {v}" for j, v in enumerate(inits)),
        "            while True:",
        "                if rv.error is not None: raise rv.error",
        "                k = -1",
        *(f"                {b}" for b in body),
        f"            return None, ({''.join(f'{r}, ' for r in results)}), n",
        "        except BaseException as e:",
        "            return k, e, n",
        "",
        "    return run_loop",
    ]
    return "\n".join(lines) + "\n"


def compile_loop(source: str, where: str) -> Callable[..., Any]:
    """Compile ``source`` (from :func:`loop_source`) and return its ``make``."""
    namespace: dict[str, Any] = {}
    # Graph text appears only in comments, through repr (see line_codegen.compile_line).
    exec(compile(source, f"<compiled loop {where!r}>", "exec"), namespace)
    return namespace["make"]
