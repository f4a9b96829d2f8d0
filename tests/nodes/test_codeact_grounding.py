"""The host holds a CodeAct answer to what the code printed."""

from __future__ import annotations

import json

from sopgraph.nodes.codeact_grounding import ground, printed_numbers, states_percent

ANSWER = '{"observed": 0.43, "comparison": ">", "threshold": 25, "explanation": "x"}'


def test_printed_numbers_are_the_numbers_not_ids_or_words():
    assert printed_numbers("[{'avg(x)': 0.82, 'n': 3}] ST03 -1.5 true 2e-3") == [
        0.82, 3.0, -1.5, 0.002,
    ]  # fmt: skip
    assert printed_numbers("true") == [] and printed_numbers("") == []


def test_a_value_printed_nowhere_gives_way_to_the_one_printed():
    text, notes = ground(ANSWER, "48.666667\n", "print(idle)", percent=True)
    assert json.loads(text)["observed"] == 48.666667
    assert notes == ["observed 0.43 was printed nowhere: the number printed, 48.6667, is taken"]
    # printed (to the shown precision): unchanged; several numbers printed: no way to choose
    assert ground(ANSWER, "0.4300001", "x", True) == (ANSWER, [])
    assert ground(ANSWER, "48.7 12.0", "x", True) == (ANSWER, [])
    # no measured answer, or no value: unchanged
    assert ground("ANSWER: true", "5", "x", True) == ("ANSWER: true", [])
    none = '{"observed": null, "comparison": ">", "threshold": 25}'
    assert ground(none, "5", "x", True) == (none, [])


def test_a_ratio_against_a_percentage_is_read_as_a_percentage():
    answer = '{"observed": 0.87925, "comparison": ">", "threshold": 80, "explanation": "x"}'
    code = "r1 = q(sql='SELECT avg(belt_ne_fill_ratio) FROM conveyance_5m')"
    text, notes = ground(answer, "0.8282 0.87925", code, percent=True)
    assert json.loads(text)["observed"] == 87.925 and "a ratio (0-1)" in notes[0]
    # not a percentage check, no ratio read, or a value already scaled: unchanged
    assert ground(answer, "0.87925", code, percent=False) == (answer, [])
    assert ground(answer, "0.87925", "r1 = q(metric='x_pct')", percent=True) == (answer, [])
    scaled = answer.replace("0.87925", "87.925")
    assert ground(scaled, "87.925", code, percent=True) == (scaled, [])


def test_a_percentage_is_read_from_the_check_text():
    assert states_percent("more than 80% full") and states_percent("below 70 % of plan")
    assert not states_percent("at least 3 jams in the last 30 minutes")
