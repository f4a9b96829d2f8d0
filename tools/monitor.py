"""The monitoring agent: statistical drift checks over the invocation log, per tool version.

Each tool version's first invocations (those of the first ``reference`` runs) are its
reference. Every later invocation closes a window of the version's last ``window`` calls,
which is compared with the reference: exception rate, no-data rate and true rate (binomial
tails), result types never seen in the reference, and observed values beyond the reference's
range at a tenfold scale change (an exact exchangeability bound: ``k`` of ``w`` new values
above all ``n`` old ones has probability C(w, k) / C(n + w, k)). A check flags when its
p-value is below ``alpha``. Deterministic: the same log gives the same report.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field


class Flag(BaseModel):
    """One tool version flagged by one check, with its evidence."""

    tool: str
    version: int | None
    check: str
    since_run: int  # the first run of the window that flagged
    flagged_at_run: int
    p_value: float
    what_changed: str
    reference: dict[str, Any]
    window: dict[str, Any]
    examples: list[dict[str, Any]] = Field(default_factory=list)


class Report(BaseModel):
    log: str
    runs: int
    invocations: int
    tool_versions: int
    reference_runs: int
    window: int
    alpha: float
    flags: list[Flag]


def binom_sf(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    return min(1.0, sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1)))


def exceed_p(k: int, w: int, n: int) -> float:
    """P(at least k of w exchangeable new values exceed all n reference values)."""
    return math.comb(w, k) / math.comb(n + w, k) if k else 1.0


def _signature(x: Any) -> str:
    """The shape of an observed value: its types, and its keys for objects."""
    if isinstance(x, dict):
        return "{" + ",".join(f"{k}:{_signature(v)}" for k, v in sorted(x.items())) + "}"
    if isinstance(x, list):
        return "[" + ",".join(sorted({_signature(v) for v in x})) + "]"
    if isinstance(x, bool) or x is None:
        return type(x).__name__
    return "number" if isinstance(x, int | float) else type(x).__name__


def _numbers(x: Any, path: str = "") -> dict[str, float]:
    if isinstance(x, dict):
        out: dict[str, float] = {}
        for k, v in x.items():
            out |= _numbers(v, f"{path}.{k}")
        return out
    if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x):
        return {path or "value": float(x)}
    return {}


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2


def load_invocations(log: Path, order: dict[str, int] | None) -> list[dict[str, Any]]:
    """Compiled-tool invocations, each with its run index (by ``order`` or by first run)."""
    con = sqlite3.connect(f"file:{log}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "SELECT id, run_id, tool, version, output, error, inputs FROM invocations "
            "WHERE executor = 'tool' ORDER BY id"
        ).fetchall()
    finally:
        con.close()
    seen: dict[str, int] = {}
    out = []
    for id_, run_id, tool, version, output, error, inputs in rows:
        if order is not None and run_id not in order:
            continue
        idx = order[run_id] if order is not None else seen.setdefault(run_id, len(seen))
        out.append({
            "id": id_, "run": idx, "run_id": run_id, "tool": tool, "version": version,
            "output": json.loads(output) if output else None, "error": error,
            "timestamp": _input_of(json.loads(inputs)).get("timestamp"),
        })  # fmt: skip
    out.sort(key=lambda r: (r["run"], r["id"]))
    return out


def _input_of(inputs: dict[str, Any]) -> dict[str, Any]:
    """The run input a logged call saw: ``{"input": ..., "params": ...}`` for the tool node,
    flat (``{"site", "timestamp"}``) in logs written before tools took the whole input."""
    inner = inputs.get("input")
    return inner if isinstance(inner, dict) else inputs


def _value(r: dict) -> str:
    if r["error"]:
        return "error"
    return (r["output"] or {}).get("value", "none")


def _example(r: dict) -> dict[str, Any]:
    out = r["output"] or {}
    return {
        "run": r["run"], "run_id": r["run_id"], "timestamp": r["timestamp"],
        "value": _value(r), "observed": out.get("observed"), "error": r["error"],
    }  # fmt: skip


def _checks(ref: list[dict], win: list[dict]) -> list[tuple[str, float, str, dict, dict, list]]:
    """(check, p, what changed, reference stats, window stats, anomalous window rows)."""
    n, w = len(ref), len(win)
    out = []
    for check, hit in (
        ("exceptions", lambda r: _value(r) == "error"),
        ("no_data", lambda r: _value(r) == "no_data"),
    ):
        k_ref, k = sum(map(hit, ref)), [r for r in win if hit(r)]
        p0 = (k_ref + 0.5) / (n + 1)
        p = binom_sf(len(k), w, p0)
        out.append((check, p, f"{check} rate {k_ref}/{n} -> {len(k)}/{w}",
                    {"rate": round(k_ref / n, 4)}, {"rate": round(len(k) / w, 4)}, k))  # fmt: skip
    decided_ref = [r for r in ref if _value(r) in ("true", "false")]
    decided = [r for r in win if _value(r) in ("true", "false")]
    if len(decided_ref) >= 20 and len(decided) >= w // 2:
        t_ref = sum(_value(r) == "true" for r in decided_ref)
        t = [r for r in decided if _value(r) == "true"]
        p0 = (t_ref + 0.5) / (len(decided_ref) + 1)
        up, down = binom_sf(len(t), len(decided), p0), 1 - binom_sf(len(t) + 1, len(decided), p0)
        p = min(1.0, 2 * min(up, down))
        odd = t if up < down else [r for r in decided if _value(r) == "false"]
        out.append(("verdicts", p, f"true rate {t_ref}/{len(decided_ref)} -> {len(t)}/{len(decided)}",
                    {"true_rate": round(t_ref / len(decided_ref), 4)},
                    {"true_rate": round(len(t) / len(decided), 4)}, odd))  # fmt: skip
    sig_ref = {_signature((r["output"] or {}).get("observed")) for r in decided_ref}
    novel = [r for r in decided if _signature((r["output"] or {}).get("observed")) not in sig_ref]
    if novel and len(decided_ref) >= 20:
        p = exceed_p(len(novel), w, len(decided_ref))
        sig = _signature((novel[-1]["output"] or {}).get("observed"))
        out.append(("result_type", p, f"observed shape {sig} never seen in {len(decided_ref)} reference calls",
                    {"shapes": sorted(sig_ref)[:5]}, {"new_shape": sig, "count": len(novel)}, novel))  # fmt: skip
    ref_vals: dict[str, list[float]] = defaultdict(list)
    for r in ref:
        for k, v in _numbers((r["output"] or {}).get("observed")).items():
            ref_vals[k].append(v)
    for key, vals in ref_vals.items():
        if len(vals) < 20:
            continue
        lo, hi, med = min(vals), max(vals), _median(vals)
        rows = [(r, _numbers((r["output"] or {}).get("observed")).get(key)) for r in win]
        rows = [(r, v) for r, v in rows if v is not None]
        if len(rows) < 3:
            continue
        wmed = _median([v for _, v in rows])
        above = [r for r, v in rows if v > hi]
        below = [r for r, v in rows if v < lo]
        if med > 0 and wmed > 0:
            scale = abs(math.log10(wmed / med))
        else:
            scale = 0.0 if wmed == med else math.inf
        if scale < 1:
            continue  # a tail event, not a change of unit or meaning
        odd = above if len(above) >= len(below) else below
        p = exceed_p(len(odd), len(rows), len(vals))
        out.append(("values", p, f"observed {key} median {med:.4g} -> {wmed:.4g} "
                    f"({len(odd)} of {len(rows)} beyond the reference range [{lo:.4g}, {hi:.4g}])",
                    {"median": med, "min": lo, "max": hi, "n": len(vals)},
                    {"median": wmed, "n": len(rows)}, odd))  # fmt: skip
    return out


def review(
    log: Path,
    order: dict[str, int] | None = None,
    *,
    reference: int = 300,
    window: int = 8,
    alpha: float = 1e-6,
) -> Report:
    """Review the log in windows per tool version; every check flags at most once."""
    rows = load_invocations(log, order)
    by_tool: dict[tuple[str, int | None], list[dict]] = defaultdict(list)
    for r in rows:
        by_tool[(r["tool"], r["version"])].append(r)
    flags: list[Flag] = []
    for (tool, version), calls in sorted(by_tool.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        ref = [r for r in calls if r["run"] < reference]
        later = [r for r in calls if r["run"] >= reference]
        if len(ref) < 20:
            continue  # too little reference to judge this version
        done: set[str] = set()
        for i in range(window - 1, len(later)):
            win = later[i - window + 1 : i + 1]
            for check, p, what, ref_stats, win_stats, odd in _checks(ref, win):
                if check in done or p >= alpha or not odd:
                    continue
                done.add(check)
                flags.append(Flag(
                    tool=tool, version=version, check=check, since_run=odd[0]["run"],
                    flagged_at_run=win[-1]["run"], p_value=p, what_changed=what,
                    reference=ref_stats, window=win_stats, examples=[_example(r) for r in odd[:3]],
                ))  # fmt: skip
    flags.sort(key=lambda f: (f.flagged_at_run, f.tool, f.check))
    return Report(
        log=str(log), runs=len({r["run"] for r in rows}), invocations=len(rows),
        tool_versions=len(by_tool), reference_runs=reference, window=window, alpha=alpha,
        flags=flags,
    )  # fmt: skip


def to_markdown(report: Report) -> str:
    """A short human report: one section per flag with its evidence."""
    lines = [
        f"# Drift monitor: {len(report.flags)} flag(s)",
        "",
        f"{report.invocations} invocations over {report.runs} runs, {report.tool_versions} "
        f"tool versions; reference = first {report.reference_runs} runs, window "
        f"{report.window} calls, alpha {report.alpha:g}.",
    ]
    for f in report.flags:
        lines += [
            "",
            f"## {f.tool} v{f.version}: {f.check} (p = {f.p_value:.2g})",
            f"- since run {f.since_run}, flagged at run {f.flagged_at_run}",
            f"- what changed: {f.what_changed}",
        ]
        lines += [f"- example: `{json.dumps(e, default=str)}`" for e in f.examples]
    return "\n".join(lines) + "\n"
