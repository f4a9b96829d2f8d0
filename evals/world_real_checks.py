"""One line for each way the real data stack fails a run: Prometheus or PostgreSQL down or
gone, a metric Prometheus does not have, a query either rejects.

``prometheus-mcp-server`` passes on ``requests``' own text (``HTTPConnectionPool(...): Max
retries exceeded ...``, ``400 Client Error: Bad Request for url: ...``) and answers a metric it
has never seen with an empty result, as Prometheus does; ``explain`` turns the first two into
what, where and how to fix (asking Prometheus itself for the error of a rejected query), and
``missing_metrics`` finds the third before a run, from the SOP's series specs.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from sopgraph.graphs.loader import load_sop
from sopgraph.tools.registry import Registry, RegistryError

_DOWN = re.compile(r"Max retries exceeded|Connection refused|NewConnectionError|timed out")
_BAD = re.compile(r"400 Client Error: Bad Request for url: (\S+)")
# database-mcp-postgres's tools, as McpPool words their failure: "<server>.execute_sql failed: ..."
_PG_CALL = re.compile(r"\b(\w+)\.(?:execute_sql|search_objects) failed: (.*)", re.S)
_PG_DOWN = re.compile(
    r"connection|could not connect|server closed|terminat|refused|no such file|timeout", re.I
)


def reachable(url: str, timeout: float = 3.0) -> str | None:
    """None when Prometheus at ``url`` is ready, else why not (one line)."""
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=timeout) as r:
            return None if r.status == 200 else f"answered {r.status} to /-/ready"
    except urllib.error.HTTPError as exc:
        return f"answered {exc.code} to /-/ready"
    except (urllib.error.URLError, OSError) as exc:
        return str(getattr(exc, "reason", exc))


def _prometheus_error(query_url: str) -> str:
    """Prometheus's own error for the query the MCP server sent (the server drops it)."""
    try:
        with urllib.request.urlopen(query_url, timeout=5):
            return "Prometheus accepted it on a second try"
    except urllib.error.HTTPError as exc:
        try:
            return json.loads(exc.read()).get("error") or f"HTTP {exc.code}"
        except ValueError:
            return f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        return str(getattr(exc, "reason", exc))


def explain(error: str, url: str, mcp_json: Path) -> str:
    """A failed call's text as one line: what, where, how to fix."""
    pg = _PG_CALL.search(error)
    if pg:
        return explain_postgres(pg.group(1), pg.group(2), mcp_json)
    if _DOWN.search(error):
        return (
            f"Prometheus at {url} is not answering ({reachable(url) or 'it answers now'}); "
            f"start it again, or point PROMETHEUS_URL in {mcp_json} at a running one"
        )
    bad = _BAD.search(error)
    if bad:
        query_url = bad.group(1)
        params = urllib.parse.parse_qs(urllib.parse.urlparse(query_url).query)
        query = (params.get("query") or ["?"])[0]
        return (
            f"Prometheus at {url} rejected the PromQL {query!r}: {_prometheus_error(query_url)}; "
            "fix the tool's query (promtool query instant can try it)"
        )
    return error.splitlines()[0] if error else "no error text"


def explain_postgres(server: str, error: str, mcp_json: Path) -> str:
    """A failed call of a database-mcp-postgres server as one line."""
    first = " ".join(error.split("\n")[0].split()) or "no error text"
    if _PG_DOWN.search(error):
        return (
            f"PostgreSQL behind the {server} server is not answering ({first}); start it "
            f"again, or point the {server} server's --dsn in {mcp_json} at a running one"
        )
    return (
        f"PostgreSQL behind the {server} server rejected the statement: {first}; fix the "
        "tool's SQL (psql can try it)"
    )


def postgres_dsns(mcp_json: Path) -> dict[str, str]:
    """Server -> the DSN its ``--dsn`` argument names (the database-mcp-postgres servers)."""
    servers = json.loads(mcp_json.read_text()).get("mcpServers", {})
    out = {}
    for name, cfg in servers.items():
        args = cfg.get("args") or []
        if "--dsn" in args and args.index("--dsn") + 1 < len(args):
            out[name] = args[args.index("--dsn") + 1]
    return out


def postgres_reachable(dsn: str, timeout: int = 3) -> str | None:
    """None when PostgreSQL at ``dsn`` takes a connection, else why not (one line)."""
    import psycopg

    try:
        with psycopg.connect(dsn, connect_timeout=timeout) as con:
            con.execute("SELECT 1")
    except psycopg.Error as exc:
        return " ".join(str(exc).split("\n")[0].split()) or type(exc).__name__
    return None


def series_metrics(sop_dir: Path, server: str = "robotics") -> dict[str, list[str]]:
    """The metrics the active series specs of the SOP read from ``server``, by node."""
    sop = load_sop(sop_dir)
    registry = Registry(sop_dir / "tools")
    out: dict[str, list[str]] = {}
    for node in sop.decision_nodes:
        try:
            fn = registry.resolve(node.tool_name).fn
        except RegistryError:
            continue
        spec = getattr(fn, "spec", None)  # a spec tool's run carries its Check (tools.spec.tool)
        for m in getattr(spec, "measures", {}).values():
            if getattr(m, "server", None) == server and getattr(m, "metric", None):
                for metric in (m.metric, getattr(m, "per", None)):
                    if metric:
                        out.setdefault(str(metric), []).append(node.id)
    return out


def missing_metrics(sop_dir: Path, listed: list[str], url: str) -> list[str]:
    """One line per metric the SOP's specs read that Prometheus at ``url`` does not list."""
    have = set(listed)
    return [
        f"metric {metric!r} (read by {', '.join(sorted(set(nodes)))}) is not in Prometheus at "
        f"{url} ({len(have)} metrics listed); backfill the world again "
        "(python -m sopgraph.mcp_servers.prometheus_backfill) or fix the spec's metric"
        for metric, nodes in sorted(series_metrics(sop_dir).items())
        if metric not in have
    ]
