"""What a make leaves in the library: the kept spec registered as a new, inactive version.

The make itself is ``sampling.make_spec_tool`` (many spec candidates from one prompt, chosen
by execution on the training cases); held-out cases are only ever read by
``sampling.score_spec_heldout``, after the make, never in a prompt.

Example:
    >>> version = register(record, Registry(sop_dir / "tools"))   # doctest: +SKIP
    >>> version                                                    # doctest: +SKIP
    2
"""

from __future__ import annotations

from sopgraph.tools.registry import Registry
from sopgraph.tools.toolmaker.record import MakeRecord


class MakeError(Exception):
    """The tool-maker cannot start for this node (not a decision node, no cases)."""


def register(record: MakeRecord, registry: Registry, tool_name: str | None = None) -> int:
    """Register the kept candidate as a new, inactive version with its figures and record."""
    best = record.best
    if best is None or not best.candidate.code:
        raise MakeError(f"{record.node}: no runnable candidate to register")
    return registry.add_version(
        tool_name or record.node,
        best.candidate.code,
        author=f"tool-maker:{record.model}",
        train_pass=record.train_pass,
        eval_pass=record.eval_pass,
        tokens=record.tokens,
        seconds=record.seconds,
        record_json=record.model_dump_json(indent=1, by_alias=True),
    )
