"""sopgraph audit: each injected violation type found on known conversations, none on a
compliant one, the real ABCD samples' findings, precision and recall on a small generated set
against hand-computed counts, and the next action of a prefix. Real CLI, real scenario MCP
server over stdio, compiled tools; conversation conditions from labels (the scripted judge)."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest

from sopgraph.cli import main
from sopgraph.evals.dialogue_cases import balanced_cases
from sopgraph.evals.dialogue_eval import inject, precision_recall, score_audit
from sopgraph.graphs.loader import load_sop
from sopgraph.runtime.audit import audit, next_action
from sopgraph.runtime.dialogue import Conversation, Replayer, Turn

ROOT = Path(__file__).resolve().parents[2]
ABCD = ROOT / "examples" / "abcd"
UPGRADE = ABCD / "manage_upgrade"
SAMPLE = ABCD / "data" / "abcd_sample.json"
LABELS = ROOT / "tests" / "data" / "abcd_audit" / "conditions.json"
SCENARIOS = json.loads((ABCD / "data" / "scenarios.json").read_text())
WANTS = "the customer wants to upgrade to overnight shipping"
NOT_SHIPPED = "the customer says the shipping status is 'Order Received' (not yet shipped)"


@pytest.fixture(autouse=True)
def _home(monkeypatch, tmp_path):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SOPGRAPH_MODEL", raising=False)


def upgrade_conv(cid: str, buttons: list[str], level: str = "gold_1") -> Conversation:
    """A manage_upgrade conversation: the customer asks, says 'Order Received', then the
    agent's actions in the given order."""
    turns = [
        Turn(0, "customer", "i want overnight shipping"),
        Turn(1, "customer", "order received"),
    ]
    for b in buttons:
        turns.append(Turn(len(turns), "action", f"[{b}]", b))
    return Conversation(cid, SCENARIOS[level], turns, {WANTS: 0, NOT_SHIPPED: 1})


COMPLIANT = ["pull-up-account", "verify-identity", "shipping-status", "membership", "update-order"]


def run_audits(convs: list[Conversation]) -> list:
    async def go():
        async with Replayer(UPGRADE, convs) as r:
            return [await audit(r, c) for c in convs]

    return asyncio.run(go())


def kinds(report) -> list[tuple[str, int | None, str | None]]:
    return [(f.kind, f.turn, f.step) for f in report.violations]


def test_each_violation_type_is_found_and_a_compliant_conversation_has_none():
    convs = [
        upgrade_conv("ok", COMPLIANT),
        upgrade_conv("drop", [b for b in COMPLIANT if b != "membership"]),
        upgrade_conv(
            "reorder",
            ["pull-up-account", "shipping-status", "verify-identity", "membership", "update-order"],
        ),  # fmt: skip
        upgrade_conv("insert", [*COMPLIANT[:3], "search-faq", *COMPLIANT[3:]]),
        # a gold member treated as the others who decline the $20 fee
        upgrade_conv("swap", [*COMPLIANT[:4], "end-conversation"]),
    ]
    ok, drop, reorder, insert, swap = run_audits(convs)
    assert ok.violations == [] and [f.kind for f in ok.findings] == ["ok"] * 5
    assert kinds(drop) == [("missing", None, "membership")]
    assert kinds(reorder) == [("out_of_order", 4, "verify-identity")]
    assert kinds(insert) == [("not_called_for", 5, None)]
    assert kinds(swap) == [("membership", 6, "end-conversation-declined"),
                           ("missing", None, "update-order")]  # fmt: skip
    assert "silver, bronze, guest members, not gold" in swap.violations[0].detail
    # the data condition was decided by the compiled tool, the conversation ones by the judge
    by = {d.node: d.executor for d in ok.decisions}
    assert by == {"wants-upgrade": "judge", "not-yet-shipped": "judge", "member-gold": "tool"}


def test_same_actions_are_compliant_for_a_silver_member_who_pays():
    conv = upgrade_conv("silver", COMPLIANT, "silver_recent")
    conv.conditions["the customer agrees to charge $20 to the credit card on the account"] = 1
    (report,) = run_audits([conv])
    assert report.violations == []


def test_cli_audits_a_file_and_prints_json(tmp_path, capsys):
    path = tmp_path / "conv.json"
    path.write_text(json.dumps(upgrade_conv("c1", COMPLIANT[:-1]).to_abcd()))
    assert main(["audit", str(UPGRADE), str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["violations"] == 1 and out["findings"][-1]["kind"] == "missing"
    assert main(["audit", str(UPGRADE), str(path)]) == 0
    assert "MISSING update-order" in capsys.readouterr().out


def test_real_abcd_conversations(capsys):
    base = ["audit", "--convo"]
    # 3592 (return_size, bronze): ABCD's scenario has no date, so the 90-day window is open
    assert main([*base[:1], str(ABCD / "return_size"), str(SAMPLE), "--convo", "3592",
                 "--conditions", str(LABELS), "--json"]) == 0  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert out["stopped"].startswith("bronze-within-90-days: no data")
    assert [(f["kind"], f["button"]) for f in out["findings"]] == [
        ("ok", "pull-up-account"), ("ok", "validate-purchase"), ("unchecked", "enter-details"),
        ("unchecked", "notify-team"), ("missing", "membership")]  # fmt: skip
    # with a date past 90 days: the item is in its original packaging, so the return is due
    assert main([*base[:1], str(ABCD / "return_size"), str(SAMPLE), "--convo", "3592",
                 "--conditions", str(LABELS), "--today", "2020-03-01", "--json"]) == 0  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    found = [(f["kind"], f["button"]) for f in out["findings"] if f["kind"] != "ok"]
    assert found == [("not_called_for", "notify-team"), ("missing", "membership"),
                     ("missing", "update-order")]  # fmt: skip
    for intent, cid in (("refund_status", "9489"), ("timing", "3695")):
        sop = ROOT / "tests" / "data" / "abcd_audit" / intent
        assert main(["audit", str(sop), str(SAMPLE), "--convo", cid, "--conditions", str(LABELS),
                     "--json"]) == 0  # fmt: skip
        out = json.loads(capsys.readouterr().out)
        assert out["violations"] == 0 and len(out["findings"]) in (2, 3)


def test_user_errors_are_one_line(capsys, tmp_path):
    assert main(["audit", str(UPGRADE), str(SAMPLE)]) == 2
    assert capsys.readouterr().err.strip().endswith("pick one with --convo")
    # no labels and no model: say how to give either
    assert main(["audit", str(ABCD / "return_size"), str(SAMPLE), "--convo", "3592",
                 "--judge", "labels"]) == 2  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--conditions FILE or --judge model" in err
    assert main(["audit", str(tmp_path), str(SAMPLE)]) == 2
    assert "no sop.yaml" in capsys.readouterr().err


def test_precision_recall_on_a_small_generated_set():
    """manage_upgrade, one case a path: 5 compliant conversations; drop, reorder and insert
    apply to the 4 with actions; swap to the 2 whose level changes the action (gold -> the
    declined $20 branch; a silver who declines -> gold's free upgrade), each also missing
    the replaced step: 6 missing labels, 4 out_of_order, 4 not_called_for, 2 membership."""
    sop = load_sop(UPGRADE)
    cases, infeasible = balanced_cases(sop, per_path=1, seed=0)
    assert len(cases) == 5 and infeasible == []
    items = [it for c in cases for it in inject(sop, c, random.Random(0))]
    assert sorted({it.injection for it in items}) == ["drop", "insert", "none", "reorder", "swap"]
    rows = asyncio.run(score_audit(str(UPGRADE), sop, items))
    table = precision_recall(rows)
    assert {
        k: table[k]["labels"] for k in ("missing", "out_of_order", "not_called_for", "membership")
    } == {  # fmt: skip
        "missing": 6,
        "out_of_order": 4,
        "not_called_for": 4,
        "membership": 2,
    }
    for kind in ("missing", "out_of_order", "not_called_for", "membership"):
        assert (table[kind]["precision"], table[kind]["recall"]) == (1.0, 1.0), kind
    assert table["compliant"] == {"conversations": 5, "clean": 5}


def test_precision_recall_arithmetic():
    rows = [
        {"injection": "drop", "labels": [{"kind": "missing"}, {"kind": "missing"}],
         "true_kinds": ["missing"], "false": [{"kind": "missing"}]},
        {"injection": "none", "labels": [], "true_kinds": [], "false": [{"kind": "membership"}]},
        {"injection": "drop", "labels": [{"kind": "missing"}], "true_kinds": ["missing"],
         "false": []},
    ]  # fmt: skip
    t = precision_recall(rows)
    assert (t["missing"]["tp"], t["missing"]["fp"], t["missing"]["fn"]) == (2, 1, 1)
    assert (t["missing"]["precision"], t["missing"]["recall"]) == (0.667, 0.667)
    assert t["membership"]["precision"] == 0.0 and t["membership"]["recall"] is None
    assert t["compliant"] == {"conversations": 1, "clean": 0}


def test_cli_inject_writes_labelled_conversations(tmp_path, capsys):
    out = tmp_path / "inj"
    assert main(["audit", "inject", str(UPGRADE), "--out", str(out), "--json"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert table["membership"]["labels"] == 2 and table["membership"]["recall"] == 1.0
    files = sorted((out / "manage_upgrade").glob("*-swap.json"))
    record = json.loads(files[0].read_text())
    assert record["injection"] == "swap" and record["labels"][0]["kind"] == "membership"
    # the written file is an ABCD conversation the audit reads back
    assert main(["audit", str(UPGRADE), str(files[0]), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["findings"]
    assert any(f["kind"] == "membership" for f in found)


def test_next_action_follows_every_generated_conversation():
    sop = load_sop(UPGRADE)
    cases, _ = balanced_cases(sop, per_path=1)

    async def go():
        convs = [c.conversation for c in cases]
        got = []
        async with Replayer(UPGRADE, convs) as r:
            for conv in convs:
                for t in conv.actions:
                    nxt = await next_action(r, conv, t.index)
                    got.append((nxt.button, t.button))
                end = await next_action(r, conv, len(conv.turns))
                got.append((end.button, None))
        return got

    got = asyncio.run(go())
    # 19 action turns (4 on the shipped path, 5 on each of the three others) and 5 ends
    assert len(got) == 19 + 5 and all(a == b for a, b in got)


def test_next_action_cli_on_a_real_prefix(capsys):
    args = ["audit", "next", str(ABCD / "return_size"), str(SAMPLE), "--convo", "3592",
            "--conditions", str(LABELS), "--today", "2020-03-01"]  # fmt: skip
    assert main([*args, "--turn", "23", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["reached"], out["button"]) == ("enter-details", "update-order")
    # before the customer gives the reason (turn 7), the intent's condition does not hold yet
    assert main([*args, "--turn", "6", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["button"] is None
    assert out["decided_by"] == [{"node": "wants-return", "verdict": "false", "executor": "judge"}]
    assert main([*args, "--turn", "12"]) == 0
    assert "next: validate-purchase" in capsys.readouterr().out
