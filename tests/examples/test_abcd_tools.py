"""The ABCD library's compiled tools are field-measure specs (issue 52): each is the file build.py
writes for its node's data condition, and each decides like ``abcd_truth`` (the dialogue eval's
rule reading of the condition's text, which shares no code with the specs) on every scenario of
the eval's grid, over the real scenario MCP server; a scenario without the field, without the
Oracle's answer or without ``today`` is no_data."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import pytest_asyncio

from sopgraph.evals.dialogue_cases import abcd_truth, scenario_grid
from sopgraph.examples.abcd import build
from sopgraph.graphs.loader import load_sop
from sopgraph.nodes.mcp import McpPool, ServerConfig
from sopgraph.tools.registry import Registry

ABCD = Path(__file__).resolve().parents[2] / "examples" / "abcd"
GRID = scenario_grid()
BASE = GRID[0]
MISSING = {  # scenario -> the scenario server's records without what a check reads
    "no_personal": {k: v for k, v in BASE.items() if k != "personal"},
    "no_level": {**BASE, "personal": {"customer_name": "test customer"}},
    "no_order": {k: v for k, v in BASE.items() if k != "order"},
    "no_oracle": {k: v for k, v in BASE.items() if k != "oracle"},
    "no_today": {k: v for k, v in BASE.items() if k != "today"},
}
shared_loop = pytest.mark.asyncio(loop_scope="module")


def data_nodes() -> list[tuple[str, str]]:
    """(intent, node) of every data condition; one per distinct check (many intents share)."""
    seen, out = set(), []
    for it, _ in build.build_intents():
        for nid, check in it.tools.items():
            key = json.dumps(build.spec_of_check(check), sort_keys=True)
            if key not in seen:
                seen.add(key)
                out.append((it.key, nid))
    return out


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pool(tmp_path_factory):
    scenarios = {f"grid_{i}": s for i, s in enumerate(GRID)} | MISSING
    path = tmp_path_factory.mktemp("abcd") / "scenarios.json"
    path.write_text(json.dumps(scenarios))
    args = ["-m", "sopgraph.mcp_servers.abcd_scenario", "--scenarios", str(path)]
    async with McpPool({"abcd": ServerConfig(command=sys.executable, args=args)}) as p:
        yield p


def test_every_tool_is_the_spec_build_writes():
    for it, root in build.build_intents():
        sop = build.intent_sop(it, root)
        registry = Registry(ABCD / it.key / "tools")
        for nid, check in it.tools.items():
            path = ABCD / it.key / "tools" / nid / "v1.py"
            assert path.read_text() == build.tool_file(
                sop.nodes[nid].text, build.spec_of_check(check)
            )
            spec = registry.resolve(nid).fn.spec  # loaded as the runtime loads it: a spec
            assert spec.measures["holds"].kind == "field", nid


@shared_loop
@pytest.mark.parametrize(("intent", "nid"), data_nodes())
async def test_a_spec_decides_as_the_conditions_text_reads(pool, intent, nid):
    node = load_sop(ABCD / intent).nodes[nid]
    run = Registry(ABCD / intent / "tools").resolve(nid).fn
    ctx = SimpleNamespace(mcp=pool, params={})
    got = [(await run({"scenario_id": f"grid_{i}"}, ctx)).value for i in range(len(GRID))]
    want = ["true" if abcd_truth(node, s) else "false" for s in GRID]
    assert got == want
    assert {"true", "false"} <= set(got)  # the grid holds both outcomes of every condition
    reads = build.spec_of_check(_check(intent, nid))["measures"]["holds"]
    gone = {"get_customer": ["no_personal", "no_level"], "get_order": ["no_order"],
            "ask_the_oracle": ["no_oracle"]}[reads["tool"]]  # fmt: skip
    if "within_days" in reads:
        gone = [*gone, "no_today"]
    for sid in gone:
        verdict = await run({"scenario_id": sid}, ctx)
        assert verdict.value == "no_data", (sid, verdict)


def _check(intent: str, nid: str) -> dict:
    for it, _ in build.build_intents():
        if it.key == intent:
            return it.tools[nid]
    raise KeyError(intent)
