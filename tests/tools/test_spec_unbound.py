"""A spec's ``$names`` checked against a run input's fields before it runs (``bind.unbound``)."""

from __future__ import annotations

from sopgraph.tools.spec.bind import unbound
from sopgraph.tools.spec.model import Check

ROWS = {"server": "ops", "table": "t", "column": "x", "reduce": "mean"}


def _check(where: dict, lookups: dict | None = None) -> Check:
    measures = {"a": {**ROWS, "where": where}}
    return Check.from_dict(
        {"measures": measures, "lookups": lookups or {}, "value": "a", "op": ">", "threshold": 1}
    )


def test_every_name_is_an_input_field_a_lookup_or_the_time():
    check = _check({"site": "$site", "robot": "$robot", "at": "$timestamp", "kind": "robot"},
                   {"robot": {"server": "ops", "table": "r", "column": "id",
                              "where": {"station": "$station"}}})  # fmt: skip
    assert unbound(check, ["site", "station", "timestamp"]) is None
    assert unbound(check, ["site", "timestamp"]) == (
        "lookups.robot.where.station: $station is not an input field or lookup ($site, $timestamp)"
    )
    # the input's time is a field like any other, except as a record field's `of`
    assert unbound(check, ["site", "station"]) == (
        "measures.a.where.at: $timestamp is not an input field or lookup ($robot, $site, $station)"
    )
    record = {"server": "s", "tool": "get", "args": {"id": "$id"}, "field": "at", "within_days": 3}
    check = Check.from_dict({"measures": {"a": record}, "value": "a", "op": ">", "threshold": 0})
    assert unbound(check, ["id"]) is None  # `of` defaults to $timestamp
    assert unbound(check, []) == "measures.a.args.id: $id is not an input field or lookup (none)"


def test_a_lookup_binds_only_the_lookups_before_it():
    lookups = {
        "b": {"server": "ops", "table": "r", "column": "id", "where": {"id": "$c"}},
        "c": {"server": "ops", "table": "r", "column": "id", "where": {"site": "$site"}},
    }
    assert unbound(_check({"id": "$b"}, lookups), ["site"]) == (
        "lookups.b.where.id: $c is not an input field or lookup ($site)"
    )
    ordered = {"c": lookups["c"], "b": lookups["b"]}
    assert unbound(_check({"id": "$b"}, ordered), ["site"]) is None
    # a measurement names an undefined lookup: what the spec runner would say at run time
    assert unbound(_check({"id": "$x"}), ["site"]) == (
        "measures.a.where.id: $x is not an input field or lookup ($site)"
    )


def test_every_library_spec_binds_what_each_entry_type_reaching_its_node_carries():
    from sopgraph.examples import EXAMPLES
    from sopgraph.graphs.loader import load_sop
    from sopgraph.graphs.topology import reachable
    from sopgraph.tools.registry import Registry
    from sopgraph.tools.toolmaker.grammar import bound_fields

    checked = 0
    for folder in sorted(p.parent for p in EXAMPLES.rglob("sop.yaml")):
        if not (folder / "tools" / "manifest.json").exists():
            continue
        sop, registry = load_sop(folder), Registry(folder / "tools")
        for kind, starts in sop.entry.items():
            fields = bound_fields(sop, kind if len(sop.entry) > 1 else None)
            for node in reachable(sop, list(starts)):
                if not registry.has(sop.nodes[node].tool_name):
                    continue
                spec = getattr(registry.resolve(sop.nodes[node].tool_name).fn, "spec", None)
                if spec is not None:
                    checked += 1
                    assert unbound(spec, fields) is None, (folder.name, kind, node)
    assert checked >= 65  # the triage library's (entry type, node) pairs alone
