"""Build small SOP folders with inline tools for engine tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

import yaml

from sopgraph.tools.registry import Registry

# A check, then a high-cost gated action: the smallest SOP whose run pauses for an approval.
VALVE_SOP = {
    "id": "valve",
    "entry": {"default": ["check"]},
    "nodes": {
        "check": {"kind": "observation", "text": "check", "next": {"true": ["open_valve"]}},
        "open_valve": {"kind": "action", "text": "open the valve", "cost": "high",
                       "approval": "required"},
    },
}  # fmt: skip


def make_sop(root: Path, sop: dict, tools: dict[str, str]) -> Path:
    """Write ``sop`` to ``root/sop.yaml`` and each tool body as ``async def run`` v1, activated.

    A tool body is the source of the function's body; ``Verdict``, ``asyncio`` are imported.
    """
    root.mkdir(parents=True, exist_ok=True)
    (root / "sop.yaml").write_text(yaml.safe_dump(sop, sort_keys=False))
    reg = Registry(root / "tools", sop_id=sop["id"])
    for node_id, body in tools.items():
        code = (
            "import asyncio\nimport json\nimport os\nimport time\n\nfrom sopgraph.graphs.model import Verdict\n\n\n"
            "async def run(input, ctx):\n" + textwrap.indent(textwrap.dedent(body), "    ")
        )
        reg.add_version(node_id, code, author="human", activate=True)
    return root
