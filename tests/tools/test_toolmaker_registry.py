"""A made tool registered with its figures and record, promoted with a diff, reverted; the CLI."""

from __future__ import annotations

import json

import pytest
import pytest_asyncio
from dspy.utils import DummyLM
from toolmaker_sop import (
    HELD_OUT,
    NO_WINDOW,
    NODE,
    RIGHT,
    TRAIN,
    diagnosis,
    make_toy_sop,
    toy_session,
)

from sopgraph.cli import main
from sopgraph.graphs.executors import ToolContext
from sopgraph.tools.commands import tools_list, tools_promote, tools_revert
from sopgraph.tools.registry import Registry
from sopgraph.tools.toolmaker.pipeline import make_tool, register, score_heldout
from sopgraph.tools.toolmaker.record import MakeRecord

shared_loop = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def session(tmp_path_factory):
    async with toy_session(tmp_path_factory.mktemp("toy"), model="dummy-1.5b") as s:
        yield s


@shared_loop
async def test_register_then_promote_with_diff_then_revert(session):
    lm = DummyLM([NO_WINDOW, diagnosis(), RIGHT])
    deps = session.deps(NODE)
    deps.maker.lm = deps.reflector.lm = lm
    record = await make_tool(deps, TRAIN, config="sop+r", rounds=3)
    record = await score_heldout(deps, record, HELD_OUT)
    registry = Registry(session.sop_dir / "tools")
    version = register(record, registry)
    assert version == 2
    entry = registry.entry(NODE)
    assert entry.active == 1  # registered, not promoted
    info = entry.version(2)
    assert info.author == "tool-maker:dummy-1.5b"
    assert (info.train_pass, info.eval_pass) == (1.0, 1.0)
    assert info.tokens == record.tokens and info.seconds == record.seconds > 0
    saved = MakeRecord.model_validate_json((registry.lib_dir / NODE / info.record).read_text())
    assert [r.passed for r in saved.rounds] == [3, 6] and saved.rounds[0].diagnosis
    listed = json.loads(tools_list(session.sop_dir, as_json=True))
    row = next(r for r in listed["tools"] if r["node"] == NODE)
    assert row["versions"][1]["record"] == "v2.make.json"

    shown = tools_promote(session.sop_dir, NODE, 2)
    assert "active: v1 by human" in shown
    assert "new:    v2 by tool-maker:dummy-1.5b" in shown and "train 100%, held-out 100%" in shown
    assert "+++ toy_belt/v2.py" not in shown and f"+++ {NODE}/v2.py" in shown
    assert "+QUERY = " in shown and shown.endswith(f"{NODE}: v2 is active (was v1)")
    tool = registry.resolve(NODE)
    assert (tool.version, tool.author) == (2, "tool-maker:dummy-1.5b")
    # promoted, it runs in production's way: in-process, through the open MCP pool
    ctx = ToolContext(
        node_id=NODE, text="", params={"fill_max_pct": 50}, parents={},
        input={"site": "S7", "timestamp": "2026-01-01T10:00:00Z"}, run_id="t", mcp=session.pool,
    )  # fmt: skip
    verdict = await tool.fn(ctx.input, ctx)
    assert (verdict.value, verdict.observed) == ("true", 80.0)
    assert tools_revert(session.sop_dir, NODE) == f"{NODE}: reverted to v1 (was v2)"
    assert registry.resolve(NODE).author == "human"


def test_a_record_without_a_runnable_candidate_is_not_registered(tmp_path):
    record = MakeRecord(node=NODE, config="sop", seed=0, model="m")
    with pytest.raises(Exception, match="no runnable candidate"):
        register(record, Registry(tmp_path / "tools"))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["tools", "make", "{sop}", "obs_nope", "--cases", "{cases}"], "no decision node obs_nope"),
        (["tools", "make", "{sop}", NODE, "--cases", "{sop}/none"], "--cases"),
        (["tools", "make", "{sop}", NODE, "--cases", "{cases}"], "the tool-maker needs a model"),
        (
            ["tools", "make", "{sop}", "rc_other", "--cases", "{cases}"],
            "no labeled cases for rc_other",
        ),
        (["tools", "make", "{sop}", NODE, "--config", "sop+x"], "invalid choice"),
        (["tools", "make", "{sop}", NODE, "--rounds", "99", "--cases", "{cases}"], "--rounds 99"),
        (["eval", "toolmaker", "{sop}", "--configs", "sop,sop+q", "--cases", "{cases}"], "sop+q"),
        (["eval", "toolmaker", "{sop}/missing"], "no such SOP"),
        (
            [
                "eval",
                "toolmaker",
                "{sop}",
                "--cases",
                "{cases}",
                "--nodes",
                NODE,
                "--program",
                "{sop}/nope.json",
            ],
            "nope.json: no saved tool-maker program",
        ),  # fmt: skip
        (["tools", "optimize-maker", "{sop}"], "no labeled cases known for this SOP"),
        (
            ["tools", "optimize-maker", "{sop}", "--cases", "{cases}"],
            "the tool-maker needs a model",
        ),
    ],
)
def test_cli_mistakes_are_one_line_errors(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.delenv("SOPGRAPH_MODEL", raising=False)
    monkeypatch.delenv("SOPGRAPH_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)  # no ./sopgraph.toml
    sop = make_toy_sop(tmp_path / "toy_belt")
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / f"{NODE}.jsonl").write_text(
        "".join(
            json.dumps({**c.model_dump(), "node": NODE, "split": "train"}) + "\n" for c in TRAIN
        )
    )
    try:
        code = main([a.format(sop=sop, cases=cases) for a in argv])
    except SystemExit as exc:  # argparse's own errors exit, as everywhere in the CLI
        code = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) <= 2 and err[-1].startswith("error:") and message in err[-1]


def test_a_node_named_twice_is_made_once(tmp_path):
    from sopgraph.commands.toolmaker import _nodes

    sop = make_toy_sop(tmp_path / "toy_belt")
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / f"{NODE}.jsonl").write_text(
        json.dumps({**TRAIN[0].model_dump(), "node": NODE, "split": "train"}) + "\n"
    )
    assert _nodes(sop, [NODE, NODE], cases) == [NODE]
