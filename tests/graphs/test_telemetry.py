"""Traces of traversals: span tree, GenAI/MCP names and attributes, OTLP/HTTP export, console tree."""

from __future__ import annotations

import gzip
import http.server
import json
import threading
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sop_factory import make_sop

from sopgraph.graphs import run_spans, telemetry
from sopgraph.runtime.runner import Session

SERVER = Path(__file__).resolve().parents[1] / "servers" / "echo_metrics.py"

SOP = {
    "id": "traced",
    "params": {"idle_pct_threshold": 25},
    "entry": {"station_idle": ["obs_station_idle"]},
    "nodes": {
        "obs_station_idle": {
            "kind": "observation",
            "text": "idle more than {idle_pct_threshold}%",
            "next": {"true": ["rc_robot_fault", "rc_upstream_blockage"]},
        },
        "rc_robot_fault": {
            "kind": "root_cause",
            "text": "a robot reports faults",
            "next": {"true": ["never_reached"], "false": ["act_process_alert"]},
        },
        "rc_upstream_blockage": {"kind": "root_cause", "text": "upstream is blocked"},
        "act_process_alert": {"kind": "action", "text": "process the alert"},
        "never_reached": {"kind": "constraint", "text": "not on this path"},
    },
}
TOOLS = {
    "obs_station_idle": """
r = await ctx.mcp.call("metrics", "execute_range_query",
                       {"metric": "robotics.station_idle_pct", "site": input["site"]})
limit = ctx.params["idle_pct_threshold"]
return Verdict(value=r["value"] > limit, observed=r["value"], threshold=limit)
""",
    "rc_robot_fault": """
await ctx.mcp.call("metrics", "list_metrics", {})
r = await ctx.mcp.call("metrics", "execute_range_query",
                       {"metric": "robotics.fault_count", "site": input["site"]})
return Verdict(value=r["value"] > 0, observed={"faults": r["value"], "traceparent": r["traceparent"]})
""",
    "rc_upstream_blockage": """
await ctx.mcp.call("metrics", "broken_query", {"metric": "conveyor.flow"})
""",
}
EXECUTED = {"obs_station_idle", "rc_robot_fault", "rc_upstream_blockage", "act_process_alert"}
MCP_CALLS = {
    "obs_station_idle": ["tools/call execute_range_query"],
    "rc_robot_fault": ["tools/call list_metrics", "tools/call execute_range_query"],
    "rc_upstream_blockage": ["tools/call broken_query"],
    "act_process_alert": [],
}
INPUT = {"type": "station_idle", "site": "fc1", "timestamp": "2025-01-01T00:00:00Z"}


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    for var in ("OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"):
        monkeypatch.delenv(var, raising=False)
    yield
    telemetry.shutdown_tracing()


def _sop(tmp_path: Path) -> Path:
    root = make_sop(tmp_path / "sop", SOP, TOOLS)
    servers = {"metrics": {"command": "python", "args": [str(SERVER)]}}
    (root / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return root


async def _traverse(tmp_path: Path, thread_id: str = "t-1"):
    async with Session(_sop(tmp_path), approval="approve") as s:
        return await s.run(INPUT, thread_id=thread_id)


def _from_sdk(spans) -> list[dict]:
    return [
        {
            "name": s.name,
            "id": s.context.span_id,
            "trace": s.context.trace_id,
            "parent": s.parent.span_id if s.parent else None,
            "attrs": dict(s.attributes or {}),
            "error": s.status.status_code.name == "ERROR",
            "start": s.start_time,
        }
        for s in spans
    ]


def check_tree(spans: list[dict], thread_id: str) -> None:
    """One root, one span per executed node under it, MCP calls under their node."""
    assert len({s["trace"] for s in spans}) == 1
    roots = [s for s in spans if s["parent"] is None]
    assert len(roots) == 1, [s["name"] for s in roots]
    root = roots[0]
    assert root["name"] == "invoke_workflow traced"
    assert root["attrs"]["gen_ai.operation.name"] == "invoke_workflow"
    assert root["attrs"]["gen_ai.workflow.name"] == "traced"
    assert root["attrs"]["gen_ai.conversation.id"] == thread_id
    assert root["attrs"]["sopgraph.input.type"] == "station_idle"
    assert root["attrs"]["sopgraph.run.status"] == "unresolved"

    nodes = {s["attrs"]["sopgraph.node.id"]: s for s in spans if s["parent"] == root["id"]}
    assert set(nodes) == EXECUTED
    assert len([s for s in spans if "sopgraph.node.kind" in s["attrs"]]) == len(EXECUTED)
    for node_id, span in nodes.items():
        calls = sorted((s for s in spans if s["parent"] == span["id"]), key=lambda s: s["start"])
        assert [c["name"] for c in calls] == MCP_CALLS[node_id], node_id
        for call in calls:
            assert call["attrs"]["mcp.method.name"] == "tools/call"
            assert call["attrs"]["gen_ai.operation.name"] == "execute_tool"
            assert call["attrs"]["gen_ai.tool.name"] == call["name"].split()[1]
            assert call["attrs"]["sopgraph.mcp.server"] == "metrics"
            assert call["error"] is (call["name"] == "tools/call broken_query")

    obs = nodes["obs_station_idle"]
    assert obs["name"] == "execute_tool obs_station_idle"
    assert obs["attrs"]["gen_ai.operation.name"] == "execute_tool"
    assert obs["attrs"]["gen_ai.tool.name"] == "obs_station_idle"
    assert obs["attrs"]["sopgraph.node.kind"] == "observation"
    assert obs["attrs"]["sopgraph.tool.version"] == 1
    assert obs["attrs"]["sopgraph.executor"] == "tool"
    assert obs["attrs"]["sopgraph.verdict"] == "true"
    assert obs["attrs"]["sopgraph.observed"] == 31.2
    assert obs["attrs"]["sopgraph.threshold"] == 25
    assert not obs["error"]

    fault = nodes["rc_robot_fault"]
    assert fault["attrs"]["sopgraph.verdict"] == "false"
    observed = json.loads(fault["attrs"]["sopgraph.observed"])
    assert observed["faults"] == 0
    # the server saw the traceparent of the MCP span that called it, in params._meta
    query = next(s for s in spans if s["parent"] == fault["id"] and "range" in s["name"])
    assert observed["traceparent"].split("-")[2] == f"{query['id']:016x}"

    broken = nodes["rc_upstream_blockage"]
    assert broken["error"] and broken["attrs"]["sopgraph.verdict"] == "unresolved"
    assert broken["name"] == "sopgraph.node rc_upstream_blockage"

    act = nodes["act_process_alert"]
    assert act["name"] == "sopgraph.action act_process_alert"
    assert act["attrs"]["sopgraph.action.status"] == "executed"


async def test_trace_tree_in_memory(tmp_path):
    exporter = InMemorySpanExporter()
    telemetry.setup_tracing(exporter=exporter)
    result = await _traverse(tmp_path, "t-mem")
    assert set(result.path) == EXECUTED
    check_tree(_from_sdk(exporter.get_finished_spans()), "t-mem")


GATED = {
    "id": "gated",
    "entry": {"alarm": ["check"]},
    "nodes": {
        "check": {"kind": "observation", "text": "check", "next": {"true": ["standby"]}},
        "standby": {
            "kind": "action",
            "text": "standby",
            "cost": "high",
            "approval": "required",
            "next": {"true": ["confirm"]},
        },
        "confirm": {"kind": "action", "text": "confirm"},
    },
}


async def test_resumed_traversal_continues_the_paused_invocations_trace(tmp_path):
    exporter = InMemorySpanExporter()
    telemetry.setup_tracing(exporter=exporter)
    root = make_sop(tmp_path / "sop", GATED, {"check": "return Verdict(value=True)"})
    checkpoint = tmp_path / "cp.sqlite"
    async with Session(root, mcp=False, checkpoint=checkpoint) as s:
        paused = await s.run({"type": "alarm"}, thread_id="t-gate")
    first = exporter.get_finished_spans()
    exporter.clear()
    async with Session(root, mcp=False, checkpoint=checkpoint) as s:  # as a new process would
        done = await s.resume("t-gate", "approve", interrupt_id=paused.interrupt["id"])
    second = exporter.get_finished_spans()
    assert paused.status == "interrupted" and done.status == "done"

    def by_name(spans):
        return {s.name: s for s in spans}

    a, b = by_name(first), by_name(second)
    root_a, root_b = a["invoke_workflow gated"], b["invoke_workflow gated"]
    assert root_a.attributes["sopgraph.invocation"] == "start"
    assert root_a.attributes["sopgraph.run.status"] == "interrupted"
    assert root_b.attributes["sopgraph.invocation"] == "resume"
    assert root_b.attributes["gen_ai.conversation.id"] == "t-gate"
    assert [link.context.span_id for link in root_b.links] == [root_a.context.span_id]
    # one trace: the resumed root is the paused root's child
    assert root_b.context.trace_id == root_a.context.trace_id
    assert root_b.parent.span_id == root_a.context.span_id and root_a.parent is None
    assert root_a.attributes["openinference.span.kind"] == "CHAIN"
    assert json.loads(root_a.attributes["input.value"]) == {"type": "alarm"}
    out_a, out_b = (json.loads(r.attributes["output.value"]) for r in (root_a, root_b))
    assert out_a == {"status": "interrupted", "path": paused.path}
    assert out_b == {"status": "done", "path": done.path} and done.path[-1] == "confirm"
    paused_action = a["sopgraph.action standby"]
    assert paused_action.attributes["sopgraph.interrupted"] is True
    assert paused_action.status.status_code.name != "ERROR"
    assert {"sopgraph.action standby", "sopgraph.action confirm"} <= set(b)
    assert all(s.parent.span_id == root_b.context.span_id for s in second if s is not root_b)
    assert all(s.context.trace_id == root_a.context.trace_id for s in second)


class _Receiver(http.server.BaseHTTPRequestHandler):
    requests: list[ExportTraceServiceRequest] = []
    paths: list[str] = []

    def do_POST(self):  # noqa: N802 - http.server's naming
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        msg = ExportTraceServiceRequest()
        msg.ParseFromString(body)
        type(self).requests.append(msg)
        type(self).paths.append(self.path)
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")  # the exporter honours proxy variables
    _Receiver.requests, _Receiver.paths = [], []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Receiver
    server.shutdown()
    server.server_close()
    thread.join()


def _value(any_value):
    return getattr(any_value, any_value.WhichOneof("value"))


def _from_otlp(requests) -> tuple[list[dict], list[dict]]:
    spans, resources = [], []
    for req in requests:
        for rs in req.resource_spans:
            resources.append({a.key: _value(a.value) for a in rs.resource.attributes})
            for ss in rs.scope_spans:
                for s in ss.spans:
                    spans.append(
                        {
                            "name": s.name,
                            "id": int.from_bytes(s.span_id, "big"),
                            "trace": s.trace_id,
                            "parent": int.from_bytes(s.parent_span_id, "big") or None,
                            "attrs": {a.key: _value(a.value) for a in s.attributes},
                            "error": s.status.code == s.status.STATUS_CODE_ERROR,
                            "start": s.start_time_unix_nano,
                        }
                    )
    return spans, resources


async def test_trace_exported_over_otlp_http(tmp_path, monkeypatch, receiver):
    url, handler = receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "sopgraph-test")
    assert telemetry.setup_tracing("otlp") is not None
    await _traverse(tmp_path, "t-otlp")
    telemetry.shutdown_tracing()  # flushes the batch
    spans, resources = _from_otlp(handler.requests)
    assert set(handler.paths) == {"/v1/traces"}
    assert {r["service.name"] for r in resources} == {"sopgraph-test"}
    check_tree(spans, "t-otlp")


def test_standard_variables_choose_the_exporter_and_endpoint(monkeypatch, receiver):
    url, handler = receiver
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{url}/custom/traces")
    assert telemetry.setup_tracing() is not None
    with run_spans.workflow_span("env_sop", "t-env", "start"):
        pass
    telemetry.shutdown_tracing()
    spans, resources = _from_otlp(handler.requests)
    assert handler.paths == ["/custom/traces"]
    assert [s["name"] for s in spans] == ["invoke_workflow env_sop"]
    assert resources[0]["service.name"] == "sopgraph"


async def test_console_prints_the_tree(tmp_path, capsys):
    telemetry.setup_tracing("console")
    await _traverse(tmp_path, "t-console")
    telemetry.shutdown_tracing()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("invoke_workflow traced status=unresolved")
    obs = lines.index(next(x for x in lines if "obs_station_idle" in x))
    assert lines[obs].startswith(
        "  execute_tool obs_station_idle v1 verdict=true observed=31.2 threshold=25 "
    )
    assert lines[obs].endswith(" ms")
    assert lines[obs + 1].startswith("    tools/call execute_range_query ")
    assert any(x.startswith("    tools/call broken_query ERROR") for x in lines)
    assert any(x.startswith("  sopgraph.action act_process_alert action=executed") for x in lines)


def test_tracing_off_by_default_and_unknown_mode_is_one_line(monkeypatch):
    assert telemetry.setup_tracing() is None and not telemetry.enabled()
    with run_spans.node_span("n", "observation") as span:
        assert not span.is_recording()
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert telemetry.setup_tracing() is None
    with pytest.raises(telemetry.TelemetryError, match="use one of: console, otlp"):
        telemetry.setup_tracing("jaeger")


def test_attr_values_are_scalars_or_json():
    assert telemetry.attr_value(31.2) == 31.2
    assert telemetry.attr_value({"b": 1, "a": [1, 2]}) == '{"a": [1, 2], "b": 1}'
    assert telemetry.attr_value("x" * 5000).endswith("…")


def test_agent_and_chat_spans_carry_usage():
    exporter = InMemorySpanExporter()
    telemetry.setup_tracing(exporter=exporter)
    with run_spans.node_span("rc_robot_fault", "root_cause"):
        with telemetry.agent_span("codeact", "rc_robot_fault") as agent:
            for tokens in (120, 80):
                with telemetry.chat_span("smollm2-135m", "openai") as chat:
                    telemetry.record_usage(chat, tokens, 10)
            telemetry.record_usage(agent, 200, 20, model="smollm2-135m", provider="openai")
    spans = {s.name: s for s in exporter.get_finished_spans()}
    node, agent, chat = (
        spans["sopgraph.node rc_robot_fault"],
        spans["invoke_agent codeact"],
        spans["chat smollm2-135m"],
    )
    assert agent.parent.span_id == node.context.span_id
    assert chat.parent.span_id == agent.context.span_id
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.agent.name"] == "codeact"
    assert agent.attributes["gen_ai.usage.input_tokens"] == 200
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.provider.name"] == "openai"
    assert chat.attributes["gen_ai.usage.output_tokens"] == 10
    assert chat.kind.name == "CLIENT"


def test_console_tree_escapes_what_servers_wrote():
    """Observed values and error texts come from MCP servers: the console tree shows their
    control characters as escapes, so a server cannot forge or erase lines of the tree."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import Status, StatusCode

    from sopgraph.graphs.trace_tree import format_tree

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("t").start_as_current_span("execute_tool obs") as span:
        span.set_attribute("sopgraph.observed", "31\x1b[2K\rcontained 99/99\u2028")
        span.set_status(Status(StatusCode.ERROR, "boom\x07\x1b]0;title\x07"))
    tree = format_tree(exporter.get_finished_spans())
    assert not any(ch in tree for ch in "\x1b\r\x07\u2028"), repr(tree)
    assert "contained 99/99" in tree and len(tree.splitlines()) == 1
