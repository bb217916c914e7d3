"""A signature's outputs against its inputs: every input an output needs (a Placeholder
without default upstream of it, the graph cut where the signature's inputs feed it) must be
one of the signature's inputs, as a Keras Model's outputs must connect to its inputs;
otherwise ``export``, ``predict`` and ``run`` of the signature could not feed it."""

from __future__ import annotations

from specflow.graph.graph_def import parse_input


def missing_inputs(graph_def, output: str, fed: list[str], exempt: set[str]) -> list[str]:
    """The Placeholders (not in ``exempt``) that ``output`` depends on through data or control
    inputs, not cut by a tensor of ``fed``, in the order met."""
    nodes = graph_def.node_map()
    cut = {parse_input(t).node for t in fed}
    start = parse_input(output).node
    seen, stack, found = {start}, [start], []
    while stack:
        name = stack.pop()
        if name in cut:
            continue
        node = nodes.get(name)
        if node is None:
            continue
        if node.op == "Placeholder" and name not in exempt:
            found.append(name)
        for inp in node.inputs:
            dep = parse_input(inp).node
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return found
