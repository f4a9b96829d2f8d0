"""DSPy signatures and modules of the tool-making pipeline: tool-maker, reflector, judges.

Each step is one typed Signature (outputs are plain strings: a small model's slips are parsed
leniently by the caller rather than failing DSPy's type check). The tool-maker has two forms:
``spec`` fills a ``ToolSpec`` (the default: a small model fills fields better than it writes
Python) and ``code`` writes the tool file itself, as in the paper.
"""

from __future__ import annotations

from pathlib import Path

import dspy

OPTIMIZED_MAKER = Path(__file__).parent / "optimized" / "check_maker.json"
"""The spec tool-maker compiled on nodes outside the evaluation's node set (``sopgraph tools
optimize-maker``); ``CheckMakerModule`` loads it by default when it exists. None ships: the
compile of 2026-11-26 (``check_maker_bootstrap_2026-11-26.json`` beside it) measured worse than
zero-shot (docs/toolmaker.md)."""


class WriteToolSpec(dspy.Signature):
    """Write the specification of a tool that decides one check of a standard operating
    procedure (SOP) from live monitoring data. The tool sends ONE query to one MCP server,
    takes the numbers in the reply, reduces them to one number with `aggregate`, and answers
    `true` when `number <operator> threshold`. Write the query for the server's dialect
    (PromQL for a Prometheus-like server, SQL for a warehouse), filtered to the alarm's site
    (and station when the check is about one station) and to the time window the check names,
    ending at the alarm time. Use {placeholders} for every value that varies: {site},
    {station}, {timestamp} (ISO time), {sql_time} (naive SQL time) and site parameter names.
    Follow the traces' working queries and the diagnosis of earlier failures.

    Two examples for made-up checks (not this SOP):
    "The pump ran hotter than {temp_max_c} C on average over the last 30 minutes." ->
    server: metrics; query: avg_over_time(pump_temp_c{site="{site}",pump="{station}"}[30m]);
    column: ; aggregate: first; operator: >; threshold: temp_max_c; empty: no_data.
    "At least {min_errors} errors were logged in the last hour." -> server: warehouse;
    query: SELECT count(*) AS n FROM events WHERE site = '{site}' AND kind = 'error' AND
    at > TIMESTAMP '{sql_time}' - INTERVAL 60 MINUTE AND at <= TIMESTAMP '{sql_time}';
    column: n; aggregate: first; operator: >=; threshold: min_errors; empty: false."""

    check: str = dspy.InputField(desc="the SOP node; {names} are site parameters")
    graph: str = dspy.InputField(desc="the node's parents and children in the SOP")
    parameters: str = dspy.InputField(desc="site parameters with one site's values")
    servers: str = dspy.InputField(desc="MCP servers the tool may call, with their tools")
    evidence: str = dspy.InputField(
        desc="data-collection traces: code a sub-agent ran, MCP replies, graded verdicts"
    )
    feedback: str = dspy.InputField(
        desc="the previous candidate, its failing cases and a diagnosis; `none` at first"
    )
    server: str = dspy.OutputField(desc="one server name from `servers`")
    query: str = dspy.OutputField(desc="the query text with {placeholders}")
    column: str = dspy.OutputField(desc="result column with the number (SQL); empty for PromQL")
    aggregate: str = dspy.OutputField(desc="one of: first, last, sum, mean, max, min, count")
    operator: str = dspy.OutputField(desc="one of: >, >=, <, <=, ==, !=")
    threshold: str = dspy.OutputField(desc="a site parameter name from `parameters`, or a number")
    empty: str = dspy.OutputField(
        desc="verdict when the query returns nothing: no_data, true or false"
    )


class WriteToolCode(dspy.Signature):
    """Write the Python file of a tool that decides one check of a standard operating
    procedure (SOP) from live monitoring data, following the tool contract exactly. Query the
    MCP servers as the traces' working code does; take thresholds from ctx.params; return
    no_data only when the data is missing. Reply with the whole file."""

    check: str = dspy.InputField(desc="the SOP node; {names} are site parameters")
    graph: str = dspy.InputField(desc="the node's parents and children in the SOP")
    parameters: str = dspy.InputField(desc="site parameters with one site's values")
    servers: str = dspy.InputField(desc="MCP servers the tool may call, with their tools")
    contract: str = dspy.InputField(desc="the tool contract")
    example: str = dspy.InputField(desc="a tool of ANOTHER node, as a format example only")
    evidence: str = dspy.InputField(
        desc="data-collection traces: code a sub-agent ran, MCP replies, graded verdicts"
    )
    feedback: str = dspy.InputField(
        desc="the previous candidate, its failing cases and a diagnosis; `none` at first"
    )
    code: str = dspy.OutputField(desc="the complete tool file")


class DiagnoseFailures(dspy.Signature):
    """A tool for one SOP check gave wrong verdicts on labeled cases. Read the candidate and
    the failing (input, expected, predicted) cases with the queries it made, and say in two
    or three sentences what it gets wrong and how to fix it (window, filter, column,
    aggregation, comparison, unit, missing-data rule). Be concrete; do not rewrite the tool."""

    check: str = dspy.InputField(desc="the SOP node; {names} are site parameters")
    evidence: str = dspy.InputField(desc="data-collection traces, or `none`")
    candidate: str = dspy.InputField(desc="the candidate tool (its spec or code)")
    failures: str = dspy.InputField(desc="failing cases: input, expected, predicted, queries")
    diagnosis: str = dspy.OutputField(desc="what is wrong and the fix, 2-3 sentences")


class JudgeTrace(dspy.Signature):
    """Decide whether a sub-agent's investigation of one SOP check is consistent with the SOP:
    it queried the data the check names, over the window it names, and its verdict follows
    from what the data showed. Answer `yes` or `no` with one sentence."""

    check: str = dspy.InputField(desc="the SOP node; {names} are site parameters")
    parameters: str = dspy.InputField(desc="site parameters with one site's values")
    trace: str = dspy.InputField(desc="the sub-agent's code, MCP replies and verdict")
    consistent: str = dspy.OutputField(desc="yes or no")
    reason: str = dspy.OutputField(desc="one sentence")


class ReviewTool(dspy.Signature):
    """Review a tool's code for consistency with the SOP check it implements: the data it
    queries, the window, the comparison and the threshold parameter, the missing-data rule.
    Answer `yes` if it implements the check as written, else `no`, with one sentence."""

    check: str = dspy.InputField(desc="the SOP node; {names} are site parameters")
    candidate: str = dspy.InputField(desc="the tool (its spec or code)")
    consistent: str = dspy.OutputField(desc="yes or no")
    reason: str = dspy.OutputField(desc="one sentence")


class ToolMakerModule(dspy.Module):
    """Writes one candidate: a spec (``form="spec"``) or a tool file (``form="code"``)."""

    def __init__(self, form: str = "spec"):
        super().__init__()
        self.form = form
        self.write = dspy.Predict(WriteToolSpec if form == "spec" else WriteToolCode)

    async def aforward(self, config: dict | None = None, **inputs: str) -> dspy.Prediction:
        if self.form == "spec":
            inputs = {k: v for k, v in inputs.items() if k not in ("contract", "example")}
        return await self.write.acall(**inputs, config=config or {})


class ReflectorModule(dspy.Module):
    def __init__(self):
        super().__init__()
        self.diagnose = dspy.Predict(DiagnoseFailures)

    async def aforward(self, **inputs: str) -> dspy.Prediction:
        return await self.diagnose.acall(**inputs)


class TraceJudgeModule(dspy.Module):
    def __init__(self):
        super().__init__()
        self.judge = dspy.Predict(JudgeTrace)

    async def aforward(self, **inputs: str) -> dspy.Prediction:
        return await self.judge.acall(**inputs)


class CodeReviewModule(dspy.Module):
    def __init__(self):
        super().__init__()
        self.review = dspy.Predict(ReviewTool)

    async def aforward(self, **inputs: str) -> dspy.Prediction:
        return await self.review.acall(**inputs)


def says_yes(text: object) -> bool:
    """A judge's ``consistent`` field read leniently (``Yes.``, ``true``, ``**yes**``)."""
    word = str(text or "").strip().strip("*`'\".").lower().split(" ")[0].rstrip(".,;:")
    return word in ("yes", "true", "y", "consistent")


class WriteCheck(dspy.Signature):
    """Write the spec of a tool that decides one check of a standard operating procedure
    (SOP) from monitoring data. A spec names one to three measurements (each reads one metric
    over a window, or one table's column over a window or at the input's time, reduced to one
    number), a `value` formula over the measurement names, a comparison `value <op> threshold`
    with a site parameter as threshold, and what missing data means. `scale` multiplies the
    value into the SOP's unit: 1 when the data is already in it (a percent metric, 0-100,
    against a percent threshold), 100 when the data is a fraction (a ratio, 0-1) and the SOP
    states a percent. `op` says the SOP's words: more than / above `>`, at least `>=`, below /
    less than `<`, at most `<=`. `missing` is the verdict when there is no data: `no_data`
    unless the SOP says what no data means. Copy the shape of the demonstrations of similar
    checks: they are verified tools of this library. Follow the feedback of earlier candidates
    when given."""

    check: str = dspy.InputField(desc="the SOP node; {names} are site parameters")
    data: str = dspy.InputField(desc="the data the node names, and what the servers hold")
    parameters: str = dspy.InputField(desc="site parameters with one site's values")
    demonstrations: str = dspy.InputField(desc="verified specs of similar checks, or `none`")
    feedback: str = dspy.InputField(
        desc="the best earlier candidate, its failing cases with measured values, a diagnosis; "
        "`none` at first"
    )
    spec: dict = dspy.OutputField(desc="the spec as JSON")


class CheckMakerModule(dspy.Module):
    """Fills one node's spec (the node's grammar constrains the reply, not the signature).

    Args:
        spec_type: the spec field's type, when the signature rather than a grammar holds it.
        program: a saved, optimized program to load (its few-shot demos); ``"default"`` loads
            ``OPTIMIZED_MAKER`` when it exists, None starts zero-shot.
    """

    def __init__(self, spec_type: type | None = None, program: str | Path | None = "default"):
        super().__init__()
        sig = (
            WriteCheck
            if spec_type is None
            else WriteCheck.with_updated_fields("spec", type_=spec_type)
        )
        self.write = dspy.Predict(sig)
        self.program = program_path(program)  # the saved program loaded, or None (zero-shot)
        if self.program is not None:
            self.load(str(self.program))

    async def aforward(self, config: dict | None = None, **inputs: str) -> dspy.Prediction:
        return await self.write.acall(**inputs, config=config or {})


def program_path(program: str | Path | None) -> Path | None:
    """The saved program ``program`` names: ``"default"`` is ``OPTIMIZED_MAKER`` when it exists;
    None (or ``"none"``) is none."""
    if program is None or str(program) == "none":
        return None
    if program == "default":
        return OPTIMIZED_MAKER if OPTIMIZED_MAKER.is_file() else None
    path = Path(program)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no saved tool-maker program; give a file or `none`")
    return path
