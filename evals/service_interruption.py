"""The service-interruption case of SOP-agent's Grounded Customer Service Benchmark.

Ground truth comes from the paper's pseudocode (``sop_agent.yaml``) walked directly, never
from the imported native SOP, so it checks the importer and the engine together. For each
combination of scripted API outcomes the SOP-agent walks the tree depth-first, taking every
child whose condition holds on the observation of the API it tests; the called functions form
the ground-truth path. Metrics follow the paper: a run's *path* is right when the functions it
called equal the ground truth's; its *leaf* is right when the last function of the
ground-truth path was called.

Run ``python -m sopgraph.evals.service_interruption`` for path and leaf accuracy over every case.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sopgraph.examples import EXAMPLES

SOP_DIR = EXAMPLES / "service_interruption"
PSEUDOCODE = SOP_DIR / "sop_agent.yaml"
CASES = SOP_DIR / "cases.json"

# What the APIs whose output no condition tests return: the world's fixed content.
DEFAULT_OUTCOMES: dict[str, dict[str, Any]] = {
    "ServiceInterruptionHandle": {"sop": "service_interruption_handling", "status": "started"},
    "check_outage_resolution_time": {"estimated_resolution_time": "4 hours"},
    "check_interruption_troubleshooting_guide": {
        "steps": ["restart the modem", "check the line cables", "test the connection again"]
    },
    "escalate_issue_to_technical_support": {"ticket_status": "opened"},
}

_FIELDS = {"condition", "API", "Description", "Instructions"}


@dataclass
class Step:
    """One pseudocode step as the SOP-agent sees it."""

    description: str
    api: str | None
    condition: Any  # "always" or {"API", "variable", "condition_type", "value"}
    children: list[Step] = field(default_factory=list)


def read_tree(path: Path = PSEUDOCODE) -> Step:
    """The first top-level step of a benchmark SOP (no loops: the benchmark has none)."""
    return _step(yaml.safe_load(path.read_text(encoding="utf-8"))[0])


def _step(item: dict[str, Any]) -> Step:
    unknown = set(item) - _FIELDS - {k for k, v in item.items() if v is None}
    if unknown:
        raise ValueError(f"the benchmark walker does not take {sorted(unknown)} (no loops)")
    (description,) = [k for k, v in item.items() if v is None and k not in _FIELDS]
    api = item.get("API")
    return Step(
        description=" ".join(str(description).split()),
        api=api["name"] if isinstance(api, dict) else api,
        condition=item.get("condition", "always"),
        children=[_step(c) for c in item.get("Instructions") or []],
    )


def holds(condition: Any, observations: dict[str, dict[str, Any]]) -> bool:
    if condition == "always":
        return True
    actual = observations.get(condition["API"], {}).get(condition["variable"])
    kind = condition["condition_type"]
    if kind == "is":
        return actual == condition["value"]
    if kind == "is_not":
        return actual != condition["value"]
    raise ValueError(f"the benchmark walker does not take condition_type {kind!r}")


@dataclass(frozen=True)
class GroundTruth:
    """The steps the SOP-agent takes on one case: ``(description, api or None)`` in order."""

    steps: tuple[tuple[str, str | None], ...]

    @property
    def apis(self) -> list[str]:
        """The function calls, in order: the paper's path."""
        return [api for _, api in self.steps if api]

    @property
    def leaf_api(self) -> str:
        """The last function call of the path: the paper's leaf."""
        return self.apis[-1]

    @property
    def descriptions(self) -> list[str]:
        return [d for d, _ in self.steps]


def ground_truth(tree: Step, outcomes: dict[str, dict[str, Any]]) -> GroundTruth:
    """Walk the pseudocode depth-first with scripted ``outcomes`` (api -> returned dict)."""
    steps: list[tuple[str, str | None]] = []
    observations: dict[str, dict[str, Any]] = {}

    def visit(step: Step) -> None:
        steps.append((step.description, step.api))
        if step.api:
            observations[step.api] = outcomes.get(step.api, DEFAULT_OUTCOMES.get(step.api, {}))
        for child in step.children:
            if holds(child.condition, observations):
                visit(child)

    visit(tree)
    return GroundTruth(tuple(steps))


def _walk(step: Step) -> list[Step]:
    return [step, *(s for c in step.children for s in _walk(c))]


def tested_values(tree: Step) -> dict[tuple[str, str], list[Any]]:
    """Every ``(api, variable)`` some condition tests, with the values tested, in file order."""
    out: dict[tuple[str, str], list[Any]] = {}
    for step in _walk(tree):
        c = step.condition
        if isinstance(c, dict):
            values = out.setdefault((c["API"], c["variable"]), [])
            if c["value"] not in values:
                values.append(c["value"])
    return out


def all_combinations(tree: Step) -> list[dict[str, dict[str, Any]]]:
    """The cartesian product of every tested value of every tested API output."""
    tested = tested_values(tree)
    combos = []
    for values in itertools.product(*tested.values()):
        outcomes: dict[str, dict[str, Any]] = {}
        for (api, var), value in zip(tested, values, strict=True):
            outcomes.setdefault(api, {})[var] = value
        combos.append(outcomes)
    return combos


def leaf_cases(tree: Step) -> list[dict[str, dict[str, Any]]]:
    """One case per root-to-leaf path (the balanced, complete set of branches).

    A case scripts only the APIs on its path, so a run that calls any other tested API fails.
    """
    out: list[dict[str, dict[str, Any]]] = []

    def down(step: Step, needed: dict[str, dict[str, Any]]) -> None:
        if isinstance(step.condition, dict):
            c = step.condition
            needed = {**needed, c["API"]: {**needed.get(c["API"], {}), c["variable"]: c["value"]}}
        if not step.children:
            out.append(needed)
        for child in step.children:
            down(child, needed)

    down(tree, {})
    return out


def build_cases(tree: Step) -> dict[str, Any]:
    """The cases file the MCP server reads: leaf cases then every combination."""
    cases: dict[str, dict[str, Any]] = {}
    for i, outcomes in enumerate(leaf_cases(tree), 1):
        cases[f"leaf_{i:02d}"] = outcomes
    for i, outcomes in enumerate(all_combinations(tree)):
        cases[f"combo_{i:02d}"] = outcomes
    return {"defaults": DEFAULT_OUTCOMES, "cases": cases}


def cases_json(tree: Step) -> str:
    return json.dumps(build_cases(tree), indent=2) + "\n"


def read_call_log(path: Path) -> dict[str, list[str]]:
    """Case id -> APIs called in order, from the server's ``--call-log`` JSON lines."""
    out: dict[str, list[str]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            out.setdefault(record["case_id"], []).append(record["api"])
    return out


def path_matches(truth: GroundTruth, apis_called: list[str]) -> bool:
    """Path accuracy: the functions called are exactly the ground truth's, in order."""
    return apis_called == truth.apis


def leaf_matches(truth: GroundTruth, apis_called: list[str]) -> bool:
    """Leaf accuracy: the last function call of the ground-truth path was made."""
    return truth.leaf_api in apis_called


def steps_match(truth: GroundTruth, node_texts: list[str]) -> bool:
    """The run visited the same steps (by description), in order, actions without an API included."""
    return [" ".join(t.split()) for t in node_texts] == truth.descriptions


@dataclass
class CaseResult:
    case_id: str
    truth: GroundTruth
    apis: list[str]
    node_texts: list[str]
    status: str

    @property
    def path_ok(self) -> bool:
        return path_matches(self.truth, self.apis)

    @property
    def leaf_ok(self) -> bool:
        return leaf_matches(self.truth, self.apis)

    @property
    def steps_ok(self) -> bool:
        return steps_match(self.truth, self.node_texts)


async def evaluate(sop_dir: Path = SOP_DIR, case_ids: list[str] | None = None) -> list[CaseResult]:
    """Run the native SOP in ``sop_dir`` on every case of its cases file through the real server.

    The server writes its call log under the sopgraph home (``$SOPGRAPH_HOME``, see mcp.json).
    """
    # Imported here: the ground-truth half of this module (used by build.py) needs no LangGraph.
    from sopgraph.graphs.home import home_dir
    from sopgraph.runtime.runner import Session

    tree = read_tree(sop_dir / "sop_agent.yaml")
    cases = json.loads((sop_dir / "cases.json").read_text(encoding="utf-8"))["cases"]
    if case_ids is not None:
        cases = {c: cases[c] for c in case_ids}
    log_path = home_dir() / "customer_service_calls.jsonl"
    log_path.unlink(missing_ok=True)
    runs: dict[str, Any] = {}
    async with Session(sop_dir, approval="approve") as session:
        for case_id in cases:
            runs[case_id] = await session.run({"type": "default", "case_id": case_id})
        sop = session.sop
    calls = read_call_log(log_path)
    return [
        CaseResult(
            case_id=case_id,
            truth=ground_truth(tree, outcomes),
            apis=calls.get(case_id, []),
            node_texts=[sop.nodes[n].text for n in runs[case_id].path],
            status=runs[case_id].status,
        )
        for case_id, outcomes in cases.items()
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sopgraph.evals.service_interruption", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--sop-dir", type=Path, default=SOP_DIR)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    results = asyncio.run(evaluate(args.sop_dir))
    seconds = time.perf_counter() - start
    n = len(results)
    for r in results:
        if not (r.path_ok and r.steps_ok):
            print(f"FAIL {r.case_id}: called {r.apis}, ground truth {r.truth.apis}")
    print(
        f"{n} cases, {len({r.truth for r in results})} distinct paths: "
        f"path_acc {sum(r.path_ok for r in results) / n:.1%}, "
        f"leaf_acc {sum(r.leaf_ok for r in results) / n:.1%}, "
        f"steps_acc {sum(r.steps_ok for r in results) / n:.1%}, {seconds:.1f} s"
    )
    return 0 if all(r.path_ok and r.steps_ok for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
