"""sopgraph's way on a SOP-Bench domain with no hand-written graph: a graph made from the domain
folder alone, label-free, then run compiled (0 model tokens a task).

What the folder gives, with no label read:

- the data tools: each tool of ``toolspecs.json`` whose required arguments are input columns
  becomes an observation node that calls it (``decision_graph.Gather``);
- the outcome values: those ``sop.txt`` states for each output column (``allowed_values``);
  a column it states none for stops the make with one line;
- the make inputs: ``make`` task inputs drawn at random (seeded, never by label), each
  gathered through the domain's MCP server as the graph's nodes would;
- the rule: ``rule_maker.make_rule`` on the local model, chosen by agreement on those inputs.

The graph is written under the run root (``<root>/<domain>/made-k<samples>-m<inputs>-r<repairs>-s<seed>/graph``) with
``made.json`` (the cost and the choice); a second run reuses it.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from sopgraph.evals.sopbench.answer_schema import allowed_values
from sopgraph.evals.sopbench.domain import Domain, DomainError, Task
from sopgraph.evals.sopbench.server import SERVER, server_config
from sopgraph.nodes.mcp import McpError, McpPool, McpRefused
from sopgraph.tools.toolmaker.decision_graph import DECIDE, Gather, failed_record, write_graph
from sopgraph.tools.toolmaker.rule_maker import RuleMakeError, make_rule

MADE_FILE = "made.json"


def gathers(domain: Domain) -> tuple[list[Gather], list[str]]:
    """The data tools a task's input can call (every required argument an input column), and
    the names of those it cannot."""
    out, skipped = [], []
    inputs = set(domain.input_columns)
    for spec in domain.tools:
        props = list((spec.input_schema.get("properties") or {}).keys())
        required = spec.input_schema.get("required") or props
        if set(required) <= inputs:
            args = [p for p in props if p in inputs]
            out.append(Gather(SERVER, spec.name, args, spec.description))
        else:
            skipped.append(spec.name)
    return out, skipped


def outcome_values(domain: Domain) -> dict[str, list[str]]:
    allowed = {c: allowed_values(domain.sop_text, c) for c in domain.output_columns}
    missing = [c for c, v in allowed.items() if not v]
    if missing:
        raise DomainError(
            f"{domain.path / 'sop.txt'}: states no values for {', '.join(missing)} (no quoted "
            "values, definitions list, table column or 'one of ...' naming it), so no graph can be made; --agent fc or "
            "react answer it as free text"
        )
    return allowed


def make_inputs(domain: Domain, n: int, seed: int) -> list[Task]:
    """``n`` tasks drawn at random by ``seed``: their inputs only are read."""
    tasks = list(domain.tasks)
    random.Random(f"make-{seed}").shuffle(tasks)
    return tasks[:n]


def _failed(record: dict, tool: str) -> bool:
    return set(record) == {f"{tool}_error"}


async def gathered_cases(domain: Domain, plan: list[Gather], tasks: list[Task]) -> list[dict]:
    """Each task as the sandbox harness runs the decision node: its input and the records its
    observation nodes would return."""
    pool = McpPool({SERVER: server_config(domain.path)})
    await pool.start()
    cases = []
    try:
        for task in tasks:
            inputs = {"type": "task", **task.inputs}
            parents: dict[str, Any] = {}
            for g in plan:
                try:
                    record = await pool.call(g.server, g.tool, {a: inputs.get(a) for a in g.args})
                except McpRefused:
                    raise
                except McpError as exc:  # as the graph's fetch tool records it
                    record = failed_record(g.server, g.tool, exc)
                ok = isinstance(record, dict) and bool(record) and not _failed(record, g.tool)
                parents[g.node] = {"value": True if ok else "no_data", "observed": record}
            cases.append(
                {"input": inputs, "params": {}, "node_id": DECIDE, "text": "", "parents": parents}
            )
    finally:
        await pool.close()
    return cases


async def make_graph(
    domain: Domain,
    out: Path,
    model: Any,
    model_name: str,
    samples: int,
    make: int,
    seed: int,
    repairs: int = 0,
) -> dict[str, Any]:
    """Make the domain's graph into ``out`` (reused when ``out/made.json`` is there); returns
    what ``made.json`` holds."""
    meta = out / MADE_FILE
    if meta.is_file():
        return json.loads(meta.read_text(encoding="utf-8"))
    allowed = outcome_values(domain)
    plan, skipped = gathers(domain)
    tasks = make_inputs(domain, make, seed)
    print(
        f"{domain.name}: making a graph: {len(plan)} data tools"
        f"{f' ({len(skipped)} need more than the input: {skipped})' if skipped else ''}, "
        f"outcomes {allowed}, {samples} samples on {len(tasks)} make inputs"
        f"{', each with a problem sent back once' if repairs else ''}",
        file=sys.stderr,
    )
    cases = await gathered_cases(domain, plan, tasks)

    def progress(i: int, n: int, state: str) -> None:
        print(f"  sample {i}/{n}: {state}", file=sys.stderr, flush=True)

    try:
        made = await make_rule(
            model, DECIDE, domain.sop_text, cases, allowed, samples, model_name, progress,
            repairs=repairs > 0,
        )  # fmt: skip
    except RuleMakeError as exc:
        raise DomainError(f"{domain.path}: {exc}") from None
    graph = out / "graph"
    write_graph(
        graph, f"made_{domain.name}", f"{domain.name} (made by sopgraph)", plan, made, allowed,
        f"{domain.name}/sop.txt", f"tool-maker:{model_name}",
    )  # fmt: skip
    info = {
        "domain": domain.name,
        "graph": str(graph),
        "model": model_name,
        "samples": samples,
        "repairs": repairs,
        "make_inputs": [t.task_id for t in tasks],
        "seed": seed,
        "data_tools": [g.tool for g in plan],
        "skipped_tools": skipped,
        "outcomes": allowed,
        "chosen": made.chosen.sample,
        "reach": made.chosen.reach,
        "agreement": made.chosen.agreement,
        "usable": [c.usable for c in made.candidates],
        "refused": [c.refused for c in made.candidates],
        "repaired": [c.repaired for c in made.candidates],
        "tokens": made.tokens,
        "calls": made.calls,
        "seconds": made.seconds,
    }
    meta.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return info
