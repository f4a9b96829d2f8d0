"""CLI commands for the honest world: ``world mutations|timeline``, ``monitor``, ``shadow``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from sopgraph.cli_eval import TRIAGE_SOP, _bar, _world, positive_int


def _home() -> Path:
    from sopgraph.nodes.mcp_client import home_dir

    return home_dir()


def cmd_mutations(args: argparse.Namespace) -> int:
    from sopgraph.evals.fc_triage.mutations import mutation_table, table_json

    paths = _world()
    split = None if args.split == "all" else args.split
    rows = mutation_table(paths.root, TRIAGE_SOP, split)
    summary = table_json(rows, split)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"{'convention':26} {'node':28} {'flips':>5} / cases   wrong variant")
        for r in rows:
            mark = "" if r.ok else "  <-- fewer than 3"
            print(f"{r.convention:26} {r.node:28} {r.flips:5} / {r.cases:<5}  {r.wrong}{mark}")
        print(f"{summary['pairs_ok']}/{summary['pairs']} convention x node pairs flip at least "
              f"{summary['min_flips']} {args.split} cases")  # fmt: skip
    return 0 if summary["pairs_ok"] == summary["pairs"] else 1


def _candidates(specs: list[str] | None) -> dict[str, int]:
    from sopgraph.cli import UserError

    out: dict[str, int] = {}
    for spec in specs or []:
        node, _, version = spec.partition(":")
        if not version.lstrip("v").isdigit():
            raise UserError(f"--candidate {spec}: expected NODE:VERSION, e.g. rc_robot_fault:2")
        out[node] = int(version.lstrip("v"))
    return out


def _run_timeline(args: argparse.Namespace, drift: bool, candidates: dict[str, int]) -> dict:
    from sopgraph.evals.fc_triage.timeline import run_timeline

    paths = _world()
    out = Path(args.out) if args.out else _home() / "timelines" / ("drift" if drift else "clean")
    with _bar(sys.stderr.isatty()) as bar:
        task = bar.add_task("timeline", total=args.alarms or None)
        return asyncio.run(
            run_timeline(paths, TRIAGE_SOP, out, drift=drift, alarms=args.alarms,
                         candidates=candidates or None, on_alarm=lambda: bar.advance(task))
        )  # fmt: skip


def cmd_timeline(args: argparse.Namespace) -> int:
    summary = _run_timeline(args, args.kind == "drift", {})
    print(json.dumps(summary, indent=2) if args.json else
          f"{summary['alarms']} alarms -> {summary['out']} ({summary['seconds']} s)")  # fmt: skip
    return 0


def _judge(report: Any, meta: dict) -> dict[str, Any]:
    """Each injected drift: the first flag naming a tool that reads the drifted field."""
    drifts = meta.get("drift", [])
    out: dict[str, Any] = {"drifts": [], "false_flags": []}
    for d in drifts:
        hits = [f for f in report.flags
                if f.tool in d["readers"] and f.flagged_at_alarm >= d["onset_alarm"]]  # fmt: skip
        first = hits[0] if hits else None
        out["drifts"].append({
            "kind": d["kind"], "field": d["field"], "onset_alarm": d["onset_alarm"],
            "readers": d["readers"], "flagged_tools": sorted({f.tool for f in hits}),
            "first_flag": None if first is None else
            {"tool": first.tool, "check": first.check, "at_alarm": first.flagged_at_alarm,
             "alarms_after_onset": first.flagged_at_alarm - d["onset_alarm"]},
        })  # fmt: skip
    for f in report.flags:
        right = any(f.tool in d["readers"] and f.flagged_at_alarm >= d["onset_alarm"]
                    for d in drifts)  # fmt: skip
        if not right:
            out["false_flags"].append({"tool": f.tool, "check": f.check, "at": f.flagged_at_alarm})
    monitored = meta.get("alarms", 0) - report.reference_alarms
    out["monitored_alarms"] = monitored
    out["false_flag_rate_per_1000_alarms"] = (
        round(len(out["false_flags"]) / monitored * 1000, 3) if monitored > 0 else None
    )
    return out


def cmd_monitor(args: argparse.Namespace) -> int:
    from sopgraph.cli import UserError, write_output
    from sopgraph.tools.monitor import review, to_markdown

    root = Path(args.timeline) if args.timeline else _home() / "timelines" / "drift"
    log = Path(args.log) if args.log else root / "invocations.sqlite"
    if not log.exists():
        raise UserError(f"{log}: no invocation log; run `sopgraph world timeline drift` first "
                        "or pass --log")  # fmt: skip
    meta_path = root / "timeline.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() and not args.log else {}
    report = review(log, meta.get("order"), reference=args.reference, window=args.window,
                    alpha=args.alpha)  # fmt: skip
    out = Path(args.report) if args.report else log.parent / "monitor.md"
    write_output(out, to_markdown(report))
    summary: dict[str, Any] = {"report": str(out), "flags": [f.model_dump() for f in report.flags]}
    if meta:
        summary["judged"] = _judge(report, meta)
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
        return 0
    for f in report.flags:
        print(f"FLAG {f.tool} v{f.version} {f.check} since alarm {f.since_alarm}, flagged at "
              f"{f.flagged_at_alarm} (p={f.p_value:.2g}): {f.what_changed}")  # fmt: skip
    if not report.flags:
        print(f"no flags over {report.alarms} alarms ({report.invocations} invocations)")
    if meta:
        j = summary["judged"]
        for d in j["drifts"]:
            ff = d["first_flag"]
            print(f"drift {d['kind']} ({d['field']}) at alarm {d['onset_alarm']}: " + (
                f"flagged {ff['tool']} ({ff['check']}) {ff['alarms_after_onset']} alarms later"
                if ff else "NOT flagged"))  # fmt: skip
        print(f"false flags: {len(j['false_flags'])} over {j['monitored_alarms']} monitored alarms")
    print(f"report: {out}")
    return 0


def cmd_shadow(args: argparse.Namespace) -> int:
    candidates = _candidates(args.candidate)
    summary = _run_timeline(args, args.timeline == "drift", candidates)
    found = summary["shadow"]["discrepancies"]
    onsets = {d["field"]: d for d in summary["drift"]}
    on_drifted = [
        d
        for d in found
        if any(
            d["node"] in o["readers"] and d["alarm"] >= o["onset_alarm"] for o in onsets.values()
        )
    ]
    verdict = {"discrepancies": len(found), "on_drifted_alarms": len(on_drifted),
               "elsewhere": len(found) - len(on_drifted)}  # fmt: skip
    from sopgraph.tools.shadow import record_shadow

    record_shadow(TRIAGE_SOP, candidates, summary["alarms"], args.timeline, found)
    if args.json:
        print(json.dumps(summary | {"check": verdict}, indent=2, default=str))
        return 0
    print(
        f"{'alarm':>5} {'alarm_id':12} {'node':24} active -> candidate   observed (active | candidate)"
    )
    for d in found:
        print(f"{d['alarm']:5} {d['alarm_id']:12} {d['node']:24} v{d['active_version']} "
              f"{d['active']} -> v{d['candidate_version']} {d['candidate']}   "
              f"{json.dumps(d['active_observed'])} | {json.dumps(d['candidate_observed'])}")  # fmt: skip
    for o in summary["drift"]:
        print(f"drift {o['kind']} ({o['field']}) from alarm {o['onset_alarm']}")
    print(f"{verdict['discrepancies']} discrepancies: {verdict['on_drifted_alarms']} on drifted "
          f"alarms, {verdict['elsewhere']} elsewhere; details in {summary['out']}/shadow.json")  # fmt: skip
    return 0


def add_commands(sub: Any) -> None:
    """Register ``world``, ``monitor`` and ``shadow`` on the top-level subparsers."""
    w = sub.add_parser("world", help="the simulated dock: convention mutations, drift timelines")
    ws = w.add_subparsers(dest="what", required=True)
    m = ws.add_parser("mutations", help="held-out cases each wrong convention flips, per node")
    m.add_argument("--split", choices=["train", "eval", "all"], default="eval", help="default eval")
    m.add_argument("--json", action="store_true", help="print the table as JSON")
    m.set_defaults(fn=cmd_mutations)

    def timeline_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--alarms", type=positive_int, help="first N alarms (default all 1,500)")
        p.add_argument("--out", help="folder (default $SOPGRAPH_HOME/timelines/<drift|clean>)")
        p.add_argument("--json", action="store_true", help="print the summary as JSON")

    t = ws.add_parser("timeline", help="replay the alarms in time order, clean or with drift")
    t.add_argument("kind", choices=["drift", "clean"], help="drift: three injected drifts")
    timeline_args(t)
    t.set_defaults(fn=cmd_timeline)

    mo = sub.add_parser("monitor", help="flag tool versions whose invocations drifted")
    mo.add_argument("--timeline", help="timeline folder (default $SOPGRAPH_HOME/timelines/drift)")
    mo.add_argument("--log", help="any invocation log instead of a timeline's")
    mo.add_argument("--reference", type=positive_int, default=300,
                    help="alarms forming the reference window (default 300)")  # fmt: skip
    mo.add_argument("--window", type=positive_int, default=8, help="calls per window (default 8)")
    mo.add_argument("--alpha", type=float, default=1e-6, help="p-value to flag (default 1e-6)")
    mo.add_argument("--report", help="markdown report path (default next to the log)")
    mo.add_argument("--json", action="store_true", help="print flags and evidence as JSON")
    mo.set_defaults(fn=cmd_monitor)

    sh = sub.add_parser("shadow", help="run candidate tool versions beside the active ones")
    sh.add_argument("--candidate", action="append", required=True,
                    help="NODE:VERSION (repeat for a candidate library)")  # fmt: skip
    sh.add_argument("--timeline", choices=["drift", "clean"], default="drift", help="default drift")
    timeline_args(sh)
    sh.set_defaults(fn=cmd_shadow)
