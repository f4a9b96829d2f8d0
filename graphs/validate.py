"""Graph-level checks of an SOP: references, reachability, loops, parameters and dead edges.

The loader checks the shape of each piece; these checks need the whole graph. Every problem
names the line of the offending key and the node that holds it, and says how to fix it.

What an action can lead to (mirrors ``graphs/compiler.py``): an action ends ``true`` when it
is done or approved and ``false`` only when an approver rejects it, so it never ends
``no_data``; its verdict carries no output, so ``when`` predicates can test only ``value``;
and it does not route natural-language conditions. Children behind any other key never run.
``on_error`` is allowed on actions: any action may have a registry tool that fails.
The warnings (parts that are suspicious but still run) are in ``graphs/sop_warnings.py``.
"""

from __future__ import annotations

import difflib
import re

from sopgraph.graphs.input_schema import input_contract_problems
from sopgraph.graphs.model import PARAM, Node, Predicate, Sop
from sopgraph.graphs.problems import Problem
from sopgraph.graphs.topology import Graph, cycles, edges_of, graph_of, reach, shortest_cycle
from sopgraph.graphs.yaml_lines import LineMap

# A node id names a LangGraph node (which reserves '|' and ':') and a tool folder.
_NODE_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_RESERVED_IDS = ("__start__", "__end__")
# Function-calling APIs accept only these names.
_API_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# Anything between braces without spaces that str.format would read as a field: positions
# ``{0}``, ``{}``, attributes ``{x.attr}``, items ``{x[0]}``, specs ``{x:>10}``, ``{x!r}``.
_FORMAT_FIELD = re.compile(r"\{(\w*(?:[.\[:!][^{}\s]*)?)\}")
_NEEDS_VALUE = ("lt", "le", "gt", "ge", "in", "not_in", "contains")
# "did you mean ...?" compares the name with every candidate (difflib), at a cost that grows
# with the product of their lengths: about 0.2 us per pair of characters, 21 us for a 10-letter
# typo against a 9-letter id, 2 ms at 100 letters each. An SOP naming 60,000 unknown ids among
# 1,000 nodes took 160 s. A validation spends at most this many character pairs on guesses
# (about 0.4 s); the names past it get the fix without a guess (the first 20 problems shown
# usually have theirs), and every problem is still reported.
MAX_SUGGESTION_WORK = 2_000_000
# A loop's path in a message: its first and last nodes when it is longer than this.
MAX_LOOP_SHOWN = 12


def validate(sop: Sop, lines: LineMap, file: str) -> list[Problem]:
    """Every graph-level mistake in ``sop``, in file order; empty when the SOP is sound.

    Example:
        >>> data, lines = parse_yaml(text, "sop.yaml")
        >>> validate(Sop.model_validate(data), lines, "sop.yaml")
        []
    """
    return _Checker(sop, lines, file).problems()


class _Checker:
    def __init__(self, sop: Sop, lines: LineMap, file: str):
        self.sop, self.lines, self.file = sop, lines, file
        self.out: list[Problem] = []
        self.ids = list(sop.nodes)
        # Unknown references resolved to their closest id, so that one typo gives one error
        # rather than a cascade of unreachable nodes; None when nothing is close (or the
        # suggestion budget is spent).
        self.guess: dict[str, str | None] = {}
        self.suggestion_work = MAX_SUGGESTION_WORK
        self.near_param: dict[str, str | None] = {}
        self.param_names = list(sop.params)
        self.id_chars = sum(map(len, self.ids))
        self.param_chars = sum(map(len, self.param_names))

    def _add(self, line: int, node: str, message: str) -> None:
        self.out.append(Problem(self.file, line, node, message))

    def _near(self, name: str, options: list[str], chars: int) -> str | None:
        """The closest of ``options`` (``chars`` characters in all) to ``name``, or None; None
        too once the validation's MAX_SUGGESTION_WORK is spent."""
        cost = len(name) * chars
        if cost > self.suggestion_work:
            return None
        self.suggestion_work -= cost
        near = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
        return near[0] if near else None

    def _resolve(self, name: str) -> str | None:
        if name in self.sop.nodes:
            return name
        if name not in self.guess:
            self.guess[name] = self._near(name, self.ids, self.id_chars)
        return self.guess[name]

    def _unknown(self, name: str) -> str:
        near = self._resolve(name)
        hint = f"did you mean '{near}'?" if near else "define it under 'nodes' or fix the id"
        return f"unknown node '{name}'; {hint}"

    def problems(self) -> list[Problem]:
        self._check_ids()
        self._check_entry()
        for node in self.sop.nodes.values():
            self._check_edges(node)
            self._check_node(node)
        self._check_params()
        self.out += input_contract_problems(self.sop, self.lines, self.file)
        graph = self._graph()
        # An unresolvable typo would make every node after it look unreachable.
        if all(self.guess.values()):
            self._check_reachable(graph)
        self._check_loops(graph)
        return sorted(self.out, key=lambda p: p.line)

    # -- one node at a time ------------------------------------------------------------------

    def _check_ids(self) -> None:
        for nid in self.ids:
            if nid in _RESERVED_IDS:
                self._add(self.lines.node(nid), nid, f"'{nid}' is reserved by LangGraph; rename it")
            elif not _NODE_ID.match(nid):
                self._add(
                    self.lines.node(nid),
                    nid,
                    "a node id holds only letters, digits, '_', '-' and '.' (it names a graph "
                    "node and a tool folder); rename it",
                )

    def _check_entry(self) -> None:
        if not self.sop.entry:
            self._add(
                self.lines.of("entry"),
                "",
                "no entry: map each input type to its first node, e.g. 'entry: {alarm: [obs_x]}'",
            )
        for kind, targets in self.sop.entry.items():
            if not targets:
                self._add(
                    self.lines.of("entry", kind),
                    "",
                    f"entry '{kind}' lists no node; name the node(s) to start with",
                )
            seen: set[str] = set()
            for i, target in enumerate(targets):
                line = self.lines.of("entry", kind, i)
                node = self.sop.nodes.get(target)
                if target in seen:
                    self._add(line, target, f"entry '{kind}' lists '{target}' twice; remove one")
                elif node is None:
                    self._add(line, target, f"entry '{kind}' names {self._unknown(target)}")
                elif node.is_action:
                    self._add(
                        line,
                        target,
                        f"entry '{kind}' starts at an action; start at the observation, "
                        "root_cause or constraint node that decides whether to act",
                    )
                seen.add(target)

    def _check_edges(self, node: Node) -> None:
        seen: set[tuple[str, str]] = set()
        for edge in edges_of(node):
            line = self.lines.node(node.id, *edge.path)
            if (edge.where, edge.target) in seen:
                self._add(line, node.id, f"{edge.where} lists '{edge.target}' twice; remove one")
            elif edge.target not in self.sop.nodes:
                self._add(line, node.id, f"{edge.where} names {self._unknown(edge.target)}")
            seen.add((edge.where, edge.target))
        for j, cond in enumerate(node.next.when):
            line = self.lines.node(node.id, "next", "when", j)
            if not cond.then:
                self._add(
                    line,
                    node.id,
                    f"next.when[{j}] leads nowhere; list the nodes to run under 'then' or delete it",
                )
            if isinstance(cond.if_, str):
                if not cond.if_.strip():
                    self._add(line, node.id, f"next.when[{j}].if is empty; write the condition")
            else:
                self._check_predicate(node, j, cond.if_)

    def _check_predicate(self, node: Node, j: int, pred: Predicate) -> None:
        line = self.lines.node(node.id, "next", "when", j, "if")
        where = f"next.when[{j}]"
        if not pred.var.strip():
            self._add(line, node.id, f"{where}: 'var' is empty; name a key of the node's output")
        if pred.op in _NEEDS_VALUE and pred.value is None:
            self._add(line, node.id, f"{where}: op '{pred.op}' needs a 'value' to compare with")
        elif pred.op in ("in", "not_in") and not isinstance(pred.value, list):
            self._add(
                line,
                node.id,
                f"{where}: op '{pred.op}' needs a list value, e.g. 'value: [a, b]', "
                f"got {pred.value!r}",
            )

    def _check_node(self, node: Node) -> None:
        nid, at = node.id, self.lines.node
        if node.api is not None and not _API_NAME.match(node.api.name):
            self._add(
                at(nid, "api", "name"),
                nid,
                f"api.name '{node.api.name}' must be a function name (letters, digits, '_' or "
                "'-', at most 64) so a model can call it",
            )
        if not node.is_action:
            if node.approval == "required":
                self._add(
                    at(nid, "approval"),
                    nid,
                    "'approval' only gates actions; remove it, or make this node an action",
                )
            return
        if node.approval == "required" and "cost" not in node.model_fields_set:
            self._add(
                at(nid, "approval"),
                nid,
                "a gated action needs a 'cost' (low, medium or high) so the approver knows "
                "what is at stake; add e.g. 'cost: high'",
            )
        never = "never run: an action ends approved/done (true) or rejected (false)"
        if node.next.no_data:
            self._add(
                at(nid, "next", "no_data"),
                nid,
                f"children under 'no_data' {never}, never without data; "
                "move them to 'true' or 'always'",
            )
        if node.next.false and node.approval != "required":
            self._add(
                at(nid, "next", "false"),
                nid,
                "children under 'false' never run: only a rejected approval ends an action "
                "false, and this action needs none; add 'approval: required' or move them",
            )
        for j, cond in enumerate(node.next.when):
            if isinstance(cond.if_, str):
                self._add(
                    at(nid, "next", "when", j),
                    nid,
                    f"next.when[{j}] never runs: actions do not route natural-language "
                    "conditions; decide it on a constraint node after this action",
                )
            elif cond.if_.var not in ("value", "verdict"):
                self._add(
                    at(nid, "next", "when", j),
                    nid,
                    f"next.when[{j}] never holds: an action's outcome has no '{cond.if_.var}' "
                    "to test (only 'value'); test it on a decision node before the action",
                )

    def _check_params(self) -> None:
        for node in self.sop.nodes.values():
            for field in dict.fromkeys(_FORMAT_FIELD.findall(node.text)):
                if PARAM.fullmatch("{" + field + "}"):
                    continue
                name = re.match(r"[A-Za-z_]\w*", field)
                fix = f"write '{{{name[0]}}}'" if name else "name a parameter, e.g. '{limit}'"
                self._add(
                    self.lines.node(node.id, "text"),
                    node.id,
                    f"text placeholder '{{{field}}}' is not a parameter name: only plain "
                    f"'{{name}}' placeholders are filled (no positions, attributes or format "
                    f"specs); {fix}",
                )
            for name in dict.fromkeys(PARAM.findall(node.text)):
                if name in self.sop.params:
                    continue
                if name not in self.near_param:
                    self.near_param[name] = self._near(name, self.param_names, self.param_chars)
                near = self.near_param[name]
                hint = f"did you mean '{near}'?" if near else "add a default under 'params'"
                self._add(
                    self.lines.node(node.id, "text"),
                    node.id,
                    f"text uses parameter '{{{name}}}' that 'params' does not define; {hint}",
                )

    # -- the whole graph -----------------------------------------------------------------------

    def _graph(self) -> Graph:
        """Edges by source, unknown targets replaced by their guess (or dropped)."""
        return graph_of(self.sop, self._resolve)

    def _starts(self) -> list[str]:
        starts = [self._resolve(t) for targets in self.sop.entry.values() for t in targets]
        return list(dict.fromkeys(s for s in starts if s is not None))

    def _check_reachable(self, graph: Graph) -> None:
        if not self.sop.entry:
            return
        reached = set(reach(graph, self._starts()))
        lost = [n for n in self.ids if n not in reached]
        has_lost_parent = {e.target for n in lost for e in graph[n] if e.source != e.target}
        # Report only where a detached piece begins; a detached cycle has no such start,
        # so its first node in file order stands for it.
        for nid in [n for n in lost if n not in has_lost_parent] + lost:
            if nid in reached:
                continue
            more = _reach_new(graph, nid, reached) - 1
            plural = "node hangs" if more == 1 else "nodes hang"
            tail = f" ({more} more {plural} off it)" if more else ""
            self._add(
                self.lines.node(nid),
                nid,
                f"not reachable from any entry{tail}; list it in another node's 'next' or in "
                "'entry', or delete it",
            )

    def _check_loops(self, graph: Graph) -> None:
        order = reach(graph, self._starts())
        rank = {n: i for i, n in enumerate(order)}
        for loop in cycles(graph, order):
            if not self._has_exit(loop):
                what = "has no way out: every outcome of its nodes continues the loop"
                self._report_loop(graph, loop, rank, what + "; send some outcome elsewhere")
        unbounded = [n for n in order if self.sop.nodes[n].max_visits is None]
        for loop in cycles(graph, unbounded):
            self._report_loop(
                graph, loop, rank, "has no visit bound; add 'max_visits: N' to one of its nodes"
            )

    def _has_exit(self, loop: set[str]) -> bool:
        for nid in loop:
            node = self.sop.nodes[nid]
            if any(self._resolve(c) not in loop for _, c in node.next.edges()):
                return True
            if node.is_action:
                outcomes = ["true", "false"] if node.approval == "required" else ["true"]
            else:
                outcomes = ["true", "false", "no_data"]
            for v in outcomes:
                fired = node.next.always + getattr(node.next, v)
                if not any(self._resolve(c) in loop for c in fired):
                    return True  # this outcome may stop here: the branch ends
        return False

    def _report_loop(self, graph: Graph, loop: set[str], rank: dict[str, int], what: str) -> None:
        """Report ``loop`` at the edge that jumps back to its first node reached from an entry."""
        head = min(loop, key=lambda n: rank.get(n, len(rank)))
        back, path = shortest_cycle(graph, loop, head)
        if len(path) > MAX_LOOP_SHOWN:  # one readable line: its first 6 nodes and last 4
            path = [*path[:6], f"… ({len(path) - 10} more)", *path[-4:]]
        shown = " → ".join([*path, head])
        self._add(
            self.lines.node(back.source, *back.path),
            back.source,
            f"{back.where} jumps back to '{head}': the loop {shown} {what}",
        )


def _reach_new(graph: Graph, start: str, reached: set[str]) -> int:
    """How many nodes ``start`` reaches that ``reached`` does not hold yet; adds them to it.

    ``reached`` is closed under ``graph``'s edges (a union of reach sets), so nothing new lies
    behind a node it holds: each node is walked once over all the detached pieces, where a
    fresh walk per piece made many pieces over one shared tail quadratic."""
    count, stack = 0, [start]
    while stack:
        nid = stack.pop()
        if nid in reached:
            continue
        reached.add(nid)
        count += 1
        stack += [e.target for e in graph[nid] if e.target not in reached]
    return count
