"""The SOP format's JSON Schema for editors (issue 27, finding 5): `sopgraph schema` writes it from
the pydantic SOP model, docs/sop.schema.json is that output, every example SOP passes it, the
mistakes the loader refuses at the shape level it refuses too, and docs/sop-format.md names
every key it holds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from sopgraph.cli import main
from sopgraph.graphs.loader import SopError, load_sop, load_sop_text
from sopgraph.graphs.yaml_lines import parse_yaml

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "docs" / "sop.schema.json"
SOPS = sorted(
    [
        *ROOT.glob("examples/**/sop.yaml"),
        *ROOT.glob("evals/sopbench/graphs/*/sop.yaml"),
        ROOT / "sopgraph" / "templates" / "init" / "project" / "sop.yaml",
    ]
)


def generated(capsys) -> str:
    assert main(["schema"]) == 0
    return capsys.readouterr().out


def test_the_committed_schema_is_what_the_command_writes(capsys):
    assert COMMITTED.read_text(encoding="utf-8") == generated(capsys), (
        "docs/sop.schema.json is stale: run `sopgraph schema > docs/sop.schema.json`"
    )


def test_the_command_writes_a_file_with_o(tmp_path, capsys):
    out = tmp_path / "sop.schema.json"
    assert main(["schema", "-o", str(out)]) == 0
    assert json.loads(out.read_text()) == json.loads(generated(capsys))


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(COMMITTED.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("path", SOPS, ids=[str(p.relative_to(ROOT)) for p in SOPS])
def test_every_example_sop_passes_the_schema(path, validator):
    load_sop(path)  # an example the loader refuses is no example
    data, _ = parse_yaml(path.read_text(encoding="utf-8"), str(path))
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(data)]
    assert not errors, "\n".join(errors[:5])


GOOD = """\
id: t
entry: {start: obs_a}
nodes:
  obs_a:
    kind: observation
    text: The thing holds.
    next: {true: act_b, false: [act_c]}
  act_b: {kind: action, text: Do it., cost: high, approval: required}
  act_c: {kind: action, text: Do not.}
"""

# (what the mistake is, the line replaced, its replacement): each one refused by both.
MISTAKES = [
    ("unknown node key", "    text: The thing holds.", "    txt: The thing holds."),
    ("misspelled kind", "    kind: observation", "    kind: obsevation"),
    ("approval not a policy", "approval: required}", "approval: yes}"),
    ("cost not a level", "cost: high,", "cost: huge,"),
    ("unknown top-level key", "id: t", "id: t\nparams_for: site"),
    ("unknown next key", "{true: act_b,", "{ok: act_b, true: act_b,"),
    ("max_visits out of range", "    kind: observation", "    kind: observation\n    max_visits: 0"),
    ("predicate op", "    kind: observation", "    kind: observation\n    next: {when: [{if: {var: x, op: equals, value: 1}, then: [act_c]}]}"),
]  # fmt: skip


def test_a_good_sop_passes_both(validator):
    load_sop_text(GOOD)
    assert not list(validator.iter_errors(parse_yaml(GOOD, "t")[0]))


@pytest.mark.parametrize("what,old,new", MISTAKES, ids=[m[0] for m in MISTAKES])
def test_the_schema_refuses_what_the_loader_refuses(what, old, new, validator):
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    if what == "predicate op":  # replaces the node's next: drop the first one
        text = text.replace("    next: {true: act_b, false: [act_c]}\n", "", 1)
    with pytest.raises(SopError):
        load_sop_text(text)
    assert list(validator.iter_errors(parse_yaml(text, "t")[0])), what


def _keys(schema: dict) -> set[str]:
    keys = set(schema.get("properties", {}))
    for sub in schema.get("$defs", {}).values():
        keys |= set(sub.get("properties", {}))
    return keys


def test_the_format_page_names_every_key_and_how_editors_use_the_schema():
    page = (ROOT / "docs" / "sop-format.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([a-z_]+)[:`]", page))
    missing = sorted(_keys(json.loads(COMMITTED.read_text())) - named)
    assert not missing, f"docs/sop-format.md does not name: {missing}"
    assert "# yaml-language-server: $schema=" in page
