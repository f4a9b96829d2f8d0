"""The SOP-Bench baselines' live run on the test domain, replayed: same figures, no model started.

``evals/model_results/sopbench_refund_check.json`` is what
``sopgraph bench sopbench tests/data/sopbench/refund_check --agent A --tasks N --seed 0 --json``
printed live against Qwen2.5-Coder-1.5B (json-schema tool calls); ``tests/cassettes/
sopbench_refund_check_<A>.jsonl`` holds its exchanges. The same with ``--decide code`` is under
the key ``<A>+decide-code``, its exchanges in ``sopbench_refund_check_<A>_decide-code.jsonl``.
``shipment_hold`` (our own too) has its decide-by-code runs the same way, in
``sopbench_shipment_hold.json`` and ``sopbench_shipment_hold_<A>_decide-code.jsonl``. With
``--votes 3`` (key ``<A>+decide-code-votes3``) the decide-code cassette holds the sampled
replies too, after the exchanges of the greedy run. ``--decide quote`` (key ``<A>+decide-quote``,
cassette ``..._<A>_decide-quote.jsonl``) is the same agents' run with the quoting decide step.
``--decide verify`` (key ``<A>+decide-verify``) asks only what those two runs asked (the quoting
step's prompts, then the plain step's), so it replays from their two cassettes concatenated.
The domains are our own text, so both can be committed (SOP-Bench's own runs cannot).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from side_by_side import side_by_side

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "evals" / "model_results"
DOMAINS = ROOT / "tests" / "data" / "sopbench"
FIGURES = ("n", "completed", "correct_strict", "correct_lenient", "tokens_per_task")

pytestmark = pytest.mark.slow


def _names(domain: str, agent: str, decide: str, votes: int) -> tuple[dict, str, str]:
    """The live run's figures, its cassette's name and its run folder's name."""
    key, name, run_dir = agent, agent, agent
    if decide != "none":
        key, name, run_dir = (
            f"{agent}+decide-{decide}",
            f"{agent}_decide-{decide}",
            f"{agent}-decide-{decide}",
        )
    if votes > 1:  # the same cassette: the greedy run's exchanges, then the sampled replies
        key, run_dir = f"{key}-votes{votes}", f"{run_dir}-votes{votes}"
    results = RESULTS / f"sopbench_{domain}.json"
    if not results.exists():
        pytest.skip(f"{results.name} was not recorded live")
    return json.loads(results.read_text())[key], name, run_dir


def _replay(domain: str, agent: str, decide: str, votes: int, home: Path):
    live, name, _ = _names(domain, agent, decide, votes)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOPGRAPH_")}
    cassette = ROOT / "tests" / "cassettes" / f"sopbench_{domain}_{name}.jsonl"
    if decide == "verify":  # the quote run's exchanges, then the code run's
        parts = [cassette.with_name(cassette.name.replace("verify", m)) for m in ("quote", "code")]
        cassette = home / "cassette.jsonl"
        cassette.write_text("".join(p.read_text() for p in parts))
    env.update(SOPGRAPH_MODEL="local", SOPGRAPH_CASSETTE=str(cassette),
               SOPGRAPH_CASSETTE_MODE="replay", SOPGRAPH_HOME=str(home))  # fmt: skip
    n = str(live["summary"]["n"])
    command = ["bench", "sopbench", str(DOMAINS / domain), "--agent", agent, "--tasks", n, "--seed", "0",
               "--decide", decide, "--votes", str(votes)]  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "sopgraph", *command, "--json"],
        env=env, capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip


@pytest.fixture(scope="module")
def replays(request, tmp_path_factory):
    """The selected replays, started side by side, each with a home of its own."""

    def start(params: dict, home: Path):
        return home, _replay(**params, home=home)

    test = "test_the_live_baseline_on_the_test_domain_replays"
    yield from side_by_side(request, tmp_path_factory, test, start)


ALL = [("refund_check", "fc", "none", 1), ("refund_check", "react", "none", 1),
       ("refund_check", "fc", "code", 1), ("refund_check", "react", "code", 1),
       ("shipment_hold", "fc", "code", 1), ("shipment_hold", "react", "code", 1),
       ("refund_check", "fc", "code", 3), ("refund_check", "react", "code", 3),
       ("shipment_hold", "fc", "code", 3), ("shipment_hold", "react", "code", 3),
       ("refund_check", "fc", "quote", 1), ("refund_check", "react", "quote", 1),
       ("shipment_hold", "fc", "quote", 1), ("shipment_hold", "react", "quote", 1),
       ("refund_check", "fc", "verify", 1), ("refund_check", "react", "verify", 1),
       ("shipment_hold", "fc", "verify", 1), ("shipment_hold", "react", "verify", 1)]  # fmt: skip
# CI replays the agents alone, the default decide step (verify: it asks exactly the quote and
# code runs' prompts, from their cassettes) and one voting run; SOPGRAPH_REPLAY_WHOLE=1 replays
# every recorded run (the others' figures are in docs/agents.md as recorded live)
CI = [("refund_check", "fc", "none", 1), ("refund_check", "react", "none", 1),
      ("refund_check", "fc", "code", 3),
      ("refund_check", "fc", "verify", 1), ("refund_check", "react", "verify", 1),
      ("shipment_hold", "fc", "verify", 1), ("shipment_hold", "react", "verify", 1)]  # fmt: skip
REPLAYED = ALL if os.environ.get("SOPGRAPH_REPLAY_WHOLE") else CI


@pytest.mark.parametrize(("domain", "agent", "decide", "votes"), REPLAYED)
def test_the_live_baseline_on_the_test_domain_replays(
    domain, agent, decide, votes, replays, request
):
    live, _, run_dir = _names(domain, agent, decide, votes)
    home, proc = replays[request.node.callspec.id].result()
    n = str(live["summary"]["n"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "no recorded response" not in proc.stderr
    (run,) = json.loads(proc.stdout)["runs"]
    assert {k: run["summary"][k] for k in FIGURES} == {k: live["summary"][k] for k in FIGURES}
    records = home / "sopbench" / domain / f"{run_dir}-n{n}-s0" / "records.jsonl"
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    assert [r["answer"] for r in rows] == live["answers"]
    if decide != "none":  # which answers the code gave, and the agent's it replaced
        assert [r["decided"]["by"] for r in rows] == live["decided_by"]
        assert [r["decided"]["agent_answer"] for r in rows] == live["agent_answers"]
    if decide == "verify":  # why each answer was taken, as the run printed it
        assert [r["decided"]["why"] for r in rows] == live["why"]
        assert len(re.findall(r"\(decided by (?:code|agent): ", proc.stderr)) == len(rows)
    if votes > 1:  # every vote's answer, the greedy reply's first; each task's tally printed
        assert [[v["answer"] for v in r["decided"]["votes"]] for r in rows] == live["votes"]
        tallies = re.findall(rf"decided by (?:code|agent), (\d) of {votes} votes", proc.stderr)
        assert len(tallies) == len(rows)
