"""DSPy signatures and modules of the tool-maker: the spec writer and the reflector.

``WriteCheck`` fills one node's spec (a ``Check``) under the node's grammar, which constrains
the reply; ``DiagnoseFailures`` reads the kept spec's failing cases and says what to fix. The
recorded runs' cassettes hold these prompts' exact text: a change to it needs a re-record.
"""

from __future__ import annotations

from pathlib import Path

import dspy

OPTIMIZED_MAKER = Path(__file__).parent / "optimized" / "check_maker.json"
"""The spec tool-maker compiled on nodes outside the evaluation's node set (``sopgraph tools
optimize-maker``); ``CheckMakerModule`` loads it by default when it exists. None ships: the
compile of 2026-11-26 (``check_maker_bootstrap_2026-11-26.json`` beside it) measured worse than
zero-shot (docs/toolmaker.md)."""


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


class ReflectorModule(dspy.Module):
    def __init__(self):
        super().__init__()
        self.diagnose = dspy.Predict(DiagnoseFailures)

    async def aforward(self, **inputs: str) -> dspy.Prediction:
        return await self.diagnose.acall(**inputs)


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
