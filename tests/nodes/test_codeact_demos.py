"""The CodeAct sub-agent's demonstrations: the library's nearest other specs, run on the input.

Real MCP servers over the triage world; what is checked is which nodes may demonstrate (never
the node's own tool, never one reading a metric or column its data hints name) and that a
demonstration shows the calls its spec really made, as the sub-agent would write them.
"""

from __future__ import annotations

import pytest
from fc_world import fc_home, fc_world  # noqa: F401

from sopgraph.evals.fc_triage.dataset import load_cases
from sopgraph.examples import EXAMPLES
from sopgraph.graphs.executors import ToolContext
from sopgraph.graphs.loader import load_sop
from sopgraph.nodes.codeact_demos import LibraryDemos
from sopgraph.nodes.mcp import McpPool, load_server_configs
from sopgraph.prompts.codeact import render_demos, series_values
from sopgraph.tools.params import ParamStore
from sopgraph.tools.registry import Registry
from sopgraph.tools.similar import reads

SOP_DIR = EXAMPLES / "fc_alarm_triage"
NODES = ("obs_label_fail_high", "rc_sorter_jam", "ct_printer_ticket_open", "rc_robot_fault",
         "rc_camera_degraded")  # fmt: skip

pytestmark = pytest.mark.slow


async def test_demonstrations_are_other_nodes_queries_on_this_input(fc_home, monkeypatch):  # noqa: F811
    monkeypatch.setenv("SOPGRAPH_HOME", str(fc_home))
    sop = load_sop(SOP_DIR)
    store = ParamStore(sop, SOP_DIR)
    library = LibraryDemos(Registry(SOP_DIR / "tools"))
    pool_by_node = {e.node: e for e in library.pool()}
    computed, siblings = [], []
    async with McpPool(load_server_configs(SOP_DIR)) as pool:
        for node_id in NODES:
            node = sop.nodes[node_id]
            case = load_cases(fc_home / "fc_world" / "cases", node_id, "eval")[0]
            params = store.for_input(case.run_input)
            ctx = ToolContext(
                node_id=node_id, text=sop.render_text(node, params), params=params, parents={},
                input=case.run_input, run_id="demos", mcp=pool, node=node,
            )  # fmt: skip
            demos = await library.for_node(node, ctx, k=2)
            assert len(demos) == 2, node_id
            hinted = {d.split(".", 1)[-1] for d in node.data}
            for demo in demos:
                assert demo.node != node_id  # never its own tool
                siblings += (
                    [(node_id, demo.node)] if reads(pool_by_node[demo.node].spec) & hinted else []
                )
                assert demo.calls and all(c.function.endswith("_query") for c in demo.calls)
                assert demo.verdict in ("true", "false", "no_data")
            text = render_demos(demos, case.run_input["timestamp"])
            # the calls as the sub-agent writes them: its functions, NOW for the input's time
            assert "time=NOW" in text or "sql=" in text
            assert case.run_input["timestamp"] not in text.replace("NOW", "")
            assert '"comparison"' in text and "so the verdict is" in text and "```python" in text
            # a demonstration computes its value from its results as its spec does, or prints them
            assert all(d.compute[-1:] in ([], ["print(value)"]) for d in demos)
            computed += [d.node for d in demos if d.compute]
    assert computed  # the metric checks' demonstrations show their computation
    # a sibling check on the same metric is fair at run time (the tool-maker never sees one)
    assert ("rc_camera_degraded", "obs_camera_fail_high") in siblings


def test_a_spread_demonstration_counts_the_series_it_keeps():
    from sopgraph.nodes.codeact_demos import computation
    from sopgraph.prompts.codeact import DemoCall
    from sopgraph.tools.spec import Check, Keep, Measure

    check = Check(
        measures={"hot": Measure(server="robotics", metric="m", minutes=15, reduce="mean",
                                 match={"site": "$site"}, keep=Keep(">", "limit"), across="count")},
        value="hot", op=">=", threshold="spread",
    )  # fmt: skip
    query = 'avg_over_time(m{site="S"}[15m])'
    result = {"data": {"result": [{"value": [0, "5"]}, {"value": [0, "1"]}]}}
    calls = [DemoCall(function="robotics_execute_query", args={"query": query}, result=result)]

    class Ctx:
        params = {"limit": 2, "spread": 1}

    lines = computation(check, {"hot": {"value": 1.0, "query": query}}, calls, Ctx())
    assert lines == ["hot = len([v for v in series_values(r1) if v > 2])", "value = hot",
                     "print(value)"]  # fmt: skip
    namespace = {"series_values": series_values, "r1": result}
    exec("\n".join(lines[:-1]), namespace)  # the demonstration's code computes the spec's value
    assert namespace["value"] == 1


def test_a_counter_demonstration_shows_its_increase_as_code():
    from sopgraph.nodes.codeact_demos import computation, counter_lines
    from sopgraph.prompts.codeact import DemoCall, table_rows
    from sopgraph.tools.kit import counter_steps
    from sopgraph.tools.spec import Check, Measure

    check = Check(
        measures={"jams": Measure(server="conveyance", table="conveyance_5m",
                                  column="sorter_jam_events_total", where={"site": "$site"},
                                  time_column="five_minute_interval", minutes=30, edge="(]",
                                  reduce="increase")},
        value="jams", op=">=", threshold="jam_min",
    )  # fmt: skip
    flag = "(five_minute_interval > $1)"
    rows = [[False, 9], [True, 9], [True, 11], [True, None], [True, 12], [True, 2], [True, 5]]
    result = {"columns": [flag, "sorter_jam_events_total"], "rows": rows}
    want = float(sum(counter_steps(rows)))  # 2, then a reset: 2, then 3
    assert want == 7
    sql = 'SELECT "five_minute_interval" > ?, "sorter_jam_events_total" FROM "conveyance_5m"'
    calls = [DemoCall(function="conveyance_execute_query", args={"sql": sql}, result=result)]
    seen = {"jams": {"value": want, "query": sql}}
    lines = computation(check, seen, calls, None)
    assert lines[0] == "rows = table_rows(r1)" and lines[-2:] == ["value = jams", "print(value)"]
    namespace = {"table_rows": table_rows, "r1": result}
    exec("\n".join(lines[:-1]), namespace)  # noqa: S102 - the demonstration computes the spec's
    assert namespace["value"] == want
    # rises: the number of steps above 0
    rises = counter_lines("n", "rises", 1, result, 3.0)
    namespace = {"table_rows": table_rows, "r1": result}
    exec("\n".join(rises), namespace)  # noqa: S102
    assert namespace["n"] == 3  # 0, 2, 2 (a reset), 3
    # lines that would not reach the spec's value are not shown
    assert counter_lines("jams", "increase", 1, result, 8.0) == []
    assert counter_lines("jams", "increase", 1, result, None) == []
