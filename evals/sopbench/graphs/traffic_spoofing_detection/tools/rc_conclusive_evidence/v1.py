"""SOP-Bench traffic spoofing 5.6: a low-risk violation's evidence is conclusive when either the
traffic analysis or the source verification called it suspicious."""

from sopgraph.graphs.model import Verdict

CHECKS = ("obs_traffic_suspicious", "obs_sources_suspicious")


async def run(input: dict, ctx) -> Verdict:
    found = {n: ctx.parents[n].observed["result"] for n in CHECKS if n in ctx.parents}
    conclusive = any(v.upper() == "SUSPICIOUS" for v in found.values())
    return Verdict(
        value=conclusive,
        observed=found,
        threshold="SUSPICIOUS",
        explanation=f"evidence {'conclusive' if conclusive else 'not conclusive'}: {found}",
    )
