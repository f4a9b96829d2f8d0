"""``sopgraph monitor``: flag tool versions whose invocations drifted, judged on a timeline."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from sopgraph.arguments import positive_int
from sopgraph.errors import UserError
from sopgraph.graphs.home import home_dir
from sopgraph.graphs.untrusted_text import json_text
from sopgraph.output_file import write_output


def _judge(report: Any, meta: dict) -> dict[str, Any]:
    """Each injected drift: the first flag naming a tool that reads the drifted field."""
    drifts = meta.get("drift", [])
    out: dict[str, Any] = {"drifts": [], "false_flags": []}
    for d in drifts:
        hits = [f for f in report.flags
                if f.tool in d["readers"] and f.flagged_at_run >= d["onset_alarm"]]  # fmt: skip
        first = hits[0] if hits else None
        out["drifts"].append({
            "kind": d["kind"], "field": d["field"], "onset_alarm": d["onset_alarm"],
            "readers": d["readers"], "flagged_tools": sorted({f.tool for f in hits}),
            "first_flag": None if first is None else
            {"tool": first.tool, "check": first.check, "at_alarm": first.flagged_at_run,
             "alarms_after_onset": first.flagged_at_run - d["onset_alarm"]},
        })  # fmt: skip
    for f in report.flags:
        right = any(f.tool in d["readers"] and f.flagged_at_run >= d["onset_alarm"]
                    for d in drifts)  # fmt: skip
        if not right:
            out["false_flags"].append({"tool": f.tool, "check": f.check, "at": f.flagged_at_run})
    monitored = meta.get("alarms", 0) - report.reference_runs
    out["monitored_alarms"] = monitored
    out["false_flag_rate_per_1000_alarms"] = (
        round(len(out["false_flags"]) / monitored * 1000, 3) if monitored > 0 else None
    )
    return out


def cmd_monitor(args: argparse.Namespace) -> int:
    from sopgraph.tools.monitor import review, to_markdown

    root = Path(args.timeline) if args.timeline else home_dir() / "timelines" / "drift"
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
        print(json_text(summary, default=str))
        return 0
    for f in report.flags:
        print(f"FLAG {f.tool} v{f.version} {f.check} since alarm {f.since_run}, flagged at "
              f"{f.flagged_at_run} (p={f.p_value:.2g}): {f.what_changed}")  # fmt: skip
    if not report.flags:
        print(f"no flags over {report.runs} alarms ({report.invocations} invocations)")
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


def register(sub: Any) -> None:
    """Register ``monitor`` on the top-level subparsers."""
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
