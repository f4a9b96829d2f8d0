"""The Check fallback's node verdicts on an SOP's labeled cases, beside its compiled tools and the
majority verdict: ``sopgraph eval fallback DIR``.

The cases are ``DIR/cases/*.jsonl``, one ``{"node", "input", "expected"}`` a line (the form
``sopgraph init`` writes). Each case's node is decided twice on the case's input: by the Check
fallback (``tools/toolmaker/check_fallback.py``: Checks sampled under the node's grammar, the
verdict most of them give) and by the node's active compiled tool. The fallback never sees a
label, and its prompt holds no input values, so every case is held out from it; the labels
only score it. The baseline is each node's majority label over its own cases (which favours
the baseline). The SOP is copied to ``work`` first, so the candidate versions the fallback
registers land in the copy (``sopgraph shadow`` or ``tools promote`` read them there) and
never in the SOP itself.

Example:
    >>> summary = asyncio.run(eval_fallback(Path("my-sop"), lm, "local", Path("/tmp/w")))  # doctest: +SKIP
    >>> summary["fallback_accuracy"], summary["tool_accuracy"], summary["majority_accuracy"]  # doctest: +SKIP
    (0.75, 1.0, 0.625)
"""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sopgraph.graphs.executors import ToolContext, Unavailable
from sopgraph.graphs.loader import load_sop
from sopgraph.nodes.mcp import McpPool, load_server_configs
from sopgraph.nodes.tool_node import as_verdict
from sopgraph.tools.params import ParamStore
from sopgraph.tools.registry import Registry, RegistryError
from sopgraph.tools.toolmaker.check_fallback import SAMPLES, CheckFallback, fallback_candidates


class CasesError(ValueError):
    """The SOP's labeled cases are missing or malformed (the message says where)."""


def load_labeled(sop_dir: Path, node_ids: set[str]) -> list[dict[str, Any]]:
    """Every case of ``sop_dir/cases/*.jsonl``, checked: a known decision node, an input object
    and an expected verdict."""
    files = sorted((sop_dir / "cases").glob("*.jsonl"))
    if not files:
        raise CasesError(f"{sop_dir / 'cases'}: no *.jsonl cases; write one case a line there")
    cases = []
    for path in files:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            where = f"{path}:{n}"
            try:
                case = json.loads(line)
            except ValueError as exc:
                raise CasesError(f"{where}: not JSON ({exc.msg})") from None
            if not isinstance(case, dict) or not isinstance(case.get("input"), dict):
                raise CasesError(f'{where}: give {{"node", "input": {{...}}, "expected"}}')
            if case.get("node") not in node_ids:
                raise CasesError(f"{where}: {case.get('node')!r} is not a decision node")
            if case.get("expected") not in ("true", "false", "no_data"):
                raise CasesError(f"{where}: expected must be true, false or no_data")
            cases.append(case)
    return cases


async def eval_fallback(
    sop_dir: Path,
    lm: Any,
    model: str,
    work: Path,
    *,
    samples: int = SAMPLES,
    nodes: list[str] | None = None,
    on_case: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Decide every labeled case's node by the fallback and by the compiled tool; the summary."""
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(sop_dir, work, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    sop = load_sop(work)
    decision = {n.id for n in sop.decision_nodes}
    cases = [c for c in load_labeled(work, decision) if nodes is None or c["node"] in nodes]
    registry = Registry(work / "tools", sop_id=sop.id)
    params = ParamStore(sop, work)
    fallback = CheckFallback(sop, registry, lm, model, samples=samples)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    async with McpPool(load_server_configs(work)) as pool:
        for i, case in enumerate(cases):
            node = sop.nodes[case["node"]]
            inp, p = case["input"], params.for_input(case["input"])
            ctx = ToolContext(
                node_id=node.id, text=sop.render_text(node, p), params=p, parents={},
                input=inp, run_id=f"eval-{i}", mcp=pool, node=node,
            )  # fmt: skip
            row: dict[str, Any] = {"node": node.id, "input": inp, "expected": case["expected"]}
            t0 = time.perf_counter()
            try:
                outcome = await fallback.decide(node, ctx)
                row["fallback"] = outcome.verdict.value if outcome.verdict else None
                row["why"] = outcome.error
                row["tokens"] = outcome.detail.get("input_tokens", 0) + outcome.detail.get(
                    "output_tokens", 0
                )
            except Unavailable as exc:
                row["fallback"], row["why"], row["tokens"] = None, str(exc), 0
            row["seconds"] = round(time.perf_counter() - t0, 2)
            try:
                row["tool"] = as_verdict(await registry.resolve(node.tool_name).fn(inp, ctx)).value
            except RegistryError:
                row["tool"] = None  # no compiled tool: the fallback is all there is
            rows.append(row)
            if on_case:
                on_case(row)
    return summarize(rows) | {
        "sop": str(sop_dir),
        "copy": str(work),
        "model": model,
        "samples": samples,
        "seconds": round(time.perf_counter() - started, 1),
        "candidates": fallback_candidates(registry),
        "cases": rows,
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per node and overall: the fallback's, the tools' and the majority label's accuracy."""
    per_node: dict[str, dict[str, Any]] = {}
    for node in dict.fromkeys(r["node"] for r in rows):
        mine = [r for r in rows if r["node"] == node]
        top = Counter(r["expected"] for r in mine).most_common(1)[0]
        per_node[node] = {
            "cases": len(mine),
            "fallback": sum(r["fallback"] == r["expected"] for r in mine),
            "unresolved": sum(r["fallback"] is None for r in mine),
            "tool": sum(r["tool"] == r["expected"] for r in mine),
            "majority": top[1],
            "majority_label": top[0],
        }
    n = len(rows) or 1

    def total(key: str) -> float:
        return round(sum(v[key] for v in per_node.values()) / n, 4)

    return {
        "n": len(rows),
        "fallback_accuracy": total("fallback"),
        "tool_accuracy": total("tool"),
        "majority_accuracy": total("majority"),
        "unresolved": sum(v["unresolved"] for v in per_node.values()),
        "tokens": sum(r.get("tokens", 0) for r in rows),
        "per_node": per_node,
    }
