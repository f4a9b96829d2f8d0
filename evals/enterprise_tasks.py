"""The enterprise task set (``examples/enterprise/tasks.jsonl``, written for this project in
EnterpriseBench's categories: search, create/update/delete, forbidden, unanswerable), each task
asked by a persona and answered on the compiled path, as that persona:

- tasks with ``sop_input`` run the compiled SOP ``examples/enterprise`` (its data server acts
  as the persona through ``ENTERPRISE_AS``, mcp.json); the answer is the run's status
  (``refused`` is its own), the action taken and the observed value;
- the others make the task's one compiled tool call (``call``) on the enterprise server
  started ``--as`` the persona; the answer is ``ok`` with the picked value, ``refused``
  (an ``access denied:`` error) or ``error``.

Run ``python -m sopgraph.evals.enterprise_tasks [--json]``: accuracy per category, persona and
path. Each persona gets fresh servers, so the tasks of one persona see its own changes only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from sopgraph.examples import EXAMPLES
from sopgraph.graphs.executors import Refused
from sopgraph.graphs.idempotency import acting
from sopgraph.nodes.mcp import McpError, McpPool, ServerConfig

SOP_DIR = EXAMPLES / "enterprise"
TASKS = SOP_DIR / "tasks.jsonl"


def load_tasks(path: Path = TASKS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def pick(value: Any, path: str) -> Any:
    """``rows[*].emp_id``, ``count``, ``Salary``: the part of a tool's answer a task asks for."""
    for part in path.split("."):
        m = re.fullmatch(r"(.+)\[\*\]", part)
        if isinstance(value, list):
            value = [v.get(part) for v in value]
        elif m:
            value = value.get(m.group(1))
        else:
            value = value.get(part) if isinstance(value, dict) else None
    return value


def judge(task: dict[str, Any], got: dict[str, Any]) -> bool:
    want = task["expected"]
    return all(got.get(k) == v for k, v in want.items())


async def call_answer(pool: McpPool, task: dict[str, Any]) -> dict[str, Any]:
    call = task["call"]
    try:
        with acting(f"task/{task['id']}"):  # the persona's own request, not a decision
            value = await pool.call("enterprise", call["tool"], call["args"])
    except Refused as exc:
        return {"outcome": "refused", "why": str(exc)}
    except McpError as exc:
        return {"outcome": "error", "why": str(exc)}
    return {"outcome": "ok", "answer": pick(value, call["pick"])}


def sop_answer(result: Any) -> dict[str, Any]:
    if result.status == "refused":
        return {"outcome": "refused", "why": next(iter(result.refused.values()))}
    if result.status != "done":
        return {"outcome": "error", "why": result.status}
    first = next(iter(result.verdicts.values()))
    action = result.actions[-1]["node"] if result.actions else None
    return {"outcome": "ok", "action": action, "observed": first.observed}


async def run_persona(persona: str, tasks: list[dict[str, Any]], home: Path) -> list[dict]:
    from sopgraph.runtime.runner import Session  # LangGraph only when the eval runs

    server = ServerConfig(
        command=sys.executable,
        args=["-m", "sopgraph.mcp_servers.enterprise", "--as", persona,
              "--audit", str(home / "enterprise-audit.jsonl")],
    )  # fmt: skip
    out = []
    os.environ["ENTERPRISE_AS"] = persona  # the SOP's mcp.json starts its server as the persona
    async with McpPool({"enterprise": server}) as pool, Session(
        SOP_DIR, checkpoint="memory", log_path=home / "invocations.sqlite"
    ) as session:  # fmt: skip
        for task in tasks:
            if "sop_input" in task:
                got, path = sop_answer(await session.run(task["sop_input"])), "sop"
            else:
                got, path = await call_answer(pool, task), "call"
            out.append({**task, "path": path, "got": got, "correct": judge(task, got)})
    return out


async def run_tasks(tasks: list[dict[str, Any]], home: Path) -> list[dict[str, Any]]:
    os.environ["SOPGRAPH_HOME"] = str(home)
    by_persona: dict[str, list[dict]] = defaultdict(list)
    for task in tasks:
        by_persona[task["persona"]].append(task)
    results = []
    for persona, some in by_persona.items():
        results += await run_persona(persona, some, home)
    return results


def summary(results: list[dict[str, Any]]) -> dict[str, dict[str, list[int]]]:
    """``{"category": {"search": [correct, total]}, "persona": {...}, "path": {...}}``."""
    out: dict[str, dict[str, list[int]]] = {"category": {}, "persona": {}, "path": {}}
    for r in results:
        for key, name in (("category", r["category"]), ("persona", f"{r['persona']} {r['role']}"),
                          ("path", r["path"])):  # fmt: skip
            cell = out[key].setdefault(name, [0, 0])
            cell[0] += int(r["correct"])
            cell[1] += 1
    return out


def report(results: list[dict[str, Any]], how: str = "compiled") -> str:
    lines = []
    correct = sum(r["correct"] for r in results)
    lines.append(f"enterprise tasks, {how}: {correct}/{len(results)} correct")
    for key, cells in summary(results).items():
        lines.append(f"by {key}:")
        lines += [f"  {name:55} {c}/{n}" for name, (c, n) in cells.items()]
    wrong = [r for r in results if not r["correct"]]
    for r in wrong:
        got = {k: v for k, v in r["got"].items() if k in ("outcome", "answer", "why", "action",
                                                          "observed", "error")}  # fmt: skip
        lines.append(f"  wrong: {r['id']}: expected {r['expected']}, got {got}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sopgraph.evals.enterprise_tasks")
    p.add_argument("--tasks", type=Path, default=TASKS)
    p.add_argument("--json", action="store_true", help="every task's answer as JSON")
    p.add_argument(
        "--agent", choices=["fc", "react"],
        help="answer with this LLM agent on SOPGRAPH_MODEL instead of the compiled path "
        "(evals/enterprise_agent.py); exit 0 whatever it scores",
    )  # fmt: skip
    p.add_argument("--only", help="comma-separated task ids (default: all)")
    args = p.parse_args(argv)
    tasks = load_tasks(args.tasks)
    if args.only:
        wanted = set(args.only.split(","))
        tasks = [t for t in tasks if t["id"] in wanted]
    if args.agent:
        from sopgraph.evals.enterprise_agent import run_agent
        from sopgraph.nodes.models import SettingsError

        try:
            results = asyncio.run(run_agent(args.agent, tasks))
        except SettingsError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        how = f"LLM agent {args.agent} ({os.environ.get('SOPGRAPH_MODEL', 'default model')})"
        print(json.dumps(results, indent=2, default=str) if args.json else report(results, how))
        return 0
    with tempfile.TemporaryDirectory() as home:
        results = asyncio.run(run_tasks(tasks, Path(home)))
    print(json.dumps(results, indent=2, default=str) if args.json else report(results))
    return 0 if all(r["correct"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
