"""The HTML report: per alarm outcome, the path drawn at a readable size, site parameters in the
node texts, thresholds in the SOP's units; and a real browser renders it."""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from sop_factory import make_sop

from sopgraph.graphs.loader import load_sop
from sopgraph.html_report import (
    observed_with_unit,
    render_report,
    threshold_with_unit,
    write_report,
)
from sopgraph.runtime.runner import Session
from sopgraph.tools.params import ParamStore

SHOOT = Path(__file__).resolve().parents[2] / "docs" / "screenshot.py"
SOP = {
    "id": "dock",
    "title": "Dock triage",
    "params": {"idle_pct_threshold": 25, "age_max_days": 3, "spread_min": 25},
    "params_by": "site",
    "input": {"site": {"type": "string"}},
    "entry": {"station_idle": ["obs_idle"]},
    "nodes": {
        "obs_idle": {"kind": "observation",
                     "text": "The station was idle more than {idle_pct_threshold}% of the time.",
                     "next": {"true": ["rc_fault", "rc_old_part"], "false": ["act_close"],
                              "no_data": ["obs_spread"]}},
        "obs_spread": {"kind": "observation", "next": {"true": ["act_close"]},
                       "text": "At least {spread_min} stations were idle over {idle_pct_threshold}%."},
        "rc_fault": {"kind": "root_cause", "text": "The robot is in fault.",
                     "next": {"true": ["act_ticket"], "false": ["far_away"]}},
        "rc_old_part": {"kind": "root_cause", "text": "The part is older than {age_max_days} days.",
                        "next": {"true": ["act_swap"]}},
        "far_away": {"kind": "constraint", "text": "never reached", "next": {"true": ["act_far"]}},
        "act_ticket": {"kind": "action", "text": "Open a ticket."},
        "act_swap": {"kind": "action", "text": "Swap the part."},
        "act_close": {"kind": "action", "text": "Close the alarm."},
        "act_far": {"kind": "action", "text": "Two steps off the path."},
    },
}  # fmt: skip
TOOLS = {
    "obs_idle": "t = ctx.params['idle_pct_threshold']\n"
    "return Verdict(value=True, observed=45.0, threshold=t,"
    " explanation=f'idle 45.0% of the time (above {t}%)')",
    "rc_fault": "return Verdict(value=True, observed={'state': 'fault'}, threshold='fault')",
    "rc_old_part": "return Verdict(value=False, observed={'part': 'P1', 'age_days': 1.5},"
    " threshold=ctx.params['age_max_days'])",
}


@pytest.fixture
def report_inputs(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    root = make_sop(tmp_path / "sop", SOP, TOOLS)
    (root / "params").mkdir()
    (root / "params" / "DFW7.yaml").write_text("idle_pct_threshold: 30\n")
    sop = load_sop(root)
    return root, sop, ParamStore(sop, root).for_key("DFW7")


async def _runs(root, params) -> list[dict]:
    async with Session(root, mcp=False, checkpoint="memory") as s:
        result = await s.run({"type": "station_idle", "site": "DFW7"}, thread_id="a1")
    return [{"alarm_id": "ALM-1", "site": "DFW7", "type": "station_idle", "ms": 12.0,
             "correct": True, "result": result, "params": params}]  # fmt: skip


async def test_report_shows_outcome_site_parameters_and_units(report_inputs):
    root, sop, params = report_inputs
    page = render_report(sop, await _runs(root, params), {"alarms": 1}, "Dock report")
    overview = page.split("<section")[0]
    for shown in ("ALM-1", "station_idle", "DFW7", "rc_fault", "act_ticket", "done"):
        assert shown in overview, shown
    assert page.count("<section class=alarm") == 1
    # the node text and the threshold use the site's value, in the SOP text's unit
    assert "more than 30% of the time" in page and "more than 25%" not in page
    assert ">30%</td>" in page and ">3 days</td>" in page
    # observed in the threshold's unit, beside it: a percent, and an age in days
    assert "<td class=obs>45%</td>" in page and "<td class=obs>part P1; age 1.5 days</td>" in page
    assert "idle 45.0% of the time (above 30%)" in page  # the tool's words, in the SOP's unit
    if shutil.which("dot"):
        drawing = page.split("<div class=drawing>")[1].split("</div>")[0]
        assert drawing.startswith("<svg") and "rc_fault" in drawing
        assert "far_away" in drawing and "act_swap" in drawing  # untaken, one step away
        assert "act_far" not in drawing and "act_close" in drawing  # not two steps away


def test_threshold_unit_comes_from_the_sop_text(report_inputs):
    _, sop, params = report_inputs
    assert threshold_with_unit(sop, "obs_idle", 30, params) == "30%"
    assert threshold_with_unit(sop, "obs_idle", 25, {}) == "25%"
    assert threshold_with_unit(sop, "rc_old_part", 3, params) == "3 days"
    assert threshold_with_unit(sop, "rc_fault", "fault", params) == "fault"
    assert threshold_with_unit(sop, "obs_idle", None, params) == ""
    # 25 stations or 25%? With the defaults both parameters are 25: no unit beats a wrong one
    assert threshold_with_unit(sop, "obs_spread", 25, {}) == "25"
    assert threshold_with_unit(sop, "obs_spread", 30, params) == "30%"


def test_a_derived_threshold_takes_the_unit_its_observation_is_measured_in():
    """ct_standby_capacity_safe compares the robots' capacity in units per hour with last
    hour's flow: no parameter has the flow's value, but the observation names its unit."""
    from sopgraph.examples import EXAMPLES

    sop = load_sop(EXAMPLES / "fc_alarm_triage")
    node = "ct_standby_capacity_safe"
    observed = {"running_others": 7, "capacity_uph": 10150, "flow_last_hour": 5119.0}
    assert threshold_with_unit(sop, node, 5119.0, {}, observed) == "5119 units per hour"
    assert threshold_with_unit(sop, node, 5119.0, {}) == "5119"  # nothing says which unit
    # an observation in no unit of the text's parameters leaves the number bare
    assert threshold_with_unit(sop, node, 3, {}, {"running_others": 3}) == "3"


def test_observed_is_shown_in_the_threshold_unit():
    assert observed_with_unit(67.2667, "%") == "67.27%"
    assert (
        observed_with_unit({"quadrant": "NE", "fill_pct": 85.2}, "%") == "quadrant NE; fill 85.2%"
    )
    assert observed_with_unit({"fill_pct": {"NW": 31.5, "SE": 90}, "high": ["SE"]}, "%") == (
        "fill: NW 31.5%, SE 90%; high: SE"
    )
    assert observed_with_unit({"robot": "R1", "age_days": None}, "days") == "robot R1; age none"
    assert observed_with_unit({"jams": 11}, None) == "jams 11"


def _ink(png: Path) -> float:
    """Share of pixels that are not near-white in an 8-bit RGB/RGBA PNG (no imaging library)."""
    data = png.read_bytes()
    pos, chunks, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, color = header[:4]
    assert depth == 8 and color in (2, 6), header
    bpp = 3 if color == 2 else 4
    raw, stride = zlib.decompress(b"".join(chunks)), width * bpp
    prev, ink, i = bytearray(stride), 0, 0
    for _ in range(height):
        kind, row = raw[i], bytearray(raw[i + 1 : i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = row[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if kind == 1:
                row[x] = (row[x] + a) & 255
            elif kind == 2:
                row[x] = (row[x] + b) & 255
            elif kind == 3:
                row[x] = (row[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[x] = (row[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        ink += sum(1 for x in range(0, stride, bpp) if min(row[x : x + 3]) < 200)
        prev = row
    return ink / (width * height)


@pytest.mark.slow
async def test_a_real_browser_renders_the_report(report_inputs, tmp_path):
    if shutil.which("chromium") is None:
        pytest.skip("Chromium is not installed (apt-get install chromium; make system-deps does)")
    root, sop, params = report_inputs
    report = write_report(tmp_path / "r.html", sop, await _runs(root, params), {}, "Dock")
    shots = {}
    for name, alarm in (("overview", None), ("alarm", "ALM-1")):
        out = tmp_path / f"{name}.png"
        args = [sys.executable, str(SHOOT), str(report), str(out), "--width", "900"]
        done = subprocess.run(
            args + (["--alarm", alarm] if alarm else []) + ["--height", "700"],
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        shots[name] = _ink(out)
    blank = tmp_path / "blank.html"
    blank.write_text("<!doctype html><title>blank</title>")
    subprocess.run([sys.executable, str(SHOOT), str(blank), str(tmp_path / "b.png"),
                    "--width", "900", "--height", "700"], check=True, timeout=180)  # fmt: skip
    assert _ink(tmp_path / "b.png") < 0.001  # the measure sees a blank page as blank
    assert shots["overview"] > 0.01 and shots["alarm"] > 0.02, shots
