"""The served graphs' input contract: Studio gets an input schema, and a run without an SOP or
with its input sent flat fails with one line instead of returning empty verdicts."""

from __future__ import annotations

import pytest

from sopgraph.graphs.input_schema import InputError
from sopgraph.runtime import studio


def test_generic_sop_graph_without_configurable_sop_is_an_error():
    graph = studio.sop({})
    with pytest.raises(RuntimeError, match="set configurable.sop to an SOP path or one of: "):
        graph.invoke({"input": {"type": "station_idle"}})


@pytest.mark.parametrize("name", ["fc_alarm_triage", "service_interruption"])
def test_example_graphs_publish_their_input_schema(name):
    graph = getattr(studio, name)
    schema = graph.get_input_jsonschema()
    assert schema is not None and schema["required"] == ["input"]
    inner = schema["$defs"][schema["properties"]["input"]["$ref"].split("/")[-1]]
    if name == "fc_alarm_triage":
        assert set(inner["required"]) == {"type", "site", "timestamp"}
        assert "station_idle" in inner["properties"]["type"]["enum"]
        assert "required for: station_idle" in inner["properties"]["station"]["description"]
    else:
        assert inner["required"] == ["case_id"]
    # the state too: typing.TypedDict on Python 3.11 gave Studio no schema at all
    assert graph.get_output_jsonschema()["properties"]["trail"]


async def test_an_alarm_sent_flat_is_an_error_not_empty_verdicts():
    alarm = {"type": "station_idle", "site": "BFI4", "station": "BFI4-ST01",
             "timestamp": "2025-03-03T04:20:59Z"}  # fmt: skip
    with pytest.raises(InputError, match='no run input: send it under "input"'):
        await studio.fc_alarm_triage.ainvoke(alarm)
    with pytest.raises(InputError, match="input field 'timestamp' is required"):
        await studio.fc_alarm_triage.ainvoke(
            {"input": {k: v for k, v in alarm.items() if k != "timestamp"}}
        )
