"""``sopgraph schema [sop|check]``: the SOP format (docs/sop.schema.json) or a spec tool's
``Check`` (docs/check.schema.json) as a JSON Schema, for editors and other tools.

Generated from the pydantic SOP model (``graphs/model.py``), then told what the model accepts
through its validators rather than its types: a single node id where a list is expected, the
node kinds, the visit bound; and a description on each key, which editors show on hover.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from sopgraph.graphs.model import EDGE_KEYS, MAX_VISITS, NODE_KINDS, Sop
from sopgraph.output_file import write_output
from sopgraph.tools.spec import Check

# What each key means, shown by an editor on hover (docs/sop-format.md says it at length).
DOCS: dict[str, dict[str, str]] = {
    "Sop": {
        "id": "The SOP's id: letters, digits and '_'; runs, tools and MCP clients name it.",
        "title": "A human title, shown in drawings and reports.",
        "version": "The SOP's version, a whole number from 1.",
        "description": "What the procedure is for; MCP clients see it in describe_sop.",
        "params": "Default parameters, used as {name} in node texts and read by tools "
        "(ctx.params); params/<value of params_by>.yaml overrides them.",
        "params_by": "The input field whose value picks params/<value>.yaml "
        "(a string or integer field of `input`).",
        "input": "The run input's fields besides `type`; checked before any node runs.",
        "entry": "Input type (the input's `type`) -> the node ids a run of that type starts at.",
        "nodes": "The nodes by id: observation, root_cause and constraint nodes decide a "
        "verdict; action nodes record what was done.",
    },
    "Node": {
        "kind": "observation | root_cause | constraint (decide a verdict) | action.",
        "title": "A short title, shown in drawings and reports.",
        "text": "The step as the SOP states it; {param} placeholders are filled from params.",
        "data": "Hints of what to query, 'server.metric' or 'server.table'; a decision node "
        "with neither data nor api is a free-text condition for the LLM judge.",
        "api": "A function the node calls (SOP-agent's API): {name, description}.",
        "tool": "The compiled tool's name in tools/ (default: the node id).",
        "next": "Where the run goes after this node, by verdict or condition.",
        "cost": "low | medium | high: what an action costs; required with approval.",
        "approval": "required: the action pauses the run until approved or rejected.",
        "max_visits": f"How often a node in a loop may run, 1 to {MAX_VISITS}; every loop "
        "needs one.",
        "source": "The written rule this node encodes (for auditors); never read by executors.",
    },
    "Next": {
        "true": "Children when the verdict is true (an action: done or approved).",
        "false": "Children when the verdict is false (an action: rejected).",
        "no_data": "Children when the data is missing (decision nodes only).",
        "always": "Children whatever the verdict.",
        "on_error": "Children when no executor could decide the node.",
        "when": "Conditions over the node's output: {if: predicate or text, then: [ids]}.",
    },
    "Condition": {
        "if": "A predicate {var, op, value} decided by code, or a text decided by the LLM router.",
        "then": "The node ids to run when `if` holds.",
    },
    "Predicate": {
        "var": "A key of the node's observed value (dotted for nesting), or value/observed.",
        "op": "eq ne lt le gt ge in not_in contains exists (strings compare case-insensitively).",
        "value": "What to compare with (a list for in/not_in).",
    },
    "Api": {"name": "A function name a model can call.", "description": "What it does."},
    "InputField": {
        "type": "string | integer | number | boolean | datetime (ISO 8601) | object | list.",
        "required": "Every run needs it.",
        "required_for": "The input types (entries) that need it.",
        "description": "What it is; shown in `sopgraph run SOP --help` and to MCP clients.",
        "example": "An example value; the example input is built from these.",
        "values": "The allowed values, when only a few are.",
    },
}


def _one_or_many() -> dict[str, Any]:
    """A node id or a list of them (the model's before-validators take either)."""
    ids = {"type": "string"}
    return {"anyOf": [ids, {"type": "array", "items": ids}]}


def sop_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of an SOP file."""
    schema = Sop.model_json_schema(by_alias=True)
    defs = schema["$defs"]
    node = defs["Node"]["properties"]
    del node["id"]  # the key under `nodes` names the node; an `id` inside is ignored
    node["kind"]["enum"] = list(NODE_KINDS)
    node["max_visits"]["anyOf"][0].update(minimum=1, maximum=MAX_VISITS)
    for key in EDGE_KEYS:
        defs["Next"]["properties"][key].update(_one_or_many())
        del defs["Next"]["properties"][key]["items"], defs["Next"]["properties"][key]["type"]
    schema["properties"]["entry"]["additionalProperties"] = _one_or_many()
    for name, fields in DOCS.items():
        where = schema["properties"] if name == "Sop" else defs[name]["properties"]
        for key, text in fields.items():
            where[key]["description"] = text
            where[key].pop("title", None)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **schema,
        "title": "sopgraph SOP",
    }


def check_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a spec tool's ``Check`` (its JSON form), straight
    from the model: the three measurement kinds are told apart by the key each requires
    (``metric``, ``table``, ``tool``)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **Check.model_json_schema(),
        "title": "sopgraph Check",
    }


def cmd_schema(args: argparse.Namespace) -> int:
    schema = check_json_schema() if args.what == "check" else sop_json_schema()
    text = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    if args.output:
        write_output(args.output, text)
    else:
        print(text, end="")
    return 0


def register(sub: Any) -> None:
    """Register ``schema`` on the top-level subparsers."""
    s = sub.add_parser(
        "schema",
        help="print the SOP format's JSON Schema (for editors; docs/sop.schema.json)",
        description="Print the JSON Schema of an SOP file, generated from the SOP model. "
        "Point an editor at it: `# yaml-language-server: $schema=<path or URL>` as the first "
        "line of sop.yaml (VS Code's YAML extension). `sopgraph schema check` prints a spec "
        "tool's Check instead (docs/check.schema.json).",
    )
    s.add_argument(
        "what", nargs="?", choices=("sop", "check"), default="sop",
        help="sop (default): an SOP file; check: a spec tool's Check",
    )  # fmt: skip
    s.add_argument("-o", "--output", help="write it to this file instead of stdout")
    s.set_defaults(fn=cmd_schema)
