"""A fixed, stratified sample of a domain's tasks across its answer labels."""

from __future__ import annotations

import random
from collections import defaultdict

from sopgraph.evals.sopbench.domain import Domain, Task


def stratified_sample(domain: Domain, n: int | None, seed: int = 0) -> list[Task]:
    """``n`` tasks spread over the answer labels in proportion (largest remainder, at least one
    per label while ``n`` allows), drawn with ``seed``; all tasks when ``n`` is None or too big.

    The same domain, ``n`` and ``seed`` always give the same tasks in the same order: labels
    interleaved, so that the first tasks of a run cut short are spread over the labels too.
    """
    tasks = domain.tasks
    if n is None or n >= len(tasks):
        return list(tasks)
    by_label: dict[str, list[Task]] = defaultdict(list)
    for t in tasks:
        by_label[domain.label(t)].append(t)
    labels = sorted(by_label, key=lambda lb: (-len(by_label[lb]), lb))
    quota = {lb: 0 for lb in labels}
    for lb in labels[:n]:  # one per label first, the commonest labels first
        quota[lb] = 1
    left = n - sum(quota.values())
    if left > 0:
        total = len(tasks)
        shares = {lb: left * len(by_label[lb]) / total for lb in labels}
        for lb in labels:
            quota[lb] += int(shares[lb])
        rest = n - sum(quota.values())
        for lb in sorted(labels, key=lambda lb: -(shares[lb] - int(shares[lb])))[:rest]:
            quota[lb] += 1
    rng = random.Random(seed)
    drawn = {lb: rng.sample(by_label[lb], min(quota[lb], len(by_label[lb]))) for lb in labels}
    short = n - sum(len(v) for v in drawn.values())
    if short > 0:  # a label smaller than its quota: fill from the rest
        taken = {t.task_id for v in drawn.values() for t in v}
        rest = [t for t in tasks if t.task_id not in taken]
        for t in rng.sample(rest, short):
            drawn[domain.label(t)].append(t)
    order: list[Task] = []
    for i in range(max(len(v) for v in drawn.values())):
        order += [drawn[lb][i] for lb in labels if i < len(drawn[lb])]
    return order
