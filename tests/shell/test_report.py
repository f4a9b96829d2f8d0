"""The terminal alarm table: one line per alarm at any width, identifiers whole or marked."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from sopgraph.report import alarm_table, fit, status_of

ROWS = [
    {
        "alarm": "ALM-002278", "site": "DFW7", "type": "station_idle", "status": "done",
        "root causes": ["rc_chutes_full", "rc_quadrant_backed_up", "rc_robot_fault",
                        "rc_sorter_jam", "rc_sorter_throughput_low"],
        "actions": ["act_dispatch_jam_clear", "act_open_maintenance_ticket",
                    "act_open_overflow_chutes", "act_sorter_restart"],
        "path taken": ["obs_station_idle", "rc_quadrant_backed_up", "rc_robot_fault"] * 5,
        "ms": "245", "truth": "✔",
    },
    {
        "alarm": "ALM-002281", "site": "ONT8", "type": "label_print_failure", "status": "done",
        "root causes": ["rc_label_stock_low"], "actions": ["act_replace_label_roll"],
        "path taken": ["obs_label_fail_high", "rc_label_stock_low"], "ms": "99", "truth": "✘",
    },
]  # fmt: skip


def _render(rows, width: int) -> list[str]:
    out = io.StringIO()
    Console(file=out, width=width, force_terminal=False, color_system=None).print(
        alarm_table(rows, width)
    )
    return out.getvalue().rstrip("\n").splitlines()


@pytest.mark.parametrize("width", [60, 80, 100, 120, 160, 220])
def test_one_line_per_alarm_within_the_width(width):
    lines = _render(ROWS, width)
    assert len(lines) == 1 + len(ROWS), lines  # the header, then one line per alarm
    assert all(len(line.rstrip()) <= width for line in lines), lines
    assert lines[1].startswith("ALM-002278") and lines[2].startswith("ALM-002281")


def test_identifiers_stay_whole_from_100_columns():
    for width in (100, 120, 220):
        text = "\n".join(_render(ROWS, width))
        assert "…" not in text, text
        assert "rc_label_stock_low" in text and "act_replace_label_roll" in text
        assert "+" in text  # what does not fit is counted, not cut


def test_wide_terminals_get_the_type_and_the_path():
    narrow, wide = _render(ROWS, 80)[0], _render(ROWS, 220)[0]
    assert "path taken" not in narrow and "type" not in narrow
    assert "path taken" in wide and "type" in wide
    assert "status" not in wide  # every run is done: nothing to tell apart


def test_fit_keeps_whole_items_and_counts_the_rest():
    items = ["rc_robot_fault", "rc_sorter_jam", "rc_chutes_full"]
    assert fit(items, 100) == "rc_robot_fault, rc_sorter_jam, rc_chutes_full"
    assert fit(items, 32) == "rc_robot_fault, rc_sorter_jam +1"
    assert fit(items, 20) == "rc_robot_fault +2"
    # only a first item wider than the column is shortened, and marked
    assert fit(["act_open_maintenance_ticket"], 12) == "act_open_ma…"
    assert fit(["act_open_maintenance_ticket", "act_x"], 12) == "act_open… +1"
    assert fit([], 10) == "-"


def test_status_shows_fields_a_result_adds():
    from pydantic import BaseModel

    class Result(BaseModel):  # a run result with an outcome field this module does not know
        status: str
        path: list[str] = []
        loop_exhausted: bool = False
        unmatched: list[str] = []

    assert status_of(Result(status="done")) == "done"
    assert status_of(Result(status="unresolved", loop_exhausted=True, unmatched=["x"])) == (
        "unresolved, loop_exhausted, unmatched: ['x']"
    )


def test_a_run_prints_what_tools_servers_and_models_wrote_escaped():
    from sopgraph.report import format_run
    from sopgraph.runtime.runner import RunResult

    forged = "\x1b[2K\r\x1b[32mcontained 99/99\x1b[0m\x07\u2028\u202e\ud800\nfake line"
    result = RunResult(
        thread_id="t1", sop_id="s", status="unresolved",
        trail=[
            {"node": "obs_a", "kind": "observation", "status": "error", "executor": "tool",
             "error": f"McpError: {forged}"},
            {"node": "obs_b", "kind": "observation", "status": "decided", "verdict": "true",
             "executor": "codeact", "observed": forged},
        ],
        actions=[{"node": "act_c", "status": "executed", "by": forged}],
        unresolved={"obs_a": f"tool failed: {forged}"},
    )  # fmt: skip
    text = format_run(result)
    assert len(text.splitlines()) == 5  # the header, two steps, the action, the unresolved node
    assert not [c for c in text if c in "\x1b\r\x07\u2028\u202e" or "\ud800" <= c <= "\udfff"]
    assert "\\x1b[2K\\r\\x1b[32mcontained 99/99" in text and "\\nfake line" in text
    text.encode("utf-8")
