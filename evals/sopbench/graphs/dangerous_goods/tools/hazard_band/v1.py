"""SOP-Bench dangerous goods 5.7: the hazard score reaches this class's lower bound.

The node's text names its bound parameter (``{class_x_min}``); the score comes from
``rc_hazard_score``, a grandparent, through the chain of band nodes.
"""

import re

from sopgraph.graphs.model import Verdict


async def run(input: dict, ctx) -> Verdict:
    param = re.search(r"\{(class_\w+_min)\}", ctx.node.text).group(1)
    bound = float(ctx.params[param])
    parent = next(iter(ctx.parents.values()))
    score = parent.observed["hazard_score"]
    return Verdict(
        value=score >= bound,
        observed={"hazard_score": score},
        threshold=bound,
        explanation=f"hazard score {score} vs {param} {bound}",
    )
