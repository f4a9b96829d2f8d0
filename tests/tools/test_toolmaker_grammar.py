"""The tool-maker's per-node grammar is a narrowing of the Check (issue 52): its fields are the
Check's, its enumerations the Check's own or read from the catalog and the SOP's input
contract. On an SOP that is not the triage one, the match labels are that SOP's input fields
that the catalog's metrics carry, never ``site``/``station``."""

from __future__ import annotations

import json

import pytest

from sopgraph.examples import EXAMPLES
from sopgraph.graphs.loader import load_sop
from sopgraph.tools.spec import Check, SeriesMeasure
from sopgraph.tools.spec.measures import OPERATORS, OUTCOMES
from sopgraph.tools.toolmaker.data_catalog import DataCatalog
from sopgraph.tools.toolmaker.demos import canonical
from sopgraph.tools.toolmaker.grammar import (
    as_spec_dict,
    hinted_families,
    narrow,
    response_format,
    spec_model,
)

SERVICE = EXAMPLES / "service_interruption"
ENTERPRISE = EXAMPLES / "enterprise"


def _fields(sop_dir) -> list[str]:
    return list(load_sop(sop_dir).input)


def _catalog(labels: dict[str, list[str]] | None = None) -> DataCatalog:
    return DataCatalog(
        metrics={"telemetry": ["outage_minutes", "dropped_calls"]},
        labels=labels or {},
        tables={"crm": {"cases": ["case_id", "status", "opened_at"]}},
        types={"cases.opened_at": "TIMESTAMP"},
    )


def _schema(model) -> dict:
    return response_format(model)["schema"]


def test_match_labels_are_the_inputs_fields_the_metrics_carry():
    fields = _fields(SERVICE)
    assert fields == ["case_id"]
    labels = {"outage_minutes": ["region", "case_id"], "dropped_calls": ["case_id", "cell"]}
    schema = _schema(spec_model(_catalog(labels), ["max_outage_min"], fields))
    match = schema["$defs"]["MatchTelemetry"]["properties"]
    assert list(match) == ["case_id"]  # region and cell: no input field keys them
    assert match["case_id"]["anyOf"][0]["const"] == "$case_id"  # bound to the input's field
    text = json.dumps(schema)
    assert '"site"' not in text and '"station"' not in text and "$site" not in text


def test_with_no_labels_listed_the_match_keys_are_the_inputs_fields():
    fields = _fields(ENTERPRISE)
    schema = _schema(spec_model(_catalog(), [], fields))
    assert list(schema["$defs"]["MatchTelemetry"]["properties"]) == fields
    where = schema["$defs"]["WhereCrmCases"]["properties"]
    assert list(where) == ["case_id", "status", "opened_at"]  # the table's own columns


def test_the_grammars_enumerations_are_the_checks():
    schema = _schema(spec_model(_catalog(), ["max_outage_min"], ["case_id"]))
    one = schema["$defs"]["OneMeasure"]["properties"]
    assert tuple(one["op"]["enum"]) == OPERATORS and tuple(one["missing"]["enum"]) == OUTCOMES
    assert one["threshold"]["anyOf"][0]["const"] == "max_outage_min"  # the SOP's parameter
    series = schema["$defs"]["SeriesTelemetry"]["properties"]
    assert set(series) <= set(SeriesMeasure.model_fields)
    with pytest.raises(TypeError, match="colour is not a field of SeriesMeasure"):
        narrow(SeriesMeasure, "Bad", colour=(str, ...))


def test_a_reply_filled_under_the_grammar_is_a_check():
    reply = spec_model(_catalog({"outage_minutes": ["case_id"]}), ["max_outage_min"], ["case_id"])
    filled = reply.model_validate({"spec": {
        "value": "a", "scale": 1, "op": ">", "threshold": "max_outage_min", "missing": "no_data",
        "measures": {"a": {"server": "telemetry", "metric": "outage_minutes",
                           "match": {"case_id": "$case_id"}, "minutes": 60, "reduce": "max"}},
    }})  # fmt: skip
    check = Check.from_dict(as_spec_dict(filled))
    assert check.measures["a"].match == {"case_id": "$case_id"}
    with pytest.raises(ValueError):  # a label the input does not key on
        reply.model_validate({"spec": {
            "value": "a", "scale": 1, "op": ">", "threshold": 5, "missing": "no_data",
            "measures": {"a": {"server": "telemetry", "metric": "outage_minutes",
                               "match": {"site": "$case_id"}, "minutes": 60, "reduce": "max"}},
        }})  # fmt: skip


def test_a_node_whose_servers_list_nothing_to_read_is_one_clear_error():
    with pytest.raises(ValueError, match="list no metrics, tables or typed records"):
        spec_model(DataCatalog(), [], ["case_id"])


def _records() -> DataCatalog:
    return DataCatalog(
        records={"crm": {
            "get_case": {"status": {"type": "string", "enum": ["open", "closed"]},
                         "age_days": {"type": "integer", "enum": None}},
            "get_region": {"load": {"type": "number", "enum": None}},
        }},
        arguments={"crm.get_case": ["case_id"], "crm.get_region": ["region"]},
    )  # fmt: skip


def test_a_typed_record_the_input_can_call_is_a_field_measure_in_the_grammar():
    defs = _schema(spec_model(_records(), [], ["case_id"]))["$defs"]
    status = defs["FieldCrmGetCaseStatus"]["properties"]
    assert status["equals"]["enum"] == ["open", "closed"]  # the declared values, nothing else
    assert status["field"]["const"] == "status" and status["tool"]["const"] == "get_case"
    assert defs["ArgsCrmGetCase"]["properties"]["case_id"]["const"] == "$case_id"
    assert "equals" not in defs["FieldCrmGetCaseAgeDays"]["properties"]  # a number is compared
    assert not any("GetRegion" in name for name in defs)  # region: not a field of the input
    hinted = _schema(spec_model(_records(), [], ["case_id", "region"], ["crm.get_region"]))
    assert [n for n in hinted["$defs"] if n.startswith("Field")] == ["FieldCrmGetRegionLoad"]


def test_a_reply_with_a_field_measure_is_a_check():
    reply = spec_model(_records(), [], ["case_id"])
    filled = reply.model_validate({"spec": {
        "value": "a", "scale": 1, "op": ">", "threshold": 0, "missing": "no_data",
        "measures": {"a": {"server": "crm", "tool": "get_case", "args": {"case_id": "$case_id"},
                           "field": "status", "equals": "open"}},
    }})  # fmt: skip
    check = Check.from_dict(as_spec_dict(filled))
    assert check.measures["a"].equals == "open"
    with pytest.raises(ValueError):  # a value the record does not declare
        reply.model_validate({"spec": {
            "value": "a", "scale": 1, "op": ">", "threshold": 0, "missing": "no_data",
            "measures": {"a": {"server": "crm", "tool": "get_case",
                               "args": {"case_id": "$case_id"}, "field": "status",
                               "equals": "pending"}},
        }})  # fmt: skip


def test_record_fields_come_from_the_output_schema_only():
    from sopgraph.tools.toolmaker.catalog import CatalogTool

    schema = {"type": "object", "properties": {"tier": {"$ref": "#/$defs/Tier"},
              "note": {"type": "string"}, "tags": {"type": "array"}},
              "$defs": {"Tier": {"enum": ["gold", "basic"], "type": "string"}}}  # fmt: skip
    tool = CatalogTool("crm", "get_customer", "", {"required": ["customer_id"]}, schema)
    assert tool.record_fields() == {
        "tier": {"type": "string", "enum": ["gold", "basic"]},
        "note": {"type": "string", "enum": None},
    }  # an array is no field a measure reads
    wrapped = {"type": "object", "properties": {"result": {"type": "object"}}}
    assert CatalogTool("crm", "raw", "", {}, wrapped).record_fields() == {}
    assert CatalogTool("crm", "untyped", "", {}).record_fields() == {}


def _wide() -> DataCatalog:
    """A wide table: one reading per zone, and two counters that differ by one word."""
    cols = ["site", "at", "zone_a_load_ratio", "zone_b_load_ratio", "zone_c_load_ratio",
            "inbound_faults_total", "outbound_faults_total", "note_a", "note_b"]  # fmt: skip
    types = {f"readings.{c}": "DOUBLE" for c in cols[2:5]}
    types |= {"readings.at": "TIMESTAMP", "readings.inbound_faults_total": "BIGINT",
              "readings.outbound_faults_total": "BIGINT", "readings.note_a": "TEXT",
              "readings.note_b": "TEXT"}  # fmt: skip
    return DataCatalog(tables={"plant": {"readings": cols}}, types=types)


def test_a_tables_column_families_are_its_numbers_named_alike_but_for_one_word():
    zones = ["zone_a_load_ratio", "zone_b_load_ratio", "zone_c_load_ratio"]
    faults = ["inbound_faults_total", "outbound_faults_total"]
    assert _wide().families("readings") == [zones, faults]  # text columns form none
    assert DataCatalog(tables={"s": {"t": ["x"]}}).families("t") == []


def test_a_family_is_offered_where_the_hints_name_it_and_never_where_they_pin_a_column():
    zones = ["zone_a_load_ratio", "zone_b_load_ratio", "zone_c_load_ratio"]
    faults = ["inbound_faults_total", "outbound_faults_total"]
    data = _wide()
    assert hinted_families(data, "plant", "readings", ["plant.zone_load"]) == [zones]
    assert hinted_families(data, "plant", "readings", ["plant.readings"]) == [zones, faults]
    assert hinted_families(data, "plant", "readings", []) == [zones, faults]
    assert hinted_families(data, "plant", "readings", ["plant.zone_a_load_ratio"]) == []


def test_a_family_reply_reads_several_columns_and_takes_across_them():
    reply = spec_model(_wide(), ["max_load_pct"], ["site"], ["plant.zone_load"])
    defs = _schema(reply)["$defs"]
    family = defs["RowsPlantReadingsZoneALoadRatioColumns"]["properties"]
    assert list(family) == ["server", "table", "columns", "where", "time_column", "minutes",
                            "reduce", "across", "default"]  # fmt: skip
    assert "RowsPlantReadingsInboundFaultsTotalColumns" not in defs  # the hint names the zones
    filled = reply.model_validate({"spec": {
        "value": "a", "scale": 100, "op": ">", "threshold": "max_load_pct", "missing": "no_data",
        "measures": {"a": {"server": "plant", "table": "readings",
                           "columns": ["zone_a_load_ratio", "zone_c_load_ratio"],
                           "where": {"site": "$site"}, "time_column": "at", "minutes": 10,
                           "reduce": "mean", "across": "max"}},
    }})  # fmt: skip
    check = Check.from_dict(as_spec_dict(filled))
    assert check.measures["a"].columns == ("zone_a_load_ratio", "zone_c_load_ratio")
    assert check.measures["a"].across == "max"
    with pytest.raises(ValueError):  # a column of no family
        reply.model_validate({"spec": {
            **filled.model_dump()["spec"],
            "measures": {"a": {**filled.model_dump()["spec"]["measures"]["a"],
                               "columns": ["note_a", "note_b"]}},
        }})  # fmt: skip


def test_a_demonstration_reading_several_columns_is_shown_as_the_grammar_writes_it():
    spec = {"value": "a", "op": ">", "threshold": "x", "measures": {"a": {
        "server": "plant", "table": "readings", "columns": ["zone_a_load_ratio"],
        "where": {"site": "$site"}, "reduce": "mean", "across": "max"}}}  # fmt: skip
    shown = canonical(spec)["measures"]["a"]
    assert list(shown) == ["server", "table", "columns", "where", "time_column", "minutes",
                           "reduce", "across"]  # fmt: skip
    assert "column" not in shown  # not a null column beside them: the model copies what it sees
    one = canonical({**spec, "measures": {"a": {"server": "plant", "table": "readings",
                                                "reduce": "count"}}})  # fmt: skip
    assert one["measures"]["a"]["column"] is None
