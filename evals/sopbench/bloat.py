"""Registry bloat (SOP-Bench 5.2.1): distractor tools from other domains added to the offered set.

The paper offered 20 distractors beside 6 relevant tools (a ratio of 20/6); ``ratio`` here is
distractors per relevant tool, drawn with a seed from the sibling domain folders.
"""

from __future__ import annotations

import random
from pathlib import Path

from sopgraph.evals.sopbench.domain import Domain, DomainError, read_toolspecs

PAPER_RATIO = 20 / 6  # 26 tools offered, 6 of them relevant


def distractors(domain: Domain, ratio: float, seed: int = 0) -> list[str]:
    """``DOMAIN_PATH:TOOL`` items: ``round(ratio * tools)`` tools of the other domains beside it."""
    want = round(ratio * len(domain.tools))
    if want <= 0:
        return []
    own = {t.name.lower() for t in domain.tools}
    pool: list[str] = []
    for other in sorted(Path(domain.path).parent.iterdir()):
        if other == domain.path or not (other / "toolspecs.json").is_file():
            continue
        try:
            specs = read_toolspecs(other / "toolspecs.json")
        except DomainError:
            continue
        pool += [f"{other}:{s.name}" for s in specs if s.name.lower() not in own]
    # one tool per name: two domains may both offer, say, calculateRiskScore
    unique = list({item.rpartition(":")[2].lower(): item for item in pool}.values())
    if len(unique) < want:
        raise DomainError(
            f"{domain.path.parent}: only {len(unique)} distractor tools in the other domains, "
            f"{want} wanted for --bloat {ratio:g}; lower --bloat"
        )
    return sorted(random.Random(seed).sample(unique, want))
