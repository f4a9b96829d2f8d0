"""Tools for a drafted SOP's decisions (issue 51): ``examples/service_interruption/sop.md``
drafted with its catalog, and the tool-maker run on each drafted decision.

``python -m sopgraph.evals.draft_tools OUT`` writes OUT as an SOP folder:

- ``sop.yaml``: the structural draft of the prose SOP with ``--data`` its ``mcp.json`` (no
  model; ``draft/`` holds the whole draft folder), so each decision carries the data hint the
  drafter gave it;
- the servers' config (``mcp.json``) and the scripted cases (``cases.json``);
- ``cases/<node>.jsonl`` for each drafted decision whose hint is one of the imported SOP's
  branching APIs (``service_interruption_checks.decisions``). A case is ``true`` when it takes
  the drafted decision's ``true`` branch. That is read from the imported SOP, never from the
  draft's words: the API's field holds the value of the imported branch whose target is the
  node the drafted ``true`` branch starts with (nodes matched by their words,
  ``agreement.match``). A decision whose branch matches neither is left out and named. The
  split is the Check SOP's: the same hash of the imported node and the case, so the held-out
  cases are the ones `docs/toolmaker.md`'s cold run was scored on.

Then ``sopgraph eval toolmaker OUT --cases OUT/cases --label-free ... --register-into MADE``
makes the tools and registers those that pass (the command line is in ``docs/drafting.md``),
and ``python -m sopgraph.evals.draft_tools OUT --run MADE`` runs the drafted graph with them on
every scripted case, beside the hand-written (imported) SOP with its own tools: on how many
cases the draft visits the hand-written graph's steps in the same order (nodes matched by their
words; the imported SOP's opening API call and the draft's opening statement and outcome nodes,
which have no counterpart, left out). The draft's opening statement is a judgement step, which
the reviewer answers here with a tool of their own (every case run here is a reported
interruption, so the procedure applies): no model runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from sopgraph.evals.service_interruption import SOP_DIR
from sopgraph.evals.service_interruption_checks import SERVER, decisions, labeled
from sopgraph.graphs.drafting.agreement import match
from sopgraph.graphs.loader import load_sop
from sopgraph.graphs.model import Sop
from sopgraph.tools.registry import Registry

# the reviewer's answer to the draft's opening statement, a judgement step
SCOPE_TOOL = '''"""The reviewer's tool for the draft's opening statement: every case this SOP is run
on here is a reported service interruption, so the procedure applies."""

from sopgraph.graphs.model import Verdict


async def run(input: dict, ctx) -> Verdict:
    return Verdict(value="true", observed={}, explanation="the reviewer: the procedure applies")
'''


def polarity(
    drafted: Sop, node_id: str, hand: Sop, imported: str, matched: dict[str, str]
) -> bool | None:
    """Whether the drafted decision's ``true`` is the imported node's first branch (True), its
    second (False), or neither (None): through the node its ``true`` branch starts with
    (``matched``: drafted node -> imported node)."""
    starts = drafted.nodes[node_id].next.true
    took = matched.get(starts[0]) if starts else None
    first, second = hand.nodes[imported].next.when[:2]
    if took in first.then:
        return True
    if took in second.then:
        return False
    return None


def write(out: Path) -> tuple[dict[str, str], list[str]]:
    """OUT as above; (drafted decision -> imported node, the drafted decisions left out)."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    cmd = [sys.executable, "-m", "sopgraph", "draft", str(SOP_DIR / "sop.md"), "-o",
           str(out / "draft"), "--samples", "0", "--repairs", "0", "--data",
           str(SOP_DIR / "mcp.json")]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the draft failed (exit {done.returncode}): {done.stderr.strip()}")
    shutil.copy(out / "draft" / "sop.yaml", out / "sop.yaml")
    for name in ("mcp.json", "cases.json"):
        shutil.copy(SOP_DIR / name, out / name)
    raw = yaml.safe_load((SOP_DIR / "sop.yaml").read_text(encoding="utf-8"))
    found = decisions(raw)
    by_api = {api: node for node, (api, _, _) in found.items()}
    drafted, hand = load_sop(out / "sop.yaml"), load_sop(SOP_DIR / "sop.yaml")
    cases = json.loads((SOP_DIR / "cases.json").read_text(encoding="utf-8"))["cases"]
    matched = {d: h for h, d in match(drafted, hand).items()}
    (out / "cases").mkdir()
    mapped: dict[str, str] = {}
    left: list[str] = []
    for node in drafted.decision_nodes:
        api = next((d.split(".", 1)[1] for d in node.data if d.startswith(f"{SERVER}.")), None)
        imported = by_api.get(api or "")
        took = polarity(drafted, node.id, hand, imported, matched) if imported else None
        if imported is None or took is None:
            left.append(node.id)
            continue
        rows = labeled(cases, {imported: found[imported]})[imported]
        flip = {"true": "false", "false": "true"}
        rows = [{**r, "node": node.id, "expected": r["expected"] if took else flip[r["expected"]]}
                for r in rows]  # fmt: skip
        lines = "".join(json.dumps(r) + "\n" for r in rows)
        (out / "cases" / f"{node.id}.jsonl").write_text(lines, encoding="utf-8")
        mapped[node.id] = imported
    return mapped, left


def majority_copy(out: Path, made: Path, dest: Path) -> Path:
    """The trivial baseline: a copy of ``made`` whose decisions each answer the verdict most of
    their training cases (``out``'s) have, whatever the input."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(made, dest)
    registry = Registry(dest / "tools")
    for cases in sorted((out / "cases").glob("*.jsonl")):
        rows = [json.loads(line) for line in cases.read_text(encoding="utf-8").splitlines()]
        train = [r["expected"] for r in rows if r["split"] == "train"]
        verdict = max(("true", "false"), key=train.count)
        code = SCOPE_TOOL.replace('value="true"', f'value="{verdict}"').replace(
            "the reviewer: the procedure applies", f"the training majority: {verdict}")  # fmt: skip
        registry.add_version(cases.stem, code, author="human", activate=True,
                             reason="the trivial baseline")  # fmt: skip
    return dest


async def compare(made: Path) -> list[dict[str, object]]:
    """Each scripted case run on the drafted SOP in ``made`` (its made tools, and the
    reviewer's for the opening statement) and on the imported one: the steps each visits."""
    from sopgraph.runtime.runner import Session  # the run half only: writing needs no LangGraph

    drafted, hand = load_sop(made / "sop.yaml"), load_sop(SOP_DIR / "sop.yaml")
    scope = drafted.entry["default"][0]
    registry = Registry(made / "tools")
    if not registry.has(scope):
        registry.add_version(scope, SCOPE_TOOL, author="human", activate=True,
                             reason="the reviewer: the procedure applies to every case")  # fmt: skip
    inverse = {d: h for h, d in match(drafted, hand).items()}
    cases = list(json.loads((SOP_DIR / "cases.json").read_text(encoding="utf-8"))["cases"])
    async with Session(made, approval="approve") as session:
        mine = {c: await session.run({"case_id": c}) for c in cases}
    async with Session(SOP_DIR, approval="approve") as session:
        theirs = {c: await session.run({"type": "default", "case_id": c}) for c in cases}
    rows = []
    for c in cases:
        got = [inverse[n] for n in mine[c].path if n in inverse]
        want = [n for n in theirs[c].path if n in inverse.values()]
        rows.append({"case": c, "same": got == want, "status": mine[c].status,
                     "drafted": mine[c].path, "hand": theirs[c].path})  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sopgraph.evals.draft_tools", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("out", type=Path, help="the SOP folder to write (replaced)")
    parser.add_argument("--run", type=Path, metavar="MADE",
                        help="run the drafted SOP in MADE (tools registered) on every case")  # fmt: skip
    parser.add_argument("--baseline", action="store_true",
                        help="with --run: each decision answers its training majority instead")  # fmt: skip
    args = parser.parse_args(argv)
    if args.run:
        made = args.run
        if args.baseline:
            made = majority_copy(args.out, made, made.with_name(made.name + "-majority"))
        rows = asyncio.run(compare(made))
        same = sum(bool(r["same"]) for r in rows)
        done = sum(r["status"] == "done" for r in rows)
        ended = sum(str(r["drafted"][-1]).startswith("answer_") for r in rows)
        print(json.dumps(rows, indent=1))
        print(f"{same} of {len(rows)} cases visit the hand-written graph's steps in its order; "
              f"{done} runs done, {ended} ending in an outcome the document states",
              file=sys.stderr)  # fmt: skip
        return 0
    mapped, left = write(args.out)
    pairs = ", ".join(f"{d} ({h})" for d, h in mapped.items())
    print(f"{args.out}: {len(mapped)} drafted decisions with cases: {pairs}; "
          f"left out: {', '.join(left) or 'none'}")  # fmt: skip
    print(f"nodes: {','.join(mapped)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
