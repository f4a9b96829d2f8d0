"""The run state of a compiled SOP graph, with reducers so parallel branches merge deterministically."""

from __future__ import annotations

import operator
from typing import Annotated, Any

# typing_extensions: pydantic (and so LangGraph Studio's schema) needs it on Python < 3.12
from typing_extensions import TypedDict


def merge_dicts(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Later writes win per key; LangGraph applies a superstep's writes in task order."""
    return {**(left or {}), **(right or {})}


def add_counts(left: dict[str, int] | None, right: dict[str, int] | None) -> dict[str, int]:
    out = dict(left or {})
    for key, n in (right or {}).items():
        out[key] = out.get(key, 0) + n
    return out


class RunState(TypedDict, total=False):
    """What a traversal carries: its input, verdicts by node, the trail, actions and visit counts.

    ``verdicts`` maps node id to a Verdict dict (the latest when a loop revisits a node);
    ``trail`` is every step in order (node, executor, verdict, children fired, ms);
    ``unresolved`` maps node id to the reason no executor could decide it;
    ``unmatched`` a node whose verdict matched none of its ``next.when`` branches, and
    ``bounded`` a loop node met again after its ``max_visits``, and ``refused`` a node whose
    data source refused the run's identity access, to a one-line reason.
    """

    input: dict[str, Any]
    verdicts: Annotated[dict[str, dict[str, Any]], merge_dicts]
    trail: Annotated[list[dict[str, Any]], operator.add]
    actions: Annotated[list[dict[str, Any]], operator.add]
    visits: Annotated[dict[str, int], add_counts]
    unresolved: Annotated[dict[str, str], merge_dicts]
    unmatched: Annotated[dict[str, str], merge_dicts]
    bounded: Annotated[dict[str, str], merge_dicts]
    refused: Annotated[dict[str, str], merge_dicts]
