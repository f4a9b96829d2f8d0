"""Warnings about an SOP: parts that are suspicious but still run, which never fail a load.

A parameter no node text uses, an observation or constraint that leads nowhere, a visit bound
on a node in no loop: each is reported as a ``SopWarning`` at its line, with what to do about
it. They read the same graph as the checks in ``graphs/validate.py`` (an unknown target taken
for its closest id), which stay the errors.
"""

from __future__ import annotations

from sopgraph.graphs.model import PARAM, Sop
from sopgraph.graphs.problems import Problem
from sopgraph.graphs.topology import cycles
from sopgraph.graphs.validate import _Checker  # the graph it reads
from sopgraph.graphs.yaml_lines import LineMap


class SopWarning(Problem):
    """Something suspicious that still runs; printed as ``warning:``, never fails a load."""

    def __str__(self) -> str:
        return f"warning: {self.file}:{self.line}: {self.node or '-'}: {self.message}"


def find_warnings(sop: Sop, lines: LineMap, file: str) -> list[SopWarning]:
    """Suspicious but runnable parts of ``sop``: unused params, dead-end observations,
    visit bounds outside any loop. In file order."""
    found: list[SopWarning] = []
    texts = " ".join(n.text for n in sop.nodes.values())
    used = set(PARAM.findall(texts))
    for name in sop.params:
        if name not in used:
            found.append(
                SopWarning(
                    file,
                    lines.of("params", name),
                    "",
                    f"parameter '{name}' appears in no node text; a tool may still read "
                    "it, else delete it",
                )
            )
    graph = _Checker(sop, lines, file)._graph()
    in_loop = {n for loop in cycles(graph, list(sop.nodes)) for n in loop}
    for node in sop.nodes.values():
        line = lines.node(node.id)
        if node.kind in ("observation", "constraint") and not node.next.edges():
            found.append(
                SopWarning(
                    file,
                    line,
                    node.id,
                    f"this {node.kind} leads nowhere, so its verdict changes nothing; add "
                    "'next' edges, or make it a root_cause if it is a conclusion",
                )
            )
        if node.max_visits is not None and node.id not in in_loop:
            found.append(
                SopWarning(
                    file,
                    lines.node(node.id, "max_visits"),
                    node.id,
                    "'max_visits' has no effect: this node is in no loop",
                )
            )
    return sorted(found, key=lambda p: p.line)
