"""The service-interruption SOP with one Check a decision (issue 52).

The imported SOP (``examples/service_interruption``) calls an API at each step and branches on
one field of its result (``authentication_status`` is ``failed`` or ``success``). Here each such
step is a decision node: true takes the first branch, false the second, and a hand-written Check
decides it, a field measure of the API's typed record (the customer-service server declares
each record's fields and values as its ``outputSchema``). The SOP keeps every other node and
tool, so a run calls the same APIs in the same order as the paper's pseudocode
(``evals.service_interruption.evaluate`` checks it on every case).

Each decision node gets labeled cases (``cases/<node>.jsonl``): every scripted case whose
outcome the node's API returns, labelled by the branch the pseudocode takes, about half held
out. Those are what ``sopgraph eval toolmaker`` and ``sopgraph eval fallback`` read; the
hand-written Checks are the compiled tools they are compared with.

Run ``python -m sopgraph.evals.service_interruption_checks OUT`` to write the SOP folder.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from sopgraph.evals.service_interruption import SOP_DIR
from sopgraph.tools.registry import Registry
from sopgraph.tools.toolmaker.sampling import tool_file

SERVER = "customer_service"
CASE_TIME = "2026-11-22T00:00:00Z"  # the cases have no time; the case format has a field for one


def decisions(raw: dict[str, Any]) -> dict[str, tuple[str, str, Any]]:
    """``node -> (api, field, value)``: the API steps whose ``when`` is two ``eq`` tests of one
    field, with the first test's field and value (true: its branch)."""
    out = {}
    for node_id, node in raw["nodes"].items():
        when = (node.get("next") or {}).get("when") or []
        tests = [w.get("if") or {} for w in when]
        api = (node.get("api") or {}).get("name")
        if (
            api and len(tests) == 2 and all(t.get("op") == "eq" for t in tests)
            and tests[0].get("var") == tests[1].get("var")
        ):  # fmt: skip
            out[node_id] = (api, tests[0]["var"], tests[0]["value"])
    return out


def decision_sop(raw: dict[str, Any]) -> dict[str, Any]:
    """The SOP with each decision's ``when`` as true/false edges and its API as the data hint."""
    sop = copy.deepcopy(raw)
    for node_id, (api, _, _) in decisions(raw).items():
        node = sop["nodes"][node_id]
        first, second = node["next"]["when"]
        node["next"] = {"true": first["then"], "false": second["then"]}
        node["data"] = [f"{SERVER}.{api}"]
    sop["id"] = f"{raw['id']}_checks"
    sop["description"] = "The imported SOP with each branching API step decided by a Check."
    return sop


def check(api: str, field: str, value: Any) -> dict[str, Any]:
    """The hand-written Check: true when the API's record holds ``value`` in ``field``."""
    measure = {"server": SERVER, "tool": api, "args": {"case_id": "$case_id"}, "field": field,
               "equals": value}  # fmt: skip
    return {"measures": {"a": measure}, "value": "a", "scale": 1, "op": ">", "threshold": 0,
            "missing": "no_data"}  # fmt: skip


def _held_out(node_id: str, case_id: str) -> bool:
    return hashlib.sha256(f"{node_id}/{case_id}".encode()).digest()[0] % 2 == 1


def labeled(
    cases: dict[str, dict[str, Any]], found: dict[str, tuple[str, str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """Each decision node's cases: the scripted cases its API answers, in the file's order,
    labelled ``true`` when the field holds the first branch's value; about half held out, by a
    hash of node and case (the file enumerates the outcomes in order, so alternating would put
    one value in each split)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for node_id, (api, field, value) in found.items():
        rows = out.setdefault(node_id, [])
        for case_id, outcomes in cases.items():
            if api not in outcomes:
                continue
            rows.append({
                "node": node_id, "site": "", "timestamp": CASE_TIME,
                "input": {"case_id": case_id},
                "expected": "true" if outcomes[api].get(field) == value else "false",
                "split": "eval" if _held_out(node_id, case_id) else "train",
            })  # fmt: skip
    return out


def write(out: Path, source: Path = SOP_DIR) -> Path:
    """The SOP folder at ``out`` (replaced): SOP, tools with the Checks active, cases."""
    raw = yaml.safe_load((source / "sop.yaml").read_text(encoding="utf-8"))
    found = decisions(raw)
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(source, out, ignore=shutil.ignore_patterns("__pycache__", "build.py"))
    sop = decision_sop(raw)
    (out / "sop.yaml").write_text(yaml.safe_dump(sop, sort_keys=False, width=96), encoding="utf-8")
    registry = Registry(out / "tools")
    for node_id, (api, field, value) in found.items():
        text = " ".join(sop["nodes"][node_id]["text"].split())
        code = tool_file(node_id, text, check(api, field, value)).replace(
            "(made by the tool-maker as a spec)", "(a hand-written Check)"
        )
        registry.add_version(
            sop["nodes"][node_id]["tool"], code, author="human", activate=True,
            reason="the decision as a Check: a field of the API's typed record",
        )  # fmt: skip
    cases = json.loads((out / "cases.json").read_text(encoding="utf-8"))["cases"]
    (out / "cases").mkdir()
    for node_id, rows in labeled(cases, found).items():
        lines = "".join(json.dumps(r) + "\n" for r in rows)
        (out / "cases" / f"{node_id}.jsonl").write_text(lines, encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sopgraph.evals.service_interruption_checks",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("out", type=Path, help="the SOP folder to write (replaced)")
    args = parser.parse_args(argv)
    out = write(args.out)
    found = [p.stem for p in sorted((out / "cases").glob("*.jsonl"))]
    print(f"{out}: {len(found)} decision nodes ({', '.join(found)}), cases in {out / 'cases'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
