"""`sopgraph mcp serve` driven by real MCP clients: the official Python client over stdio and
streamable HTTP, and the MCP Inspector's CLI (a third-party client, from the npm registry)."""

from __future__ import annotations

import getpass
import json
import os
import shutil
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from fc_world import fc_home, fc_world  # noqa: F401
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from sop_factory import make_sop

from sopgraph.evals.fc_triage.dataset import load_scenarios
from sopgraph.graphs.loader import load_sop

REPO = Path(__file__).resolve().parents[2]
TRIAGE = "fc_outbound_dock_triage"
TRIAGE_DIR = REPO / "examples" / "fc_alarm_triage"
SERVICE = "service_interruption_handling"
SERVICE_DIR = REPO / "examples" / "service_interruption"
INSPECTOR_VERSION = "2.12.0"
INSPECTOR_DIR = Path.home() / ".cache" / "sopgraph" / "inspector"

GATED = {
    "id": "gated_demo",
    "title": "Gated demo",
    "entry": {"alarm": ["check"]},
    "nodes": {
        "check": {
            "kind": "observation",
            "text": "The robot is faulted.",
            "next": {"true": ["act_restart"]},
        },
        "act_restart": {
            "kind": "action",
            "text": "Restart the robot.",
            "cost": "high",
            "approval": "required",
            "next": {"true": ["act_confirm"], "false": ["act_notify"]},
        },
        "act_confirm": {"kind": "action", "text": "Confirm the robot is back."},
        "act_notify": {"kind": "action", "text": "Notify the shift lead."},
    },
}
GATED_TOOLS = {"check": 'return Verdict(value=ctx.input["robot"] == "r1")'}
TOOLS = {"list_sops", "describe_sop", "run_sop", "get_run", "resume_run"}


@pytest.fixture
def server_env(tmp_path) -> dict[str, str]:
    sops = tmp_path / "sops"
    make_sop(sops / "gated_demo", GATED, GATED_TOOLS)
    home = tmp_path / "home"
    home.mkdir()
    return {**os.environ, "SOPGRAPH_HOME": str(home), "SOPGRAPH_SOPS": str(sops)}


def _stdio(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "sopgraph", "mcp", "serve"], env=env, cwd=str(REPO)
    )


@asynccontextmanager
async def stdio_session(env: dict[str, str]):
    async with stdio_client(_stdio(env)) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        yield s


def _call_json(result) -> dict:
    assert not result.isError, result.content
    return result.structuredContent


async def _error(session: ClientSession, tool: str, args: dict) -> str:
    result = await session.call_tool(tool, args)
    assert result.isError, result
    (text,) = [c.text for c in result.content]
    assert "\n" not in text and "Traceback" not in text, text
    return text


async def _gate(session: ClientSession, run_id: str) -> str:
    """The interrupt id of the gated action run ``run_id`` waits on (what resume_run names)."""
    (pending,) = _call_json(await session.call_tool("get_run", {"run_id": run_id}))["pending"]
    return pending["id"]


async def _catalog_checks(session: ClientSession) -> None:
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == TOOLS
    for name in ("list_sops", "describe_sop", "get_run"):
        assert tools[name].annotations.readOnlyHint is True, name
    assert tools["run_sop"].annotations.readOnlyHint is False
    # both tools that perform the SOP's actions say so
    assert tools["run_sop"].annotations.destructiveHint is True
    assert tools["resume_run"].annotations.destructiveHint is True
    assert all(len(t.description) > 80 for t in tools.values())
    assert tools["run_sop"].inputSchema["properties"]["approval"]["enum"] == [
        "ask",
        "approve",
        "reject",
    ]

    sops = {s["id"]: s for s in _call_json(await session.call_tool("list_sops", {}))["result"]}
    assert sops["gated_demo"]["gated_actions"] == 1 and sops["gated_demo"]["action_nodes"] == 3
    assert sops[SERVICE]["entry_types"] == ["default"]

    info = _call_json(await session.call_tool("describe_sop", {"sop_id": "gated_demo"}))
    assert info["gated_actions"] == ["act_restart"]
    assert info["entries"] == [
        {
            "type": "alarm",
            "entry_nodes": ["check"],
            "required_fields": ["robot"],
            "optional_fields": ["site", "timestamp"],
            "example_input": {"robot": "<robot>"},
        }
    ]
    service = _call_json(await session.call_tool("describe_sop", {"sop_id": SERVICE}))
    assert service["entries"][0]["required_fields"] == ["case_id"]
    assert service["input_schema"]["required"] == ["case_id"]
    # the published example input runs as it is
    example = service["entries"][0]["example_input"]
    run = _call_json(await session.call_tool("run_sop", {"sop_id": SERVICE, "input": example}))
    assert run["status"] == "done", run
    assert "input field 'case_id' is required" in await _error(
        session, "run_sop", {"sop_id": SERVICE, "input": {}}
    )

    uris = {str(r.uri) for r in (await session.list_resources()).resources}
    assert {f"sop://{SERVICE}/text", f"sop://{SERVICE}/mermaid", "sop://gated_demo/text"} <= uris
    templates = {t.uriTemplate for t in (await session.list_resource_templates()).resourceTemplates}
    assert templates == {"sop://{sop_id}/text", "sop://{sop_id}/mermaid"}
    text = await session.read_resource(f"sop://{SERVICE}/text")
    assert text.contents[0].text == (SERVICE_DIR / "sop.yaml").read_text()
    from sopgraph.graphs.drawing import to_mermaid

    mermaid = await session.read_resource(f"sop://{SERVICE}/mermaid")
    assert mermaid.contents[0].text == to_mermaid(load_sop(SERVICE_DIR))


async def _run_checks(session: ClientSession, approver: str, client_approval: bool = False) -> str:
    """Runs, fetches and resumes; returns the id of a run left interrupted.

    ``approver``: who the server records as answering (the token's identity over HTTP, the OS
    user over stdio). ``client_approval``: the server runs with ``--approval client`` (the
    operator lets clients decide gated actions by policy); by default it asks, and refuses a
    client's policy.
    """
    progress: list[tuple[float, str]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message))

    result = await session.call_tool(
        "run_sop",
        {"sop_id": SERVICE, "input": {"case_id": "leaf_03"}},
        progress_callback=on_progress,
    )
    run = _call_json(result)
    assert run["status"] == "done" and run["run_id"].startswith(f"{SERVICE}:")
    assert run["path"] == [
        "service_interruption_handle",
        "authenticate_customer",
        "verify_customer_account",
        "check_area_outages",
        "check_outage_resolution_time",
        "apologize_inconvenience_assure_customer_company",
    ]
    # One notification per executed node, in order, naming the node.
    assert [d for d, _ in progress] == list(range(1, len(run["path"]) + 1))
    assert [m.split(":")[0] for _, m in progress] == run["path"]

    fetched = _call_json(
        await session.call_tool("get_run", {"run_id": run["run_id"], "include_trail": True})
    )
    assert fetched["path"] == run["path"] and fetched["status"] == "done"
    assert [s["node"] for s in fetched["trail"]] == run["path"]

    for decision, tail in (("approve", "act_confirm"), ("reject", "act_notify")):
        paused = _call_json(
            await session.call_tool("run_sop", {"sop_id": "gated_demo", "input": {"robot": "r1"}})
        )
        assert paused["status"] == "interrupted" and paused["path"] == ["check"]
        assert [p["node"] for p in paused["pending"]] == ["act_restart"]
        assert "resume_run" in paused["next_step"]
        got = _call_json(await session.call_tool("get_run", {"run_id": paused["run_id"]}))
        assert got["status"] == "interrupted"
        gate = paused["pending"][0]["id"]
        answer = {"run_id": paused["run_id"], "decision": decision, "interrupt_id": gate}
        done = _call_json(await session.call_tool("resume_run", answer))
        assert done["status"] == "done" and done["path"] == ["check", "act_restart", tail]
        restart = next(a for a in done["actions"] if a["node"] == "act_restart")
        assert restart["approved"] is (decision == "approve") and restart["by"] == "human"
        assert restart["approver"] == approver, restart  # not the client's own name ("mcp")
        assert "not waiting for a decision" in await _error(
            session, "resume_run", {**answer, "decision": "approve"}
        )

    by_policy = {"sop_id": "gated_demo", "input": {"robot": "r1"}, "approval": "approve"}
    if client_approval:
        policy = _call_json(await session.call_tool("run_sop", by_policy))
        assert policy["status"] == "done" and policy["path"][-1] == "act_confirm"
        restart = next(a for a in policy["actions"] if a["node"] == "act_restart")
        assert restart["by"] == "policy:approve" and restart["approver"] == approver
    else:  # a client cannot approve a costly action by itself unless the operator allows it
        assert "approval 'approve' is not allowed: this server's approval policy is 'ask'" in (
            await _error(session, "run_sop", by_policy)
        )

    assert "unknown SOP id 'nope'" in await _error(
        session, "run_sop", {"sop_id": "nope", "input": {}}
    )
    assert "unknown input type 'x'" in await _error(
        session, "run_sop", {"sop_id": "gated_demo", "input": {"type": "x"}}
    )
    assert "no run 'gated_demo:missing'" in await _error(
        session, "get_run", {"run_id": "gated_demo:missing"}
    )
    assert "<sop_id>:<thread_id>" in await _error(session, "get_run", {"run_id": "plain"})
    assert "argument 'input': Input should be a valid dictionary" in await _error(
        session, "run_sop", {"sop_id": "gated_demo", "input": "not an object"}
    )

    left = _call_json(
        await session.call_tool(
            "run_sop", {"sop_id": "gated_demo", "input": {"robot": "r1"}, "thread_id": "later"}
        )
    )
    assert left["run_id"] == "gated_demo:later" and left["status"] == "interrupted"
    return left["run_id"]


async def test_stdio_official_client(server_env):
    async with stdio_session(server_env) as session:
        await _catalog_checks(session)
        paused = await _run_checks(session, getpass.getuser())
    # A new server process resumes the run the first one left paused: checkpoints are durable.
    async with stdio_session(server_env) as session:
        done = _call_json(
            await session.call_tool(
                "resume_run",
                {
                    "run_id": paused,
                    "decision": "approve",
                    "interrupt_id": await _gate(session, paused),
                },
            )
        )
        assert done["status"] == "done" and done["path"] == ["check", "act_restart", "act_confirm"]


async def test_a_hostile_sop_on_the_search_path_is_skipped_in_one_line(server_env, tmp_path):
    """An SOP nested 100,000 deep on SOPGRAPH_SOPS (libyaml stops at 1,000 with an error of its
    own, the pure parser recursed) used to kill the server at start-up: now it is one warning
    line and the other SOPs are served."""
    deep = Path(server_env["SOPGRAPH_SOPS"]) / "deep"
    deep.mkdir()
    (deep / "sop.yaml").write_text("id: deep\nentry: " + "[" * 100_000 + "]" * 100_000 + "\n")
    errlog = tmp_path / "stderr.txt"
    with errlog.open("w") as err:
        async with (
            stdio_client(_stdio(server_env), errlog=err) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = _call_json(await session.call_tool("list_sops", {}))["result"]
    assert "gated_demo" in {s["id"] for s in listed} and "deep" not in {s["id"] for s in listed}
    warnings = [line for line in errlog.read_text().splitlines() if "deep" in line]
    assert len(warnings) == 1 and warnings[0].startswith(f"warning: skipped {deep}"), warnings
    assert "nested more than 64 levels deep" in warnings[0]
    assert "Traceback" not in errlog.read_text()


async def test_stdio_triage_alarm_pauses_and_resumes_approved(fc_world, fc_home, tmp_path):  # noqa: F811
    # An alarm of the test world whose faithful triage reaches exactly one gated action.
    sop = load_sop(TRIAGE_DIR)
    gated = {n for n, node in sop.nodes.items() if node.approval == "required"}
    scenarios = load_scenarios(fc_world.scenarios)
    alarm = next(s for s in scenarios if len(gated & set(s.actions)) == 1)
    env = {**os.environ, "SOPGRAPH_HOME": str(fc_home), "SOPGRAPH_SOPS": str(TRIAGE_DIR)}
    checkpoint = ["--checkpoint", str(tmp_path / "checkpoints.sqlite")]
    params = _stdio(env)
    params.args += checkpoint
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        # the example describe_sop publishes runs against the world as it is
        info = _call_json(await session.call_tool("describe_sop", {"sop_id": TRIAGE}))
        for entry in info["entries"][:2]:
            run = _call_json(
                await session.call_tool(
                    "run_sop", {"sop_id": TRIAGE, "input": entry["example_input"]}
                )
            )
            assert run["status"] in ("done", "interrupted") and not run["unresolved"], run
        for missing in ("station", "timestamp", "site"):
            flat = {k: v for k, v in alarm.input.items() if k != missing}
            flat["type"] = "station_idle"
            assert f"input field '{missing}' is required" in await _error(
                session, "run_sop", {"sop_id": TRIAGE, "input": flat}
            )
        paused = _call_json(
            await session.call_tool("run_sop", {"sop_id": TRIAGE, "input": alarm.input})
        )
        assert paused["status"] == "interrupted", paused["unresolved"]
        (pending,) = paused["pending"]
        assert pending["node"] in alarm.actions and pending["node"] in gated
        done = _call_json(
            await session.call_tool(
                "resume_run",
                {"run_id": paused["run_id"], "decision": "approve", "interrupt_id": pending["id"]},
            )
        )
    assert done["status"] == "done" and done["run_id"] == paused["run_id"]
    assert done["path"][: len(paused["path"])] == paused["path"]
    assert pending["node"] in done["path"][len(paused["path"]) :]
    decided = {n: v["value"] for n, v in done["verdicts"].items() if sop.nodes[n].kind != "action"}
    assert decided == alarm.verdicts
    assert sorted(a["node"] for a in done["actions"]) == sorted(alarm.actions)
    action = next(a for a in done["actions"] if a["node"] == pending["node"])
    assert action["approved"] is True and action["by"] == "human"
    assert action["status"] == "executed"


async def test_streamable_http_official_client(http_serve, server_env, tokens):
    server = http_serve(server_env, "--approval", "client")
    alice = tokens.by_identity["alice@example.com"]
    async with server.session(alice) as s:
        await _catalog_checks(s)
        paused = await _run_checks(s, "alice@example.com", client_approval=True)
        # over the 4 MB the transport used to refuse (HTTP 413): one tool error, not a
        # transport error
        big = {"robot": "r1", "blob": "x" * (5 * 1024 * 1024)}
        assert "run input is over 1024 KB (the limit)" in await _error(
            s, "run_sop", {"sop_id": "gated_demo", "input": big}
        )
    # A second client session of the same server, another identity, sees the first one's runs.
    async with server.session(tokens.by_identity["bob"]) as s:
        assert (
            _call_json(await s.call_tool("get_run", {"run_id": paused}))["status"] == "interrupted"
        )
        answer = {"run_id": paused, "decision": "reject", "interrupt_id": await _gate(s, paused)}
        done = _call_json(await s.call_tool("resume_run", answer))
        assert done["path"] == ["check", "act_restart", "act_notify"]
        assert done["actions"][0]["approver"] == "bob"


@pytest.fixture(scope="session")
def inspector() -> Path:
    """The MCP Inspector from the npm registry, installed once into a cache outside the repo."""
    if shutil.which("npx") is None:
        pytest.fail("the MCP Inspector test needs Node.js (npm/npx): apt-get install nodejs npm")
    launcher = (
        INSPECTOR_DIR / "node_modules" / "@modelcontextprotocol" / "inspector" / "package.json"
    )
    if not launcher.exists() or json.loads(launcher.read_text())["version"] != INSPECTOR_VERSION:
        INSPECTOR_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(INSPECTOR_DIR),
                "--no-audit",
                "--no-fund",
                f"@modelcontextprotocol/inspector@{INSPECTOR_VERSION}",
            ],
            check=True,
            capture_output=True,
            timeout=600,
        )
    return INSPECTOR_DIR


def _inspect(inspector: Path, env: dict[str, str], *method: str) -> dict:
    # The Inspector starts the server with a minimal environment: pass ours explicitly.
    passed = [a for k in ("SOPGRAPH_HOME", "SOPGRAPH_SOPS") for a in ("-e", f"{k}={env[k]}")]
    proc = subprocess.run(
        [
            "npx",
            "--prefix",
            str(inspector),
            "mcp-inspector",
            "--cli",
            # The server imports LangGraph, DSPy and the MCP SDK before it answers: on a loaded
            # 2-core machine that passes the Inspector's 15 s default.
            "--connect-timeout",
            "120000",
            *passed,
            sys.executable,
            "-m",
            "sopgraph",
            "mcp",
            "serve",
            *method,
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow  # three server starts under Node: about 30 s
def test_mcp_inspector_cli(inspector, server_env):
    listed = _inspect(inspector, server_env, "--method", "tools/list")
    assert {t["name"] for t in listed["tools"]} == TOOLS
    called = _inspect(inspector, server_env, "--method", "tools/call", "--tool-name", "list_sops")
    ids = {s["id"] for s in called["structuredContent"]["result"]}
    assert {"gated_demo", SERVICE} <= ids
    run = _inspect(
        inspector,
        server_env,
        "--method",
        "tools/call",
        "--tool-name",
        "run_sop",
        "--tool-arg",
        "sop_id=gated_demo",
        "--tool-arg",
        'input={"robot": "r2"}',
    )
    assert run["structuredContent"]["status"] == "done"
    assert run["structuredContent"]["verdicts"]["check"]["value"] == "false"
