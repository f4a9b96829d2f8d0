"""The SOP folder's data servers (issue 27, finding 3): ``mcp.json`` in the ``mcpServers`` shape
MCP clients use, placeholders and ``${VAR}`` expansion, headers that reach a real HTTP server,
the deprecated ``mcp.yaml`` and ``sopgraph mcp convert``."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kill_resume import stop
from sop_factory import make_sop

from sopgraph.cli import main
from sopgraph.graphs.problems import SopError
from sopgraph.nodes.mcp import McpError, McpPool, load_server_configs
from sopgraph.nodes.ports import free_port

REPO = Path(__file__).resolve().parents[2]
BEARER_ECHO = REPO / "tests" / "servers" / "bearer_echo.py"


def _write(root: Path, name: str, data: dict | str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def test_mcp_json_in_the_mcp_servers_shape_is_read(tmp_path, monkeypatch):
    """stdio and HTTP servers as Claude Desktop and Cursor write them, with the placeholders,
    ``${VAR}`` (set, unset with a default) and a relative cwd, all expanded."""
    home = tmp_path / "home"
    monkeypatch.setenv("SOPGRAPH_HOME", str(home))
    monkeypatch.setenv("METRICS_TOKEN", "s3cret-token")
    monkeypatch.delenv("METRICS_REGION", raising=False)
    sop = tmp_path / "sop"
    _write(
        sop,
        "mcp.json",
        {
            "$comment": "the data servers of this SOP",
            "mcpServers": {
                "metrics": {
                    "command": "python",
                    "args": ["-m", "my_metrics", "--db", "{home}/m.duckdb", "{sop_dir}/x.json"],
                    "env": {"API_KEY": "${METRICS_TOKEN}", "REGION": "${METRICS_REGION:-eu}"},
                    "cwd": "data",
                },
                "remote": {
                    "url": "http://127.0.0.1:9/mcp",
                    "headers": {"Authorization": "Bearer ${METRICS_TOKEN}", "X-Tenant": "acme"},
                },
                "legacy_sse": {"url": "http://127.0.0.1:9/sse", "transport": "sse"},
            },
        },
    )
    servers = load_server_configs(sop)
    assert list(servers) == ["metrics", "remote", "legacy_sse"]
    m = servers["metrics"]
    assert m.command == sys.executable
    assert m.args == ["-m", "my_metrics", "--db", f"{home}/m.duckdb", f"{sop.resolve()}/x.json"]
    assert m.env == {"API_KEY": "s3cret-token", "REGION": "eu"}
    assert m.cwd == str(sop.resolve() / "data")
    r = servers["remote"]
    assert r.headers == {"Authorization": "Bearer s3cret-token", "X-Tenant": "acme"}
    assert r.http_transport == "streamable_http" and servers["legacy_sse"].http_transport == "sse"


def test_a_claude_code_dot_mcp_json_is_reused(tmp_path):
    """``.mcp.json`` as Claude Code writes it (``"type": "stdio" | "http" | "sse"``)."""
    _write(
        tmp_path,
        ".mcp.json",
        {
            "mcpServers": {
                "local": {"type": "stdio", "command": "uvx", "args": ["some-server"], "env": {}},
                "api": {"type": "http", "url": "https://mcp.example.com/mcp"},
                "old": {"type": "sse", "url": "https://mcp.example.com/sse"},
            }
        },
    )
    servers = load_server_configs(tmp_path)
    assert servers["local"].command == "uvx" and servers["local"].transport == "stdio"
    assert servers["api"].http_transport == "streamable_http"
    assert servers["old"].http_transport == "sse"


def test_legacy_mcp_yaml_is_read_with_one_deprecation_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    _write(
        tmp_path,
        "mcp.yaml",
        "servers:\n  cs:\n    command: python\n    args: [-m, cs, --cases, '{sop_dir}/c.json']\n",
    )
    for _ in range(3):  # every Session, tool-maker and eval reads it: one line per process
        servers = load_server_configs(tmp_path)
    assert servers["cs"].args == ["-m", "cs", "--cases", f"{tmp_path.resolve()}/c.json"]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"warning: {tmp_path / 'mcp.yaml'}: ")
    assert "deprecated" in err and f"sopgraph mcp convert {tmp_path}" in err


@pytest.mark.parametrize(
    "files",
    [("mcp.json", "mcp.yaml"), ("mcp.json", ".mcp.json"), (".mcp.json", "mcp.yaml")],
)
def test_two_server_files_are_one_error(tmp_path, files):
    _write(tmp_path, files[0], {"mcpServers": {}})
    other = {"servers": {}} if files[1] == "mcp.yaml" else {"mcpServers": {}}
    _write(tmp_path, files[1], other)
    with pytest.raises(SopError) as info:
        load_server_configs(tmp_path)
    (problem,) = info.value.problems
    assert f"{files[0]} and {files[1]} both configure servers" in str(problem)
    assert str(problem).startswith(f"error: {tmp_path / files[0]}:1:")


@pytest.mark.parametrize(
    "text,says",
    [
        ('{"mcpServers": {\n  "a": {"command": "x",}\n}}', ":2: -: not valid JSON"),
        ('{"servers": {"a": {"command": "x"}}}', ":1: -: the file must be an object with"),
        ('{"mcpServers": {}, "mcpservers": {}}', ":1: -: unknown key 'mcpservers'"),
        (
            '{"mcpServers": {\n "a": {"command": "x",\n  "url": "http://h/mcp"}}}',
            ":2: -: server a: give either 'command' (stdio) or 'url' (HTTP), not both",
        ),
        ('{"mcpServers": {"a": {}}}', "server a: give 'command' (stdio) or 'url' (HTTP)"),
        (
            '{"mcpServers": {\n "a": {"command": "x",\n  "headers": {"A": "b"}}}}',
            ":2: -: server a: 'headers' are for HTTP servers",
        ),
        (
            '{"mcpServers": {\n "a": {\n  "url": "http://h/mcp",\n  "transport": "websocket"}}}',
            ":4: -: server a.transport: Input should be",
        ),
        (
            '{"mcpServers": {\n "a": {\n  "url": "http://h/mcp",\n  "bogus": 1}}}',
            ":4: -: server a.bogus: Extra inputs are not permitted",
        ),
        (
            '{"mcpServers": {\n "a": {"url": "http://h/mcp",\n  "headers": {\n'
            '   "Authorization": "Bearer ${NO_SUCH_TOKEN_VAR}"}}}}',
            ":4: -: server a.headers.Authorization: environment variable NO_SUCH_TOKEN_VAR is "
            "not set; export it, or write ${NO_SUCH_TOKEN_VAR:-default}",
        ),
        ('{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}', "'a' is given twice"),
        ('{"mcpServers": ' + "[" * 100_000 + "]" * 100_000 + "}", ":1: -: nested too deeply"),
    ],
)
def test_a_bad_mcp_json_is_one_error_line(tmp_path, monkeypatch, text, says):
    monkeypatch.delenv("NO_SUCH_TOKEN_VAR", raising=False)
    _write(tmp_path, "mcp.json", text)
    with pytest.raises(SopError) as info:
        load_server_configs(tmp_path)
    (problem,) = info.value.problems
    line = str(problem)
    assert "\n" not in line and line.startswith(f"error: {tmp_path / 'mcp.json'}:"), line
    assert says in line, line
    assert line.endswith("see docs/mcp-servers.md")


def test_a_bad_mcp_json_stops_a_run_with_one_line(tmp_path, capsys):
    """Through the CLI: exit 2 and one ``error:`` line naming the file, no traceback."""
    sop = make_sop(tmp_path / "sop", _SOP, {"check": "return Verdict(value=True)"})
    _write(sop, "mcp.json", '{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}')
    assert main(["run", str(sop), "--input", json.dumps({"type": "alarm"})]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {sop / 'mcp.json'}:1: "), err


# -- headers reaching a real HTTP server that requires a bearer token ---------------------------

_SOP = {
    "id": "remote_check",
    "entry": {"alarm": ["check"]},
    "nodes": {"check": {"kind": "observation", "text": "the tenant is acme"}},
}


@pytest.fixture
def bearer_server(tmp_path) -> Iterator[Callable[[str], tuple[str, str]]]:
    """``start(transport)``: tests/servers/bearer_echo.py on a free port, (url, token)."""
    started: list[subprocess.Popen] = []

    def start(transport: str) -> tuple[str, str]:
        token = secrets.token_urlsafe(32)
        port = free_port()
        log = (tmp_path / f"bearer-{port}.log").open("w")
        args = [sys.executable, str(BEARER_ECHO), str(port)] + (
            ["sse"] if transport == "sse" else []
        )
        env = {**os.environ, "BEARER_ECHO_TOKEN": token}
        proc = subprocess.Popen(args, env=env, stdout=log, stderr=log)
        started.append(proc)
        deadline = time.time() + 60
        while True:
            assert proc.poll() is None, (tmp_path / f"bearer-{port}.log").read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.time() < deadline, "the bearer_echo server never listened"
                time.sleep(0.1)
        path = "/sse" if transport == "sse" else "/mcp"
        return f"http://127.0.0.1:{port}{path}", token

    yield start
    for proc in started:
        stop(proc)


@pytest.mark.parametrize("transport", ["streamable_http", "sse"])
async def test_headers_reach_a_real_http_server(tmp_path, monkeypatch, bearer_server, transport):
    """The token comes from the environment (``${VAR}``), never from the file; the server
    answers with the identity its bearer names and the other header; without the header it
    refuses, and the pool says so in one line."""
    url, token = bearer_server(transport)
    monkeypatch.setenv("SECURE_MCP_TOKEN", token)
    server = {"url": url, "transport": transport}
    headers = {"Authorization": "Bearer ${SECURE_MCP_TOKEN}", "X-Tenant": "acme"}
    _write(tmp_path / "ok", "mcp.json", {"mcpServers": {"secure": {**server, "headers": headers}}})
    assert token not in (tmp_path / "ok" / "mcp.json").read_text()
    async with McpPool(load_server_configs(tmp_path / "ok")) as pool:
        assert await pool.call("secure", "whoami", {}) == {"client": "tester", "tenant": "acme"}

    _write(tmp_path / "no", "mcp.json", {"mcpServers": {"secure": server}})
    with pytest.raises(McpError, match="cannot start MCP server 'secure'.*401"):
        async with McpPool(load_server_configs(tmp_path / "no")) as pool:
            await pool.call("secure", "whoami", {})


def test_a_run_reaches_an_authenticated_server_through_mcp_json(
    tmp_path, monkeypatch, capsys, bearer_server
):
    """`sopgraph run`: the SOP's tool calls the HTTP server named in mcp.json, with its token."""
    url, token = bearer_server("streamable_http")
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SECURE_MCP_TOKEN", token)
    body = """\
        who = await ctx.mcp.call("secure", "whoami", {})
        return Verdict(value=who["tenant"] == "acme", observed=who)
    """
    sop = make_sop(tmp_path / "sop", _SOP, {"check": body})
    headers = {"Authorization": "Bearer ${SECURE_MCP_TOKEN}", "X-Tenant": "acme"}
    _write(sop, "mcp.json", {"mcpServers": {"secure": {"url": url, "headers": headers}}})
    assert main(["run", str(sop), "--input", json.dumps({"type": "alarm"}), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdicts"]["check"]["value"] == "true", out
    assert out["verdicts"]["check"]["observed"] == {"client": "tester", "tenant": "acme"}


# -- sopgraph mcp convert and the examples ------------------------------------------------------

LEGACY = """\
# The data servers of this SOP.
# Build the world first.
servers:
  metrics:
    command: python
    args: [-m, my_metrics, --db, "{home}/m.duckdb"]
    env: {REGION: eu}
  remote:
    url: http://127.0.0.1:9/mcp
"""


def test_mcp_convert_writes_mcp_json_from_mcp_yaml(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    sop = tmp_path / "sop"
    _write(sop, "mcp.yaml", LEGACY)
    before = load_server_configs(sop)
    capsys.readouterr()
    assert main(["mcp", "convert", str(sop)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"wrote {sop / 'mcp.json'}; moved {sop / 'mcp.yaml'} to ")
    assert not (sop / "mcp.yaml").exists() and (sop / "mcp.yaml.bak").read_text() == LEGACY
    assert json.loads((sop / "mcp.json").read_text()) == {
        "$comment": "The data servers of this SOP. Build the world first.",
        "mcpServers": {
            "metrics": {
                "command": "python",
                "args": ["-m", "my_metrics", "--db", "{home}/m.duckdb"],
                "env": {"REGION": "eu"},
            },
            "remote": {"url": "http://127.0.0.1:9/mcp"},
        },
    }
    assert load_server_configs(sop) == before  # the same servers, and no deprecation line
    assert capsys.readouterr().err == ""

    # again: nothing to convert, one line
    assert main(["mcp", "convert", str(sop)]) == 2
    err = capsys.readouterr().err
    assert (
        err == f"error: {sop / 'mcp.yaml'}: no such file; give the SOP folder that holds mcp.yaml\n"
    )
    _write(sop, "mcp.yaml", LEGACY)
    assert main(["mcp", "convert", str(sop / "mcp.yaml")]) == 2
    assert "mcp.json already exists" in capsys.readouterr().err


def test_mcp_serve_is_still_registered_beside_convert(capsys):
    with pytest.raises(SystemExit) as info:
        main(["mcp", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "serve" in out and "convert" in out


@pytest.mark.parametrize("name", ["fc_alarm_triage", "service_interruption"])
def test_the_examples_use_mcp_json(name, capsys):
    sop = REPO / "examples" / name
    assert (sop / "mcp.json").is_file() and not (sop / "mcp.yaml").exists()
    servers = load_server_configs(sop)
    assert servers and all(s.command == sys.executable for s in servers.values())
    assert capsys.readouterr().err == ""
