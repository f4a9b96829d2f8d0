"""``sopgraph audit``: check a logged conversation against a dialogue SOP, predict the next
action of a prefix, inject violations and score the audit on them; ``sopgraph eval paths``.

    sopgraph audit SOP CONVERSATION [--convo ID] [--conditions FILE] [--judge labels|model]
    sopgraph audit next SOP CONVERSATION --turn N [...]
    sopgraph audit inject SOP [SOP ...] --out DIR [--per-path N] [--seed S]
    sopgraph eval paths SOP [SOP ...] [--per-path N] [--judge labels|model] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
from pathlib import Path
from typing import Any

from sopgraph.arguments import CliParser, positive_int, subcommands
from sopgraph.errors import UserError
from sopgraph.graphs.untrusted_text import json_text

FORMS = ("next", "inject")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("sop", help="the SOP folder")
    p.add_argument("conversation", help="an ABCD conversation JSON (one, or a list)")
    p.add_argument("--convo", help="the conversation's convo_id when the file holds several")
    p.add_argument(
        "--conditions",
        help="JSON of the conversation conditions that hold, {condition: turn} or "
        "{convo_id: {condition: turn}} (the scripted judge's answers)",
    )
    p.add_argument(
        "--judge", choices=["labels", "model"], default=None,
        help="labels: the conditions given (default when there are any); model: SOPGRAPH_MODEL",
    )  # fmt: skip
    p.add_argument("--today", help="the date return windows count to, when the scenario has none")
    p.add_argument("--json", action="store_true", help="print JSON")


def _conversation(args: argparse.Namespace) -> Any:
    from sopgraph.runtime.dialogue import read_conversation

    conv = read_conversation(Path(args.conversation), args.convo)
    if args.conditions:
        try:
            data = json.loads(Path(args.conditions).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise UserError(f"--conditions {args.conditions}: {exc}") from None
        labels = data.get(conv.convo_id, data) if isinstance(data, dict) else None
        if not isinstance(labels, dict) or not all(isinstance(v, int) for v in labels.values()):
            raise UserError(
                f"--conditions {args.conditions}: expected {{condition: turn}} for {conv.convo_id}"
            )
        conv.conditions = labels
    judge = args.judge or ("labels" if conv.conditions is not None else "model")
    return conv, judge


def _sop_dir(text: str) -> Path:
    path = Path(text)
    if not (path / "sop.yaml").is_file():
        raise UserError(
            f"{text}: no sop.yaml there; give an SOP folder such as examples/abcd/manage_upgrade"
        )
    return path


def cmd_audit(args: argparse.Namespace) -> int:
    argv = list(args.argv)
    form = argv[0] if argv and argv[0] in FORMS else "audit"
    p = CliParser(prog=f"sopgraph audit{'' if form == 'audit' else ' ' + form}")
    if form == "inject":
        p.add_argument("sops", nargs="+", help="SOP folders")
        p.add_argument("--out", required=True, help="folder for the conversations and labels")
        p.add_argument("--per-path", type=positive_int, default=1, help="cases a path (default 1)")
        p.add_argument(
            "--seed", type=int, default=0, help="random seed of the injection (default 0)"
        )
        p.add_argument("--json", action="store_true", help="print the table as JSON")
        return _inject(p.parse_args(argv[1:]))
    _common(p)
    if form == "next":
        p.add_argument("--turn", type=int, required=True, help="the prefix: turns before N")
        return _next(p.parse_args(argv[1:]))
    return _audit(p.parse_args(argv))


def _audit(args: argparse.Namespace) -> int:
    from sopgraph.runtime.audit import audit
    from sopgraph.runtime.dialogue import Replayer

    sop = _sop_dir(args.sop)
    conv, judge = _conversation(args)

    async def go() -> Any:
        async with Replayer(sop, [conv], judge=judge, today=args.today) as r:
            return await audit(r, conv)

    report = asyncio.run(go())
    if args.json:
        print(json_text(report.to_dict(), default=str))
        return 0
    print(f"audit {report.sop_id} on conversation {report.convo_id} "
          f"({report.member_level}): {len(report.violations)} violation(s)")  # fmt: skip
    for d in report.decisions:
        print(f"  decided {d.node}: {d.verdict} by {d.executor} ({d.explanation})")
    if report.stopped:
        print(f"  the SOP stopped: {report.stopped}")
    for f in sorted(report.findings, key=lambda f: (f.turn is None, f.turn or 0)):
        where = f"turn {f.turn}" if f.turn is not None else "missing"
        what = f"step {f.step}" if f.kind == "ok" else f"{f.kind.upper()} {f.step or ''}"
        print(f"  {where:>8}  {f.button:<20} {what} {f.detail}".rstrip())
    return 0


def _next(args: argparse.Namespace) -> int:
    from sopgraph.runtime.audit import next_action
    from sopgraph.runtime.dialogue import Replayer

    sop = _sop_dir(args.sop)
    conv, judge = _conversation(args)
    if not 0 <= args.turn <= len(conv.turns):
        raise UserError(f"--turn {args.turn}: the conversation has turns 0 to {len(conv.turns)}")

    async def go() -> Any:
        async with Replayer(sop, [conv], judge=judge, today=args.today) as r:
            return await next_action(r, conv, args.turn)

    nxt = asyncio.run(go())
    if args.json:
        print(json_text(nxt.to_dict()))
        return 0
    print(f"reached: {nxt.reached or '(no action yet)'}")
    for d in nxt.decided_by:
        print(f"  then {d['node']}: {d['verdict']} by {d['executor']}")
    print(f"next: {nxt.button or '(none)'}" + (f" (step {nxt.next_step})" if nxt.next_step else ""))
    if nxt.stopped:
        print(f"  the SOP stopped: {nxt.stopped}")
    return 0


def _inject(args: argparse.Namespace) -> int:
    from sopgraph.evals.dialogue_cases import balanced_cases
    from sopgraph.evals.dialogue_eval import inject, precision_recall, score_audit
    from sopgraph.graphs.loader import load_sop

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    rng = random.Random(args.seed)
    for text in args.sops:
        sop_dir = _sop_dir(text)
        sop = load_sop(sop_dir)
        cases, _ = balanced_cases(sop, args.per_path, args.seed)
        items = [it for c in cases for it in inject(sop, c, rng)]
        folder = out / sop_dir.name
        folder.mkdir(exist_ok=True)
        for it in items:
            record = it.conversation.to_abcd() | {"injection": it.injection, "labels": it.labels}
            (folder / f"{it.conversation.convo_id}.json").write_text(json.dumps(record, indent=1))
        rows += asyncio.run(score_audit(str(sop_dir), sop, items))
    table = precision_recall(rows)
    (out / "results.json").write_text(json.dumps({"table": table, "rows": rows}, indent=1))
    if args.json:
        print(json_text(table))
        return 0
    print(f"{len(rows)} conversations in {out} ({table['compliant']['conversations']} compliant)")
    print(f"{'violation':<16}{'injection':<10}{'labels':>7}{'TP':>5}{'FP':>5}{'FN':>5}"
          f"{'precision':>11}{'recall':>8}")  # fmt: skip
    for kind, t in table.items():
        if kind != "compliant":
            print(f"{kind:<16}{t['injection']:<10}{t['labels']:>7}{t['tp']:>5}{t['fp']:>5}"
                  f"{t['fn']:>5}{t['precision']!s:>11}{t['recall']!s:>8}")  # fmt: skip
    c = table["compliant"]
    print(f"compliant conversations with no finding: {c['clean']}/{c['conversations']}")
    return 0


def cmd_eval_paths(args: argparse.Namespace) -> int:
    from sopgraph.evals.dialogue_cases import balanced_cases
    from sopgraph.evals.dialogue_eval import eval_paths
    from sopgraph.graphs.loader import load_sop

    results = []
    for text in args.sops:
        sop_dir = _sop_dir(text)
        sop = load_sop(sop_dir)
        cases, infeasible = balanced_cases(sop, args.per_path, args.seed)
        res = asyncio.run(eval_paths(str(sop_dir), sop, cases, args.judge))
        results.append(res | {"infeasible_paths": infeasible})
    if args.json:
        print(json_text(results))
        return 0
    print(f"{'sop':<40}{'cases':>6}{'paths':>6}{'leaves':>7}{'path acc':>9}{'leaf acc':>9}"
          f"{'base path':>10}{'base leaf':>10}")  # fmt: skip
    for r in results:
        print(f"{r['sop']:<40}{r['cases']:>6}{r['paths']:>6}{r['leaves']:>7}"
              f"{r['path_accuracy']!s:>9}{r['leaf_accuracy']!s:>9}"
              f"{r['baseline_path_accuracy']!s:>10}{r['baseline_leaf_accuracy']!s:>10}")  # fmt: skip
        for f in r["failing_nodes"]:
            print(f"    fails at {f['node']}: {f['failures']}/{f['visits']} ({f['text']})")
    return 0


def register(sub: Any) -> None:
    """``audit`` (its forms parse their own arguments) and ``eval paths`` (on the eval group)."""
    p = sub.add_parser(
        "audit",
        help="audit a conversation against a dialogue SOP (also: audit next, audit inject)",
        description=__doc__.split("\n\n")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("argv", nargs=argparse.REMAINDER, help="SOP CONVERSATION, or next/inject ...")
    p.set_defaults(fn=cmd_audit)
    ep = subcommands(sub.choices["eval"]).add_parser(
        "paths", help="path and leaf accuracy over balanced test cases (SOP-Agent)"
    )
    ep.add_argument("sops", nargs="+", help="SOP folders")
    ep.add_argument("--per-path", type=positive_int, default=2, help="cases a path (default 2)")
    ep.add_argument(
        "--seed", type=int, default=0, help="random seed of the generated cases (default 0)"
    )
    ep.add_argument("--judge", choices=["labels", "model"], default="labels",
                    help="labels: the simulated customer's scripted answers; model: SOPGRAPH_MODEL")  # fmt: skip
    ep.add_argument("--json", action="store_true", help="print JSON")
    ep.set_defaults(fn=cmd_eval_paths)
