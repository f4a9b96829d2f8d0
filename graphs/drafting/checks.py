"""Soundness and coverage checks of a drafted SOP, in ``sopgraph validate``'s file:line form.

Each check is a function ``(sop, lines, file, facts) -> list[Problem]``; ``check_draft`` runs
the loader and ``validate`` first (a draft must be a valid SOP), then every check here:

- every node is reachable from an entry;
- every verdict branch of a decision leads somewhere;
- every path ends in an action or a stated outcome;
- every loop is bounded;
- every outcome value the document states is reachable;
- every parameter is used;
- every data hint resolves in the catalog (when there is one);
- every procedure sentence is cited by a node's ``source`` or listed as unused.

An outcome node is an action titled ``<output>: <value>`` (the form SOP-Bench's compiled
graphs answer in).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable

from sopgraph.graphs.drafting.facts import DraftFacts
from sopgraph.graphs.model import PARAM, Node, Sop
from sopgraph.graphs.problems import Problem, SopError
from sopgraph.graphs.topology import cycles, graph_of, reach
from sopgraph.graphs.yaml_lines import LineMap, parse_yaml

_CITED = re.compile(r"\(s(\d+)\)")

Check = Callable[[Sop, LineMap, str, DraftFacts], list[Problem]]


def _starts(sop: Sop) -> list[str]:
    return [t for ts in sop.entry.values() for t in ts if t in sop.nodes]


def _reached(sop: Sop) -> set[str]:
    return set(reach(graph_of(sop, lambda n: n if n in sop.nodes else None), _starts(sop)))


def outcome_of(node: Node) -> tuple[str, str] | None:
    """``(output, value)`` of an outcome node (an action titled ``output: value``), else None."""
    if not node.is_action or ":" not in node.title:
        return None
    field, _, value = node.title.partition(":")
    return field.strip(), value.strip()


def check_reachable(sop: Sop, lines: LineMap, file: str, facts: DraftFacts) -> list[Problem]:
    reached = _reached(sop)
    return [
        Problem(
            file,
            lines.node(n),
            n,
            "not reachable from any entry; link it from the step "
            "before it in the document, or delete it",
        )  # fmt: skip
        for n in sop.nodes
        if n not in reached
    ]


def check_branches(sop: Sop, lines: LineMap, file: str, facts: DraftFacts) -> list[Problem]:
    out = []
    scope = f"(s{facts.scope})" if facts.scope is not None else None
    for node in sop.decision_nodes:
        nxt = node.next
        if nxt.always or nxt.when:
            continue
        for verdict in ("true", "false"):
            if verdict == "false" and scope and scope in node.source and node.id in _starts(sop):
                continue  # the procedure does not apply: it ends, as the document implies
            if not getattr(nxt, verdict):
                out.append(Problem(
                    file, lines.node(node.id, "next") if nxt.edges() else lines.node(node.id),
                    node.id,
                    f"the '{verdict}' verdict leads nowhere; add 'next.{verdict}' with the step "
                    "the document gives for it (or 'always' when both verdicts go on alike)",
                ))  # fmt: skip
    return out


def check_ends(sop: Sop, lines: LineMap, file: str, facts: DraftFacts) -> list[Problem]:
    """A path ends at a node with no children; it must be an action (an outcome is one)."""
    return [
        Problem(
            file,
            lines.node(n.id),
            n.id,
            "a path ends at this decision, with no action or "
            "outcome after it; lead its verdicts to what the document says happens next",
        )  # fmt: skip
        for n in sop.decision_nodes
        if not n.next.edges()
    ]


def check_loops(sop: Sop, lines: LineMap, file: str, facts: DraftFacts) -> list[Problem]:
    graph = graph_of(sop, lambda n: n if n in sop.nodes else None)
    unbounded = [n for n in sop.nodes if sop.nodes[n].max_visits is None]
    out = []
    for loop in cycles(graph, unbounded):
        head = next(n for n in sop.nodes if n in loop)
        out.append(Problem(
            file, lines.node(head), head,
            f"the loop through {', '.join(sorted(loop))} has no visit bound; add "
            "'max_visits: N' to one of its nodes (the document's retry count, if it gives one)",
        ))  # fmt: skip
    return out


def check_outcomes(sop: Sop, lines: LineMap, file: str, facts: DraftFacts) -> list[Problem]:
    reached = _reached(sop)
    given = {
        v.lower() for n in sop.nodes.values() if n.id in reached and (o := outcome_of(n))
        for v in [o[1]]
    }  # fmt: skip
    return [
        Problem(
            file,
            lines.of("nodes"),
            "",
            f"outcome '{o.value}' ({facts.cite(o.sentence)}) is stated by the document but "
            f"no reachable node gives it; add an action titled '{o.field}: {o.value}' on "
            "the path that ends in it",
        )  # fmt: skip
        for o in facts.outcomes
        if o.value.lower() not in given
    ]


def check_params(sop: Sop, lines: LineMap, file: str, facts: DraftFacts) -> list[Problem]:
    used = set(PARAM.findall(" ".join(n.text for n in sop.nodes.values())))
    return [
        Problem(
            file,
            lines.of("params", p),
            "",
            f"parameter '{p}' is used by no node text; "
            f"write '{{{p}}}' where the text compares against it, or delete it",
        )  # fmt: skip
        for p in sop.params
        if p not in used
    ]


def check_data(sop: Sop, lines: LineMap, file: str, facts: DraftFacts) -> list[Problem]:
    if facts.catalog is None:
        return []
    names = set(facts.catalog)
    out = []
    for node in sop.nodes.values():
        for i, hint in enumerate(node.data):
            if hint in names:
                continue
            near = difflib.get_close_matches(hint, facts.catalog, n=1, cutoff=0.6)
            fix = f"did you mean '{near[0]}'?" if near else "name a tool, table, column or metric"
            out.append(Problem(file, lines.node(node.id, "data", i), node.id,
                               f"data hint '{hint}' is not in the catalog; {fix}"))  # fmt: skip
    return out


def cited(sop: Sop) -> set[int]:
    """The sentence numbers the nodes' ``source`` fields cite (``(sN)``)."""
    return {int(m) for n in sop.nodes.values() for m in _CITED.findall(n.source)}


def check_coverage(sop: Sop, lines: LineMap, file: str, facts: DraftFacts) -> list[Problem]:
    done = cited(sop) | set(facts.unused)
    return [
        Problem(
            file,
            lines.of("nodes"),
            "",
            f'sentence {s.cite} "{_short(s.text)}" is cited by no node\'s source and not '
            "listed as unused; cite it on the node that encodes it, or add "
            f"{s.number} to 'unused' in draft.json",
        )  # fmt: skip
        for s in facts.sentences
        if s.procedural and s.number not in done
    ]


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


CHECKS: tuple[Check, ...] = (
    check_reachable, check_branches, check_ends, check_loops, check_outcomes, check_params,
    check_data, check_coverage,
)  # fmt: skip


def check_sop(sop: Sop, lines: LineMap, file: str, facts: DraftFacts) -> list[Problem]:
    """Every draft check's problems for a loaded ``sop``, in file order."""
    out = [p for check in CHECKS for p in check(sop, lines, file, facts)]
    return sorted(out, key=lambda p: p.line)


def check_draft(text: str, file: str, facts: DraftFacts) -> list[Problem]:
    """The loader's and validator's problems of the draft's YAML ``text``, then every draft
    check's (only when it loads: a broken file's first mistakes cause the rest)."""
    from sopgraph.graphs.loader import load_sop_text
    from sopgraph.graphs.validate import validate

    try:
        sop = load_sop_text(text, file, check=False)
        _, lines = parse_yaml(text, file)
    except SopError as exc:
        return list(exc.problems)
    found = validate(sop, lines, file)
    seen = {(p.line, p.node) for p in found}
    found += [
        p for p in check_sop(sop, lines, file, facts) if (p.line, p.node) not in seen or not p.node
    ]
    return sorted(found, key=lambda p: p.line)
