"""Regenerate this example's derived files from the paper's pseudocode ``sop_agent.yaml``.

- ``sop.yaml``: the importer's output (what ``sopgraph import sopagent sop_agent.yaml`` writes);
- ``cases.json``: the scripted API outcomes (``evals.service_interruption``);
- ``tools/<tool>/v1.py`` and ``tools/manifest.json``: one human-written compiled tool per API,
  calling it on the customer-service MCP server.

Run ``python examples/service_interruption/build.py`` to write them, ``--check`` to only
report the files that differ (the tests do).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from sopgraph.evals.service_interruption import cases_json, read_tree
from sopgraph.graphs.importers import dump_sop_yaml, import_file
from sopgraph.graphs.model import InputField, Sop

HERE = Path(__file__).resolve().parent
SERVER = "customer_service"
DATE = "2026-11-22"  # fixed, so the manifest is the same on every rebuild

TOOL_TEMPLATE = '''"""Compiled tool of the service-interruption SOP: one customer-service API for the run's case.

The node's ``when`` predicates test the fields of the returned outcome, so the verdict
itself is always true.
"""

from sopgraph.graphs.model import Verdict

SERVER = "{server}"
API = "{api}"


async def run(input: dict, ctx) -> Verdict:
    observed = await ctx.mcp.call(SERVER, API, {{"case_id": input["case_id"]}})
    return Verdict(value="true", observed=observed, explanation=f"{{API}} returned {{observed}}")
'''


def tool_sources(sop: Sop) -> dict[str, str]:
    """Registry tool name -> source, for every node that calls an API (shared by name)."""
    out: dict[str, str] = {}
    for node in sop.nodes.values():
        if node.api is not None:
            out.setdefault(node.tool_name, TOOL_TEMPLATE.format(api=node.api.name, server=SERVER))
    return out


def manifest(sop: Sop, sources: dict[str, str]) -> str:
    """The manifest as ``tools/registry.py`` writes it (sorted keys, two-space indent)."""
    tools = {
        name: {
            "active": 1,
            "history": [1],
            "versions": {
                "1": {
                    "sha256": hashlib.sha256(src.encode("utf-8")).hexdigest(),
                    "author": "human",
                    "train_pass": None,
                    "eval_pass": None,
                    "date": DATE,
                }
            },
        }
        for name, src in sorted(sources.items())
    }
    return json.dumps({"sop": sop.id, "tools": tools}, sort_keys=True, indent=2) + "\n"


CASE_ID = {
    "type": "string",
    "required": True,
    "description": "The customer case whose account, line and outage records the tools read",
    "example": "leaf_03",
}


def build(sop_dir: Path = HERE) -> dict[Path, str]:
    """Every derived file of the example: path -> content."""
    sop = import_file("sopagent", sop_dir / "sop_agent.yaml")
    # Every tool reads the case id (see tool_sources); the pseudocode format has no input section.
    sop.input = {"case_id": InputField(**CASE_ID)}
    sources = tool_sources(sop)
    files = {
        sop_dir / "sop.yaml": dump_sop_yaml(sop),
        sop_dir / "cases.json": cases_json(read_tree(sop_dir / "sop_agent.yaml")),
        sop_dir / "tools" / "manifest.json": manifest(sop, sources),
    }
    for name, src in sources.items():
        files[sop_dir / "tools" / name / "v1.py"] = src
    return files


def stale(sop_dir: Path = HERE) -> list[Path]:
    """The derived files that are missing or differ from what ``build`` makes."""
    return [
        p
        for p, text in build(sop_dir).items()
        if not p.is_file() or p.read_text(encoding="utf-8") != text
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only list the files that differ")
    args = parser.parse_args(argv)
    if args.check:
        for p in stale():
            print(f"stale: {p}; run python {Path(__file__).relative_to(Path.cwd())}")
        return 1 if stale() else 0
    for p, text in build().items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        print(f"wrote {p.relative_to(HERE.parent.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
