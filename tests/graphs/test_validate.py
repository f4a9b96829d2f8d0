"""SOP validation: every bad SOP gives one precise error line, good SOPs load, nothing raises."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from sopgraph.graphs.loader import SopError, load_sop, load_sop_text, parse_yaml
from sopgraph.graphs.sop_warnings import find_warnings
from sopgraph.graphs.yaml_limits import MAX_NODES, MAX_SOP_BYTES

DATA = Path(__file__).resolve().parents[1] / "data"
BAD = sorted((DATA / "bad_sops").glob("*.yaml"))
GOOD = sorted((DATA / "good_sops").glob("*.yaml"))
ROOT = Path(__file__).resolve().parents[2]


def _sidecar() -> dict[str, str]:
    rows = (DATA / "bad_sops" / "expectations.txt").read_text().splitlines()
    return {r.split(" ", 1)[0]: r.split(" ", 1)[1] for r in rows if r and not r.startswith("#")}


def _expectation(path: Path) -> tuple[int, str, str]:
    """``(line, node, message part)`` from the file's first line, or from expectations.txt for
    files that cannot hold one (symlinks to devices, UTF-16 text)."""
    side = _sidecar().get(path.name)
    if side is not None:
        first = f"# expect: {side}"
    else:
        with open(path, "rb") as f:  # bytes: some files are deliberately not UTF-8
            first = f.readline().decode("utf-8").rstrip("\n")
    m = re.fullmatch(r"# expect: (\d+) (\S+) (.+)", first)
    assert m, f"{path.name}: first line must be '# expect: <line> <node> <message part>'"
    return int(m[1]), m[2], m[3]


def _text(path: Path) -> str | None:
    """The file's text, or None for the files that are not UTF-8 text on purpose."""
    if not path.is_file() or path.name in _sidecar():
        return None
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return None


def _problems(text: str) -> list[str]:
    try:
        load_sop_text(text, "t.yaml")
    except SopError as exc:
        return [str(p) for p in exc.problems]
    return []


def test_corpus_has_one_file_per_kind_of_mistake():
    names = {p.stem for p in BAD}
    issue_list = {
        "yaml_syntax", "unknown_child", "duplicate_id", "unknown_kind", "unreachable",
        "action_dead_children", "loop_no_exit", "loop_no_bound", "undefined_param",
        "entry_is_action", "empty",
    }  # fmt: skip
    assert issue_list <= names
    hardening = {
        "alias_bomb", "nested_brackets", "dev_zero", "nul_byte", "latin1", "utf16",
        "python_tag", "placeholder_format_spec", "placeholder_attribute",
        "placeholder_positional", "max_visits_huge", "gated_no_cost",
    }  # fmt: skip
    assert hardening <= names
    assert len(BAD) >= 77
    assert len(GOOD) >= 3


@pytest.fixture(params=["libyaml", "pure"])
def yaml_parser(request, monkeypatch) -> str:
    """Each check runs with PyYAML's C parser (libyaml, when installed) and its pure parser."""
    if request.param == "pure":
        monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    elif not hasattr(yaml, "CSafeLoader"):
        pytest.skip("this PyYAML has no libyaml")
    return request.param


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.stem)
def test_bad_sop_gives_exactly_one_error(path: Path, yaml_parser: str):
    line, node, part = _expectation(path)
    with pytest.raises(SopError) as info:
        load_sop(path)
    problems = [str(p) for p in info.value.problems]
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"error: {path}:{line}: {node}: "), problems[0]
    assert part in problems[0]
    assert "\n" not in problems[0]


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.stem)
def test_good_sop_loads_without_warnings(path: Path):
    sop = load_sop(path)
    _, lines = parse_yaml(path.read_text(), str(path))
    assert sop.nodes
    assert find_warnings(sop, lines, str(path)) == []


def test_true_and_false_keys_are_edges_not_booleans():
    sop = load_sop(DATA / "good_sops" / "loop_bounded.yaml")
    assert sop.nodes["obs_heartbeat"].next.true == ["act_restart"]
    assert sop.nodes["obs_heartbeat"].next.false == ["act_close"]
    assert sop.nodes["act_escalate"].next.false == ["act_close"]


@pytest.mark.parametrize("path", GOOD + BAD, ids=lambda p: p.stem)
def test_no_edit_of_a_file_raises_anything_but_sop_error(path: Path):
    """Cut the file short at every line and drop every single line: a user mistake each time."""
    text = _text(path)
    if text is None:
        pytest.skip("not UTF-8 text on purpose")
    rows = text.splitlines(keepends=True)
    if len(rows) > 200:  # each variant is a whole load: keep this check to hand-written sizes
        pytest.skip("too many lines to cut at every one")
    variants = ["".join(rows[:i]) for i in range(len(rows))]
    variants += ["".join(rows[:i] + rows[i + 1 :]) for i in range(len(rows))]
    for text in variants:
        try:
            load_sop_text(text, "t.yaml")
        except SopError as exc:
            assert exc.problems and all(str(p).startswith("error: t.yaml:") for p in exc.problems)


SMALL = """\
id: s
params: {limit: 3}
entry:
  alarm: [obs_a]
nodes:
  obs_a:
    kind: observation
    text: Above {limit}.
    next:
      true: [act_b]
  act_b:
    kind: action
"""


def test_small_sop_is_valid():
    assert _problems(SMALL) == []


def test_every_problem_is_reported_in_file_order():
    text = SMALL.replace("{limit}", "{limt}").replace("alarm: [obs_a]", "alarm: [obs_a, act_b]")
    text += "    next:\n      no_data: [act_c]\n  act_c:\n    kind: action\n"
    problems = _problems(text)
    lines = [int(p.split(":")[2]) for p in problems]
    assert len(problems) == 3, problems
    assert lines == sorted(lines) == [4, 8, 14]
    assert "starts at an action" in problems[0]
    assert "did you mean 'limit'?" in problems[1]
    assert "'no_data' never run" in problems[2]


def test_a_typo_with_no_close_id_does_not_make_everything_unreachable():
    problems = _problems(SMALL.replace("alarm: [obs_a]", "alarm: [first_check]"))
    assert len(problems) == 1 and "unknown node 'first_check'" in problems[0]


def test_a_detached_cycle_is_reported_once():
    text = SMALL + (
        "  obs_x:\n    kind: observation\n    max_visits: 2\n    next: {true: [obs_y]}\n"
        "  obs_y:\n    kind: observation\n    next: {true: [obs_x]}\n"
    )
    problems = _problems(text)
    assert len(problems) == 1
    assert ":13: obs_x: not reachable from any entry (1 more node hangs off it)" in problems[0]


def test_a_loop_may_end_on_a_verdict_with_no_children():
    text = SMALL.replace("      true: [act_b]", "      false: [act_b]").replace(
        "    text: Above", "    max_visits: 2\n    text: Above"
    )
    text += "    next:\n      true: [obs_a]\n"
    assert _problems(text) == []


def test_every_cycle_needs_a_bound_not_just_the_strongly_connected_part():
    text = SMALL.replace("      true: [act_b]", "      true: [act_b]\n      false: [act_c]")
    text += (
        "    max_visits: 2\n    next:\n      true: [obs_a]\n"
        "  act_c:\n    kind: action\n    next:\n      true: [obs_a]\n"
    )
    problems = _problems(text)
    assert len(problems) == 1, problems
    assert "act_c: next.true jumps back to 'obs_a': the loop obs_a → act_c → obs_a" in problems[0]


def test_warnings_flag_unused_params_dead_end_observations_and_idle_bounds():
    text = SMALL.replace("{limit: 3}", "{limit: 3, spare: 1}")
    text += (
        "    max_visits: 4\n    next:\n      true: [obs_leaf]\n  obs_leaf:\n    kind: observation\n"
    )
    sop = load_sop_text(text, "t.yaml")
    _, lines = parse_yaml(text, "t.yaml")
    found = [str(w) for w in find_warnings(sop, lines, "t.yaml")]
    assert found[0].startswith("warning: t.yaml:2: -: parameter 'spare' appears in no node text")
    assert found[1].startswith("warning: t.yaml:13: act_b: 'max_visits' has no effect")
    assert found[2].startswith("warning: t.yaml:16: obs_leaf: this observation leads nowhere")
    assert len(found) == 3


# All the SOPs are validated by one child process, each through the CLI's own ``main`` (its
# stderr and exit code captured per SOP), so the check costs one interpreter start, not one per
# SOP. The child's peak RSS is the largest over all of them: under the limit there, each one is.
# It is spawned from a small launcher process: a child's ru_maxrss counts the pages it shared
# with its parent before exec, so a child forked straight from this (large) pytest process would
# report pytest's own size. With "pure", the child runs with PyYAML's C parser removed.
_CHILD = """
import contextlib, io, json, sys, time, traceback
if sys.argv[1] == "pure":
    import yaml
    del yaml.CSafeLoader
from sopgraph.cli import main
out = []
for path in sys.argv[2:]:
    err, start = io.StringIO(), time.perf_counter()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(["validate", path])
        except SystemExit as exc:
            code = exc.code
        except BaseException:
            code, _ = -1, traceback.print_exc()
    out.append([code, err.getvalue(), time.perf_counter() - start])
print(json.dumps(out))
"""
_LAUNCHER = """
import json, os, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.Popen([sys.executable, "-c", *sys.argv[1:]], stdout=subprocess.PIPE)
out = proc.stdout.read()
_, status, usage = os.wait4(proc.pid, 0)
print(json.dumps([os.waitstatus_to_exitcode(status), json.loads(out or "null"),
                  time.perf_counter() - start, usage.ru_maxrss / 1024]))
"""


def _validate_measured(paths: list[Path], parser: str) -> tuple[list, float, float]:
    """``sopgraph validate PATH`` for each path, in one child process: per path the exit code,
    stderr and seconds; the child's wall seconds and its own peak RSS in MB (``os.wait4``
    reports that child's rusage alone)."""
    out = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, _CHILD, parser, *map(str, paths)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout
    code, results, wall, rss = json.loads(out)
    assert code == 0 and results is not None, out
    return results, wall, rss


@pytest.mark.slow
@pytest.mark.parametrize("parser", ["libyaml", "pure"])
def test_cli_bad_sops(capsys, monkeypatch, parser: str):
    """``sopgraph validate`` prints the one error line, exits 2, shows no traceback and stays
    under 200 MB for every bad SOP (alias bombs, deep nesting and /dev/zero included), with
    PyYAML's C parser and with its pure parser."""
    paths = BAD + GOOD
    measured, wall, rss = _validate_measured(paths, parser)
    results = dict(zip(paths, measured, strict=True))
    assert rss < 200, f"peak RSS {rss:.0f} MB over {len(paths)} SOPs (limit 200 MB)"
    for path, (code, stderr, _) in results.items():
        if path in GOOD:
            assert code == 0, (path.name, stderr)
            continue
        line, node, part = _expectation(path)
        errors = [row for row in stderr.splitlines() if row.startswith("error:")]
        assert code == 2, (path.name, stderr)
        assert "Traceback" not in stderr, (path.name, stderr)
        assert len(errors) == 1 and len(stderr.splitlines()) == 1, (path.name, stderr)
        assert errors[0].startswith(f"error: {path}:{line}: {node}: ") and part in errors[0]
    if parser == "pure":
        monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    loads = {}
    for path in BAD:  # the loader alone, in this process
        start = time.perf_counter()
        with pytest.raises(SopError):
            load_sop(path)
        loads[path.name] = time.perf_counter() - start
    slow_load = max(loads, key=loads.get)
    slowest = max(results.items(), key=lambda kv: kv[1][2])
    with capsys.disabled():  # a printed check, not an assert: timings vary with the machine
        print(
            f"\n{parser}: bad SOPs: {len(BAD)}; slowest validate {slowest[0].name} "
            f"{slowest[1][2]:.2f} s (target < 2 s); the child, all {len(paths)} SOPs and its "
            f"start: {wall:.1f} s, peak RSS {rss:.0f} MB (limit 200 MB); slowest load in this "
            f"process {slow_load} {loads[slow_load] * 1000:.0f} ms"
        )


def test_file_over_the_size_limit_is_refused_before_reading_it_all(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("id: t\n" + "# padding\n" * (MAX_SOP_BYTES // 10 + 1))
    with pytest.raises(SopError) as info:
        load_sop(big)
    assert [str(p) for p in info.value.problems] == [
        f"error: {big}:1: -: the SOP file is over 4 MB (the limit); split the procedure into "
        "smaller SOPs"
    ]


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "sop.yaml"
    os.mkfifo(fifo)
    with pytest.raises(SopError, match="not a regular file"):
        load_sop(fifo)


def test_load_sop_text_checks_the_limits_too():
    """Text that never was a file (an MCP resource, a test) meets the same limits."""
    problems = _problems("id: t\nentry: " + "[" * 5000 + "]" * 5000 + "\n")
    assert len(problems) == 1 and "nested more than 64 levels deep" in problems[0]
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n"
        for p, c in zip("abcdefg", "bcdefgh", strict=True)
    )
    problems = _problems(bomb)
    assert len(problems) == 1 and "expands to more than 100,000 values" in problems[0]


def test_aliases_within_the_limit_still_load():
    text = SMALL.replace("params: {limit: 3}", "params: &p {limit: 3}") + "    title: *p\n"
    assert "title" in _problems(text)[0]  # the alias expanded; the model then rejects a mapping
    assert _problems(SMALL.replace("text: Above {limit}.", "text: &t Above {limit}.")) == []


def test_an_sop_beyond_the_node_limit_is_refused_in_one_line(tmp_path):
    """A 10,000-node chain: its run would checkpoint O(N^2) state, so it is refused up front."""
    nodes = {"n0": {"kind": "observation", "text": "start", "next": {"always": ["n1"]}}}
    for i in range(1, 10_000):
        nodes[f"n{i}"] = {"kind": "action", "text": f"step {i}"}
        if i < 9_999:
            nodes[f"n{i}"]["next"] = {"true": [f"n{i + 1}"]}
    sop = tmp_path / "chain.yaml"
    sop.write_text(yaml.safe_dump({"id": "chain", "entry": {"x": ["n0"]}, "nodes": nodes}))
    with pytest.raises(SopError) as info:
        load_sop(sop)
    (problem,) = info.value.problems
    assert str(problem).startswith(
        f"error: {sop}:5: -: the SOP has 10,000 nodes; sopgraph runs SOPs of at most 1,000"
    )
    at_limit = dict(list(nodes.items())[:MAX_NODES])
    at_limit[f"n{MAX_NODES - 1}"].pop("next")
    sop.write_text(yaml.safe_dump({"id": "chain", "entry": {"x": ["n0"]}, "nodes": at_limit}))
    assert len(load_sop(sop).nodes) == MAX_NODES


def test_parameter_files_an_sop_would_never_read_are_one_error_line(tmp_path):
    """Without ``params_by`` every run uses the defaults, so files in params/ would silently
    not apply: the loader refuses them and says which key to add."""
    sop = {
        "id": "refunds", "params": {"max_refund": 50},
        "input": {"customer": {"type": "string"}, "order_id": {"type": "string"}},
        "entry": {"refund": ["obs_a"]},
        "nodes": {"obs_a": {"kind": "observation", "text": "Refund above {max_refund}."}},
    }  # fmt: skip
    (tmp_path / "sop.yaml").write_text(yaml.safe_dump(sop))
    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "acme.yaml").write_text("max_refund: 80\n")
    (tmp_path / "params" / "globex.yaml").write_text("max_refund: 20\n")
    with pytest.raises(SopError) as err:
        load_sop(tmp_path)
    (problem,) = err.value.problems
    assert str(problem) == (
        f"error: {tmp_path / 'sop.yaml'}:1: -: params/acme.yaml (and 1 more) would never be "
        "read: the SOP names no input field to key parameter files on; add "
        "`params_by: <input field>` (input fields: customer, order_id)"
    )
    (tmp_path / "sop.yaml").write_text(yaml.safe_dump({**sop, "params_by": "customer"}))
    assert load_sop(tmp_path).params_by == "customer"
