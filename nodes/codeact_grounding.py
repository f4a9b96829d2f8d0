"""The host's check of a CodeAct answer against what the code printed: the value measured is
a number the code printed, in the unit the check states.

Measured on the live held-out runs (docs/agents.md): code that compared the value itself and
printed `true` left the model nothing to report, and it wrote an `observed` it had never seen
(0.43 for an idle share printed nowhere; the host then decided `false` where the code had found
`true`); code that read a fill ratio (0.88) answered it against "more than 80%". So the host
asks once for the value when a step printed no number, takes the one number printed when the
answer names another, and reads a ratio (a name with `ratio` in it, Prometheus's convention for
0-1) against a percentage as a percentage.

Example:
    >>> printed_numbers("[{'avg(x)': 0.82}] 40.0 true")
    [0.82, 40.0]
    >>> ground('{"observed": 0.43, "comparison": ">", "threshold": 25}', "48.7", "x", True)[0]
    '{"observed": 48.7, "comparison": ">", "threshold": 25}'
"""

from __future__ import annotations

import ast
import json
import math
import re

PRINT_VALUE = (
    "Your code printed no number. The host compares the value your code measures with the "
    "check's threshold: print that value (a number), not a verdict or a sentence."
)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE]-?\d+)?(?![\w])")
_RATIO = re.compile(r"ratio", re.I)
_PERCENT = re.compile(r"\d\s*%")
_NOTHING = re.compile(r"\bNone\b|\bnull\b|\[\]")
NO_RECORD = "nothing on record: not within the window"


def answer_data(text: str) -> dict | None:
    """The JSON object an answer ``text`` holds (from its first ``{``), or None."""
    start = (text or "").find("{")
    try:
        data, _ = json.JSONDecoder().raw_decode(text[start:]) if start >= 0 else (None, 0)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def printed_numbers(stdout: str) -> list[float]:
    """The numbers a step printed, in order (a station id's digits, ``ST03``, are not one)."""
    return [float(x) for x in _NUMBER.findall(stdout or "")]


def states_percent(text: str) -> bool:
    """Whether the check's text states its threshold as a percentage ("more than 80%")."""
    return bool(_PERCENT.search(text or ""))


def ground(text: str, stdout: str, code: str, percent: bool) -> tuple[str, list[str]]:
    """The answer ``text`` with its ``observed`` made to agree with what the code printed, and
    a note for each change: a value printed nowhere becomes the one number printed (when
    exactly one was); a ratio read by ``code`` (0 to 1) against a ``percent`` check becomes a
    percentage. ``text`` unchanged when it holds no measured answer."""
    data = answer_data(text)
    if data is None or not isinstance(data.get("observed"), int | float):
        return text, []
    observed, notes = float(data["observed"]), []
    printed = printed_numbers(stdout)
    seen = any(math.isclose(observed, p, rel_tol=1e-3, abs_tol=1e-6) for p in printed)
    if printed and not seen and len(set(printed)) == 1:
        notes.append(f"observed {observed:g} was printed nowhere: the number printed, "
                     f"{printed[0]:g}, is taken")  # fmt: skip
        observed = printed[0]
    if percent and _RATIO.search(code or "") and 0 <= observed <= 1:
        notes.append(f"observed {observed:g} is a ratio (0-1) and the check a percentage: "
                     f"{observed * 100:g} is taken")  # fmt: skip
        observed = observed * 100
    if not notes:
        return text, []
    data["observed"] = round(observed, 6)
    return json.dumps(data), notes


def value_assignments(body: list[ast.stmt], augmented: bool = True) -> list[int]:
    """The positions of ``body``'s statements that set ``value`` (``value = ...``; with
    ``augmented``, ``value *= ...`` too)."""
    kinds = ast.Assign | ast.AugAssign if augmented else ast.Assign
    return [i for i, st in enumerate(body) if isinstance(st, kinds)
            and any(isinstance(t, ast.Name) and t.id == "value"
                    for t in (st.targets if isinstance(st, ast.Assign) else [st.target]))]  # fmt: skip


def hold_value(code: str) -> tuple[str, list[str]]:
    """``code`` with ``print(value)`` right after its last top-level ``value = ...`` (unless it
    prints it there already), and a note: the value shows even when a later line fails.
    Measured: code that read 3.14% and then failed on a verdict of its own
    (``camera_alarm_pct`` undefined) printed nothing, and the model answered the 1.95 of a
    demonstration."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code, []
    body = tree.body
    at = value_assignments(body)
    if not at:
        return code, []
    i = at[-1]
    after = body[i + 1] if i + 1 < len(body) else None
    if after is not None and ast.unparse(after).replace(" ", "") == "print(value)":
        return code, []
    lines = code.split("\n")
    end = body[i].end_lineno or body[i].lineno
    lines.insert(end, "print(value)")
    return "\n".join(lines), [
        f"print(value) added after line {end}: the value shows even if a later line fails"
    ]


MARK = "__sopgraph_value__"
# run after the model's code (from level 4): what ``value`` holds when the code ends
VALUE_CAPTURE = f"\ntry:\n    print({MARK!r}, repr(value))\nexcept Exception:\n    pass\n"


def split_value(stdout: str) -> tuple[str, float | None]:
    """``stdout`` without ``VALUE_CAPTURE``'s line, and the number ``value`` held at the end
    of the code (None when it held none, or no number)."""
    kept, value = [], None
    for line in (stdout or "").splitlines(keepends=True):
        if line.startswith(MARK + " "):
            try:
                found = ast.literal_eval(line[len(MARK) + 1 :].strip())
            except (ValueError, SyntaxError):
                found = None
            ok = isinstance(found, int | float) and not isinstance(found, bool)
            value = float(found) if ok and math.isfinite(found) else None
            continue
        kept.append(line)
    return "".join(kept), value


def hold_observed(text: str, value: float) -> tuple[str, list[str]]:
    """The answer ``text`` with its ``observed`` made the ``value`` the code ended with (or
    that value as a percentage, ``value * 100``, when the answer says so), and a note. The
    code measures; the answer reports. Measured (a dev run on alarm ALM-001453): code that
    computed 0 jams, the counter's increase, and printed it last, was answered with 5, the
    counter's reading printed in its rows above."""
    data = answer_data(text)
    if data is None or not isinstance(data.get("observed"), int | float):
        return text, []
    observed = float(data["observed"])
    if any(math.isclose(observed, v, rel_tol=1e-3, abs_tol=1e-6) for v in (value, value * 100)):
        return text, []
    data["observed"] = round(value, 6)
    return json.dumps(data), [f"observed {observed:g} is not the value the code ended with: "
                              f"{value:g} is taken"]  # fmt: skip


UNPRINTED = (
    "Your answer's observed value, {observed:g}, is no number your code printed. Write code "
    "that computes the check's value from the data and prints it (`print(value)`); then answer."
)


def unprinted(text: str, stdout: str) -> float | None:
    """The answer's ``observed`` when no step printed it (nor it as a percentage of a printed
    ratio, or the reverse), else None (from level 4, the answer is then sent back once for
    code that prints it). Measured (alarms 133-156): code that printed four quadrants' fill
    ratios (0.27, 0.27, 0.28) was answered with 0.97, printed nowhere, and decided "above 80%"."""
    data = answer_data(text)
    observed = data.get("observed") if data is not None else None
    if not isinstance(observed, int | float) or isinstance(observed, bool):
        return None
    for p in printed_numbers(stdout):
        if any(
            math.isclose(observed, v, rel_tol=1e-3, abs_tol=1e-6) for v in (p, p * 100, p / 100)
        ):
            return None
    return float(observed)


def unmeasured(text: str) -> tuple[str, list[str]]:
    """The answer ``text`` with no ``observed`` (so ``no_data``), and a note: after code was
    asked for (``UNPRINTED``), it still reports a number no step printed. Measured (a dev run
    on alarm ALM-001426): code whose query failed twice was answered with 6, the check's own
    threshold, before and after it was sent back."""
    data = answer_data(text)
    if data is None or data.get("observed") is None:
        return text, []
    was = data["observed"]
    data["observed"] = None
    return json.dumps(data), [f"observed {was} is still no number the code printed: no value"]


def no_record(text: str, stdout: str) -> tuple[str, list[str]]:
    """For an age check ("the lens was cleaned within the last 8 hours"): when the code found
    nothing (it printed ``None`` or no rows, and no number), the event is not on record, so not
    within the window: the answer ``text`` becomes ``false``, with a note. Measured: code that
    found no cleaning printed ``None``; the model answered ``observed: 0`` (0 hours ago), and
    the host decided "cleaned recently" for a lens never cleaned."""
    if printed_numbers(stdout) or not _NOTHING.search(stdout or ""):
        return text, []
    answer = {"verdict": "false", "observed": None, "explanation": NO_RECORD}
    return json.dumps(answer), [f"the code found nothing ({NO_RECORD}): false"]
