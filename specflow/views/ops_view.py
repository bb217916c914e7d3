"""The op registry as rich renderables for `specflow ops`."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from specflow.ops.registry import all_ops, get_op, kernel_summary


def ops_table() -> Table:
    ops = all_ops()
    t = Table(title=f"{len(ops)} ops", header_style="bold")
    t.add_column("op", style="cyan", no_wrap=True)
    t.add_column("signature")
    t.add_column("kernels", style="green")
    t.add_column("stateful", justify="center")
    for name, od in ops.items():
        sig = od.signature()
        sig = sig[len(name):] if sig.startswith(name) else sig
        t.add_row(Text(name), Text(sig), Text(kernel_summary(name)), "yes" if od.is_stateful else "")
    return t


def op_detail(name: str) -> Group:
    from specflow.io.tf_functions import CALL_OPS, LOAD_TIME_OPS

    if name in LOAD_TIME_OPS:  # TF ops a loaded graph never holds: no OpDef, nothing to list
        how = ("inlined: the called function's nodes replace the call" if name in CALL_OPS else
               "lowered to Switch/Merge/Enter/Exit/NextIteration, run in loop frames, with gradients")
        return Group(Text(name, style="bold cyan"),
                     Text(f"TensorFlow op handled when a TF graph is loaded (io/tf_functions.py): {how}."))
    od = get_op(name)
    parts = [Text(od.signature(), style="bold cyan")]
    if od.doc:
        parts.append(Text(od.doc))
    if od.attrs:
        t = Table("attr", "type / default", header_style="bold")
        for a in od.attrs.values():
            t.add_row(Text(a.name), Text(a.describe().split(": ", 1)[1]))
        parts.append(t)
    aliases = [f"{a.name} (spec key '{a.alias}')" for a in od.inputs if a.alias]
    if aliases:
        parts.append(Text("spec aliases: " + ", ".join(aliases)))
    parts.append(Text(f"kernels: {kernel_summary(name)}", style="green"))
    parts.append(Text("stateful" if od.is_stateful else "stateless", style="dim"))
    parts.append(Text("gradient: " + ("registered" if od.gradient else "none"), style="dim"))
    return Group(*parts)


def coverage_renderable(cov) -> Group:
    """``specflow ops --missing-from``: the missing ops, one a line (easy to pipe), then the
    coverage line."""
    head = f"{len(cov.missing)} op(s) of {cov.source.name} missing" + (":" if cov.missing else "")
    parts = [Text(head, style="bold")]
    parts += [Text(f"  {name}", style="cyan") for name in cov.missing]
    parts.append(Text(f"coverage: {cov.covered}/{len(cov.listed)} ({cov.percent:.1f}%) of {cov.source}"))
    if cov.lowered:
        parts.append(Text(f"counted as covered: {len(cov.lowered)} op(s) a TF graph is rewritten without when it "
                          f"is loaded (no kernel of their own): {', '.join(cov.lowered)}"))
    return Group(*parts)
