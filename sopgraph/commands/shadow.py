"""``sopgraph shadow``: run candidate tool versions beside the active ones on a timeline."""

from __future__ import annotations

import argparse
import json
from typing import Any

from sopgraph.commands.world import add_timeline_args, run_timeline, timeline_sop
from sopgraph.errors import UserError
from sopgraph.graphs.untrusted_text import json_text


def _candidates(specs: list[str] | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for spec in specs or []:
        node, _, version = spec.partition(":")
        if not version.lstrip("v").isdigit():
            raise UserError(f"--candidate {spec}: expected NODE:VERSION, e.g. rc_robot_fault:2")
        out[node] = int(version.lstrip("v"))
    return out


def cmd_shadow(args: argparse.Namespace) -> int:
    candidates = _candidates(args.candidate)
    summary = run_timeline(args, args.timeline == "drift", candidates)
    found = summary["shadow"]["discrepancies"]
    onsets = {d["field"]: d for d in summary["drift"]}
    on_drifted = [
        d
        for d in found
        if any(d["node"] in o["readers"] and d["run"] >= o["onset_alarm"] for o in onsets.values())
    ]
    verdict = {"discrepancies": len(found), "on_drifted_alarms": len(on_drifted),
               "elsewhere": len(found) - len(on_drifted)}  # fmt: skip
    from sopgraph.tools.shadow import record_shadow

    record_shadow(timeline_sop(args), candidates, summary["alarms"], args.timeline, found)
    if args.json:
        print(json_text(summary | {"check": verdict}, default=str))
        return 0
    print(
        f"{'alarm':>5} {'alarm_id':12} {'node':24} active -> candidate   observed (active | candidate)"
    )
    for d in found:
        print(f"{d['run']:5} {d['run_id']:12} {d['node']:24} v{d['active_version']} "
              f"{d['active']} -> v{d['candidate_version']} {d['candidate']}   "
              f"{json.dumps(d['active_observed'])} | {json.dumps(d['candidate_observed'])}")  # fmt: skip
    compared = summary["shadow"]["compared"]
    for node, version in candidates.items():
        mine = sum(1 for d in found if d["node"] == node)
        print(f"{node}:v{version}: {compared.get(node, 0)} runs reached it, {mine} discrepancies")
    for o in summary["drift"]:
        print(f"drift {o['kind']} ({o['field']}) from alarm {o['onset_alarm']}")
    print(f"{verdict['discrepancies']} discrepancies: {verdict['on_drifted_alarms']} on drifted "
          f"alarms, {verdict['elsewhere']} elsewhere; details in {summary['out']}/shadow.json")  # fmt: skip
    return 0


def register(sub: Any) -> None:
    """Register ``shadow`` on the top-level subparsers."""
    sh = sub.add_parser("shadow", help="run candidate tool versions beside the active ones")
    sh.add_argument("--candidate", action="append", required=True,
                    help="NODE:VERSION (repeat for a candidate library)")  # fmt: skip
    sh.add_argument("--timeline", choices=["drift", "clean"], default="drift", help="default drift")
    add_timeline_args(sh)
    sh.set_defaults(fn=cmd_shadow)
