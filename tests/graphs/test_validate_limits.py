"""Issue 53 finding 4: a broken SOP's problems are printed up to a cap with an exact count, and
what made big SOPs slow to validate is bounded: the values limit, the suggestion budget, a
long loop's path in one short line. Behaviour is asserted, never wall time (the figures are in
the issue's notes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sopgraph.graphs.loader import SopError, load_sop, load_sop_text
from sopgraph.graphs.problems import MAX_SHOWN_PROBLEMS
from sopgraph.graphs.validate import MAX_SUGGESTION_WORK
from sopgraph.graphs.yaml_limits import MAX_VALUES

ROOT = Path(__file__).resolve().parents[2]


def sop_text(nodes: dict, **extra) -> str:
    return yaml.safe_dump({"id": "big", "entry": {"x": ["n0"]}, "nodes": nodes, **extra})


def unknown_params(count: int) -> str:
    """One node whose text names ``count`` parameters no 'params' defines: ``count`` problems."""
    text = " ".join(f"{{zz{i}}}" for i in range(count))
    return sop_text({"n0": {"kind": "observation", "text": text}})


def problems_of(text: str) -> SopError:
    with pytest.raises(SopError) as info:
        load_sop_text(text, "big.yaml")
    return info.value


def test_an_sop_error_shows_the_first_problems_and_counts_the_rest() -> None:
    err = problems_of(unknown_params(3802))
    assert len(err.problems) == 3802  # every problem is still there, counted exactly
    lines = str(err).splitlines()
    assert len(lines) == MAX_SHOWN_PROBLEMS + 1 == 21
    assert lines[:-1] == [str(p) for p in err.problems[:MAX_SHOWN_PROBLEMS]]
    assert lines[-1] == (
        "error: big.yaml: ... and 3,782 more problems (3,802 in all); fix these first, "
        "then validate again"
    )


def test_up_to_the_cap_every_problem_is_shown_with_no_count_line() -> None:
    err = problems_of(unknown_params(MAX_SHOWN_PROBLEMS))
    assert str(err).splitlines() == [str(p) for p in err.problems]
    one_more = str(problems_of(unknown_params(MAX_SHOWN_PROBLEMS + 1))).splitlines()
    assert one_more[-1].endswith("... and 1 more problem (21 in all); fix these first, then "
                                 "validate again")  # fmt: skip


def test_sopgraph_validate_prints_the_cap_and_json_counts_exactly(tmp_path: Path) -> None:
    path = tmp_path / "sop.yaml"
    path.write_text(unknown_params(500))
    run = [sys.executable, "-m", "sopgraph", "validate", str(path)]
    env = {"SOPGRAPH_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(run, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == MAX_SHOWN_PROBLEMS + 1, proc.stderr
    assert all(line.startswith(f"error: {path}:") for line in lines)
    assert "... and 480 more problems (500 in all)" in lines[-1]
    proc = subprocess.run([*run, "--json"], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=120)  # fmt: skip
    report = json.loads(proc.stdout)
    assert report["ok"] is False and report["error_count"] == 500
    assert len(report["errors"]) == MAX_SHOWN_PROBLEMS
    assert len(proc.stderr.splitlines()) == MAX_SHOWN_PROBLEMS + 1


def test_an_sop_of_too_many_values_is_refused_first_in_one_line(tmp_path: Path) -> None:
    """A node with 150,000 children (1 MB): one error from the event pass, before any tree."""
    children = "".join(f"        - n{i % 900 + 1}\n" for i in range(150_000))
    actions = "".join(f"  n{i}: {{kind: action, text: t}}\n" for i in range(1, 901))
    path = tmp_path / "sop.yaml"
    path.write_text(
        "id: big\nentry: {x: [n0]}\nnodes:\n  n0:\n    kind: observation\n    text: t\n"
        f"    next:\n      'true':\n{children}{actions}"
    )
    assert path.stat().st_size < 4 * 1024 * 1024
    with pytest.raises(SopError) as info:
        load_sop(path)
    (problem,) = info.value.problems
    assert f"the document expands to more than {MAX_VALUES:,} values (the limit)" in str(problem)
    assert "split the procedure into smaller SOPs" in str(problem)
    assert "\n" not in str(problem)


def test_suggestions_stop_at_the_budget_and_every_unknown_id_is_still_reported() -> None:
    """1,000 nodes and 300 distinct near-typos: each guess compares a 10-letter typo with
    1,000 9-letter ids, so the first MAX_SUGGESTION_WORK // (10 * 9,000) typos get one and the
    rest the plain fix (before, all 300 were guessed: 60,000 unknown ids took 160 s)."""
    count = 1000
    nodes = {f"node_{i:04d}": {"kind": "observation", "text": "t"} for i in range(count)}
    typos = [f"node_{i:04d}x" for i in range(300)]
    nodes["node_0000"]["next"] = {"true": [f"node_{i:04d}" for i in range(1, count)] + typos}
    text = yaml.safe_dump({"id": "big", "entry": {"x": ["node_0000"]}, "nodes": nodes})
    err = problems_of(text)
    unknown = [p.message for p in err.problems if "unknown node" in p.message]
    assert len(unknown) == len(typos)
    guessed = MAX_SUGGESTION_WORK // (len(typos[0]) * sum(map(len, nodes)))
    assert guessed == 22
    assert guessed < len(typos)
    assert all("did you mean 'node_" in m for m in unknown[:guessed])
    assert all(m.endswith("define it under 'nodes' or fix the id") for m in unknown[guessed:])


def test_a_long_loop_is_one_short_line() -> None:
    """A 1,000-node ring without a bound: before, the message listed all 1,000 ids."""
    nodes = {
        f"n{i}": {"kind": "observation", "text": "t", "next": {"true": [f"n{(i + 1) % 1000}"]}}
        for i in range(1000)
    }
    (problem,) = problems_of(sop_text(nodes)).problems
    message = problem.message
    assert "the loop n0 → n1 → n2 → n3 → n4 → n5 → … (990 more) → n996 → n997 → n998 → n999 → n0" in message  # fmt: skip
    assert message.count("→") == 11 and len(message) < 300


def test_detached_pieces_over_one_shared_tail_count_each_node_once() -> None:
    """Five detached starts into one chain: the first carries the chain, the others only
    themselves (the walk that counts them visits each node once in all)."""
    nodes = {"n0": {"kind": "observation", "text": "t"}}
    nodes |= {f"c{i}": {"kind": "observation", "text": "t", "next": {"true": [f"c{i + 1}"]}}
              for i in range(1, 4)}  # fmt: skip
    nodes["c4"] = {"kind": "observation", "text": "t"}
    nodes |= {f"r{i}": {"kind": "observation", "text": "t", "next": {"true": ["c1"]}}
              for i in range(5)}  # fmt: skip
    messages = [p.message for p in problems_of(sop_text(nodes)).problems]
    assert len(messages) == 5
    assert messages[0].startswith("not reachable from any entry (4 more nodes hang off it)")
    assert all(m.startswith("not reachable from any entry; ") for m in messages[1:])
