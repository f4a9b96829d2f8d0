"""Data discovery: what a node's MCP servers hold, read with the servers' own listing tools.

Part of data collection (the ``+d`` configurations): before the sub-agent's traces, the host
calls each server's listing tools (a ``list_*`` tool with no required argument), then the
tool that describes one listed item (its one required argument is the lister's noun, as
``get_metric_metadata(metric)`` for ``list_metrics`` or ``list_columns(table)`` for
``list_tables``), and, where the server takes SQL (a query argument named ``sql``), two sample
rows of each table. Nothing is written per node or per server: the catalog decides which
tools are listers and describers, so any MCP server with such tools is read the same way.

A small model cannot discover a schema reliably in a few turns (its traces guess metric and
table names); this gives the tool-maker the names, types, units and value scales it needs.

Example:
    >>> text = await discover(catalog, ["robotics"])
    >>> print(text.splitlines()[0])
    robotics.list_metrics(): station_idle_pct, pick_attempts, ...
"""

from __future__ import annotations

import json
from typing import Any

from sopgraph.tools.toolmaker.catalog import Catalog, CatalogTool

ITEMS = 30  # listed items described, per lister
SAMPLE_ROWS = 2
CHARS = 2400  # the whole text, in a prompt of a 4k-token model


def _items(result: Any, arg: str) -> list[str]:
    """Names in a lister's reply: a list (maybe under a key) of strings or of records."""
    if isinstance(result, dict):
        result = next((v for v in result.values() if isinstance(v, list)), [])
    names = []
    for item in result if isinstance(result, list) else []:
        if isinstance(item, str):
            names.append(item)
        elif isinstance(item, dict):
            name = (
                item.get(arg)
                or item.get("name")
                or next((v for v in item.values() if isinstance(v, str)), None)
            )
            if name:
                names.append(str(name))
    return names


def _compact(result: Any) -> str:
    """A describer's reply in one short line: columns as ``name TYPE``, a record as k=v."""
    if isinstance(result, list) and all(isinstance(r, dict) and "name" in r for r in result):
        return ", ".join(f"{r['name']} {r.get('type', '')}".strip() for r in result)
    if isinstance(result, dict):
        keep = {k: v for k, v in result.items() if k not in ("series", "metric") and v != ""}
        return "; ".join(f"{k}={v}" for k, v in keep.items())
    return json.dumps(result, default=str)[:200]


async def discover(catalog: Catalog, servers: list[str]) -> str:
    """The schema of ``servers`` as prompt text; a tool that fails is left out, not fatal."""
    lines: list[str] = []
    for server in servers:
        tools = catalog.servers.get(server, [])
        listers = [t for t in tools if t.name.startswith("list_") and not t.required]
        describers = {t.required[0]: t for t in reversed(tools) if len(t.required) == 1}
        sql = next((t for t in tools if "sql" in t.required), None)
        for lister in listers:
            try:
                listed = await catalog.pool.call(server, lister.name, {})
            except Exception:  # noqa: BLE001 - discovery is best effort
                continue
            noun = lister.name.removeprefix("list_").removesuffix("s")  # list_tables -> table
            names = _items(listed, noun)
            lines.append(f"{server}.{lister.name}(): {', '.join(names)}")
            describer = describers.get(noun)  # the first tool that takes one `noun`
            for name in names[:ITEMS]:
                if describer is not None:
                    try:
                        described = await catalog.pool.call(server, describer.name, {noun: name})
                        lines.append(f"  {name}: {_compact(described)}")
                    except Exception:  # noqa: BLE001
                        pass
                if sql is not None and noun == "table":
                    lines.extend(await _sample(catalog, server, sql, name))
    return "\n".join(lines)[:CHARS] if lines else ""


async def _sample(catalog: Catalog, server: str, sql: CatalogTool, table: str) -> list[str]:
    query = f'SELECT * FROM "{table}" LIMIT {SAMPLE_ROWS}'
    try:
        result = await catalog.pool.call(server, sql.name, {"sql": query})
    except Exception:  # noqa: BLE001
        return []
    rows = result.get("rows") if isinstance(result, dict) else None
    return [f"    row: {json.dumps(r, default=str)}" for r in (rows or [])[:SAMPLE_ROWS]]
