"""SOP-Bench dangerous goods 5.6: the hazard score, missing or zero components imputed.

``false`` (Unable to Decide) when more than ``max_missing_scores`` components are missing.
"""

from sopgraph.graphs.model import Verdict

COMPONENTS = ("obs_sds_score", "obs_handling_score", "obs_transport_score", "obs_disposal_score")


async def run(input: dict, ctx) -> Verdict:
    scores = {}
    for node in COMPONENTS:
        verdict = ctx.parents.get(node)
        observed = verdict.observed if verdict is not None else None
        scores[node] = (observed or {}).get("score") if isinstance(observed, dict) else None
    present = [s for s in scores.values() if s]
    missing = len(scores) - len(present)
    limit = int(ctx.params["max_missing_scores"])
    if missing > limit or not present:
        return Verdict(
            value=False,
            observed={"hazard_score": 0, "missing": missing},
            threshold=limit,
            explanation=f"{missing} component scores missing",
        )
    total = sum(present) + missing * max(present)
    return Verdict(
        value=True,
        observed={"hazard_score": total, "missing": missing},
        threshold=limit,
        explanation=f"hazard score {total} ({missing} imputed)",
    )
