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
    parts = [Text(f"{len(cov.missing)} op(s) of {cov.source.name} missing:", style="bold")]
    parts += [Text(f"  {name}", style="cyan") for name in cov.missing]
    parts.append(Text(f"coverage: {cov.covered}/{len(cov.listed)} ({cov.percent:.1f}%) of {cov.source}"))
    return Group(*parts)
