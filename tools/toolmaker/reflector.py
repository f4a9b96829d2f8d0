"""The reflector: a short diagnosis of a candidate's failures, which the next rewrite follows.

It receives what the paper's reflector receives: the failing (input, expected, predicted)
triples with what the candidate measured, and the candidate (``evidence`` is ``none`` in the
spec pipeline: its data description is in the tool-maker's own prompt).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import dspy

from sopgraph.prompts.toolmaker import ReflectorModule
from sopgraph.tools.toolmaker.context import NodeBrief, check_text
from sopgraph.tools.toolmaker.maker import Usage, call_failure, tracked


@dataclass
class Reflector:
    lm: dspy.BaseLM | None = None
    module: ReflectorModule = field(default_factory=ReflectorModule)

    def inputs(self, brief: NodeBrief, evidence: str, candidate: str, failures: str) -> dict:
        return {
            "check": check_text(brief),
            "evidence": evidence,
            "candidate": candidate,
            "failures": failures,
        }

    async def diagnose(
        self, brief: NodeBrief, evidence: str, candidate: str, failures: str
    ) -> tuple[str, Usage]:
        try:
            pred, usage = await tracked(
                self.module.acall(**self.inputs(brief, evidence, candidate, failures)), self.lm
            )
        except Exception as exc:  # noqa: BLE001 - the rewrite still sees the failures
            return f"(no diagnosis: {call_failure(exc)})", Usage()
        return " ".join(str(pred.diagnosis or "").split())[:1200], usage
