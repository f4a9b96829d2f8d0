"""The default job: build the simulated dock if absent, triage recent alarms, report.

Runs offline with the compiled tools only (no LLM): starts the SOP's MCP servers, triages
the most recent held-out alarms, prints a table and a summary and writes an HTML report.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from sopgraph.evals.fc_triage.build import build_world
from sopgraph.evals.fc_triage.dataset import load_scenarios
from sopgraph.evals.triage_eval import compare
from sopgraph.examples import EXAMPLES
from sopgraph.graphs.home import home_dir
from sopgraph.html_report import write_report
from sopgraph.report import alarm_table, status_of
from sopgraph.runtime.latency import percentile
from sopgraph.runtime.runner import Session
from sopgraph.tools.params import ParamStore

SOP_DIR = EXAMPLES / "fc_alarm_triage"


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True,
    )  # fmt: skip


async def triage_recent(n: int, console: Console) -> tuple[list[dict[str, Any]], Any]:
    paths = build_world(home_dir(), progress=True)
    scenarios = load_scenarios(paths.scenarios, split="eval")
    recent = sorted(scenarios, key=lambda s: s.timestamp)[-n:]
    runs: list[dict[str, Any]] = []
    with _progress(console) as bar:
        task = bar.add_task("starting MCP servers", total=len(recent))
        async with Session(SOP_DIR, checkpoint="memory", approval="approve") as session:
            bar.update(task, description="triaging alarms")
            for sc in recent:
                start = time.perf_counter()
                result = await session.run(sc.input, thread_id=f"demo-{sc.alarm_id}")
                ms = (time.perf_counter() - start) * 1000
                outcome = compare(sc, result, ms)
                runs.append({"alarm_id": sc.alarm_id, "site": sc.site, "type": sc.type, "ms": ms,
                             "correct": outcome.correct, "result": result, "outcome": outcome})  # fmt: skip
                bar.advance(task)
        sop = session.sop
    return runs, sop


def table_rows(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The alarm table's rows: plain strings, and node ids as lists."""
    return [
        {
            "alarm": run["alarm_id"],
            "site": run["site"],
            "type": run["type"],
            "status": status_of(run["result"]),
            "root causes": run["outcome"].root_causes,
            "actions": run["outcome"].actions,
            "path taken": run["result"].path,
            "ms": f"{run['ms']:.0f}",
            "truth": {True: "✔", False: "✘"}.get(run["correct"], "?"),
        }  # fmt: skip
        for run in runs
    ]


def main(n: int = 40, report: Path | None = None) -> int:
    console = Console()  # piped: COLUMNS, else 80 columns; the table fits whichever it is
    console.print(f"[bold]sopgraph demo[/]: outbound-dock alarm triage, {n} most recent alarms")
    runs, sop = asyncio.run(triage_recent(n, console))
    console.print(alarm_table(table_rows(runs), console.width))
    ms = [r["ms"] for r in runs]
    summary = {
        "alarms": len(runs),
        "match ground truth": f"{sum(r['correct'] for r in runs)}/{len(runs)}",
        "p50 ms": round(percentile(ms, 50), 1),
        "p99 ms": round(percentile(ms, 99), 1),
        "gated actions": sum(
            1 for r in runs for a in r["result"].actions if a["by"] != "not gated"
        ),
        "LLM tokens": 0,
        "note": "gated actions approved by policy (--approval approve) for this batch",
    }
    for k, v in summary.items():
        console.print(f"  {k}: {v}")
    params = ParamStore(sop, SOP_DIR)
    for run in runs:
        run["params"] = params.for_key(run["site"])
    out = write_report(report or home_dir() / "reports" / "demo.html", sop, runs, summary,
                       "sopgraph demo: outbound-dock alarm triage")  # fmt: skip
    console.print(f"report: {out}")
    console.print(
        f"home: {home_dir()} (an MCP client that starts `sopgraph mcp serve` elsewhere: set"
        " SOPGRAPH_HOME to this path)",
        soft_wrap=True,
    )
    return 0
