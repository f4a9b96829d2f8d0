"""The names a spec may use, read from the MCP servers' own listing tools.

A server with ``list_metrics`` serves series (PromQL): its metrics, each with its unit. A
server with ``list_tables`` and ``list_columns`` serves rows (SQL): its tables and their
columns. A tool whose ``outputSchema`` declares a record's fields serves records (a field
measure): its arguments and the fields, each with its type and its values where enumerated. The tool-maker's grammar is built from these names, so a candidate can be wrong but
never name a metric, table or column that does not exist.

Example:
    >>> data = await DataCatalog.read(catalog, ["robotics"])  # doctest: +SKIP
    >>> data.metrics["robotics"][:2]                           # doctest: +SKIP
    ['camera_read_fail_pct', 'label_print_fail_pct']
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sopgraph.tools.toolmaker.catalog import Catalog

TIME_TYPES = ("TIMESTAMP", "DATETIME", "DATE")  # PostgreSQL's "timestamp without time zone" too
NUMBER_TYPES = ("DOUBLE", "REAL", "FLOAT", "NUMERIC", "DECIMAL", "INTEGER", "INT", "BIGINT",
                "SMALLINT")  # fmt: skip


def _first_word(sql_type: str) -> str:
    return (sql_type.split() or [""])[0].upper()


@dataclass
class DataCatalog:
    metrics: dict[str, list[str]] = field(default_factory=dict)  # server -> metric names
    units: dict[str, str] = field(default_factory=dict)  # metric -> unit / help
    tables: dict[str, dict[str, list[str]]] = field(
        default_factory=dict
    )  # server -> table -> columns
    types: dict[str, str] = field(default_factory=dict)  # "table.column" -> SQL type
    labels: dict[str, list[str]] = field(default_factory=dict)  # metric -> its label names
    # server -> tool -> field -> {"type", "enum"}: the records typed tools return
    records: dict[str, dict[str, dict[str, dict[str, Any]]]] = field(default_factory=dict)
    arguments: dict[str, list[str]] = field(default_factory=dict)  # "server.tool" -> required

    @classmethod
    async def read(cls, catalog: Catalog, servers: list[str]) -> DataCatalog:
        out = cls()
        for server in servers:
            names = {t.name for t in catalog.servers.get(server, [])}
            for t in catalog.servers.get(server, []):
                if fields := t.record_fields():
                    out.records.setdefault(server, {})[t.name] = fields
                    out.arguments[f"{server}.{t.name}"] = t.required or t.arguments
            call = catalog.pool.call
            if "list_metrics" in names:
                listed = await call(server, "list_metrics", {})
                metrics = listed.get("metrics", []) if isinstance(listed, dict) else listed
                out.metrics[server] = [str(m) for m in metrics]
                if "get_metric_metadata" in names:
                    for m in out.metrics[server]:
                        try:
                            meta = await call(server, "get_metric_metadata", {"metric": m})
                        except Exception:  # noqa: BLE001 - a unit is a nicety
                            continue
                        if isinstance(meta, dict) and isinstance(meta.get("labels"), list):
                            out.labels[m] = [str(x) for x in meta["labels"]]
                        if isinstance(meta, dict):
                            out.units[m] = "; ".join(
                                f"{k}={v}" for k, v in meta.items()
                                if k in ("type", "unit", "help") and v
                            )  # fmt: skip
            listed_tables = await cls._listed_tables(call, server, names)
            if listed_tables is not None:
                out.tables[server] = {}
                for table, cols in listed_tables:
                    out.tables[server][table] = [c["name"] for c in cols]
                    for c in cols:
                        out.types[f"{table}.{c['name']}"] = str(c.get("type", ""))
        return out

    @staticmethod
    async def _listed_tables(
        call: Any, server: str, names: set[str]
    ) -> list[tuple[str, list[dict[str, Any]]]] | None:
        """Each table with its columns (``name``, ``type``), from ``list_tables`` and
        ``list_columns`` (sopgraph's servers) or from ``search_objects`` (database-mcp-postgres
        and its kin: ``{}`` lists the tables, ``{"table"}`` one table's columns); None for a
        server with neither."""
        out = []
        if "list_tables" in names and "list_columns" in names:
            listed = await call(server, "list_tables", {})
            for item in listed if isinstance(listed, list) else listed.get("tables", []):
                table = item["table"] if isinstance(item, dict) else str(item)
                out.append((table, await call(server, "list_columns", {"table": table})))
            return out
        if "search_objects" in names:
            listed = await call(server, "search_objects", {})
            for item in listed.get("tables", []) if isinstance(listed, dict) else []:
                table = item["name"] if isinstance(item, dict) else str(item)
                detail = await call(server, "search_objects", {"table": table})
                out.append((table, detail.get("columns", []) if isinstance(detail, dict) else []))
            return out
        return None

    def keyed_labels(self, server: str, input_fields: list[str]) -> list[str]:
        """The labels a series measurement of ``server`` may match on: its metrics' labels (as
        ``get_metric_metadata`` lists them) that are fields of the run input, in the server's
        order; with no labels listed, the input's fields (but its time)."""
        listed = [x for m in self.metrics.get(server, []) for x in self.labels.get(m, [])]
        if not listed:
            return [f for f in input_fields if f != "timestamp"]
        return [x for x in dict.fromkeys(listed) if x in input_fields]

    def record_tools(self, server: str, input_fields: list[str]) -> dict[str, dict[str, Any]]:
        """The tools of ``server`` a field measure may call for a run: those returning a typed
        record whose every required argument is a field of the run input."""
        return {
            tool: fields for tool, fields in self.records.get(server, {}).items()
            if set(self.arguments.get(f"{server}.{tool}", [])) <= set(input_fields)
        }  # fmt: skip

    def only(self, servers: list[str]) -> DataCatalog:
        """This catalog cut to ``servers`` (a node's own)."""

        def cut(d: dict[str, Any]) -> dict[str, Any]:
            return {s: v for s, v in d.items() if s in servers}

        return DataCatalog(
            metrics=cut(self.metrics), units=self.units, tables=cut(self.tables),
            types=self.types, labels=self.labels, records=cut(self.records),
            arguments=self.arguments,
        )  # fmt: skip

    def time_columns(self, table: str) -> list[str]:
        cols = [c for s in self.tables.values() for c in s.get(table, [])]
        timed = [c for c in cols if _first_word(self.types.get(f"{table}.{c}", "")) in TIME_TYPES]
        named = [c for c in cols if c.endswith(("_at", "_start", "interval", "_time", "ts"))]
        return list(dict.fromkeys(timed + named))

    def families(self, table: str) -> list[list[str]]:
        """The table's column families: numeric columns whose names, split at ``_``, are the
        same but for one part (``zone_a_load_ratio``, ``zone_b_load_ratio``: one reading
        per zone, a wide table's labels), two or more a family, in the table's order. A
        measurement may reduce several of them and take ``across`` them, as across a metric's
        series."""
        cols = [c for s in self.tables.values() for c in s.get(table, [])]
        numbers = [
            c for c in dict.fromkeys(cols)
            if _first_word(self.types.get(f"{table}.{c}", "")) in NUMBER_TYPES
        ]  # fmt: skip
        groups: dict[tuple[int, tuple[str, ...]], list[str]] = {}
        for c in numbers:
            parts = c.split("_")
            for i in range(len(parts)):
                groups.setdefault((i, tuple(parts[:i] + ["*"] + parts[i + 1 :])), []).append(c)
        out = [g for g in groups.values() if len(g) > 1]
        return [g for i, g in enumerate(out) if g not in out[:i]]

    def render(self) -> str:
        """The names as prompt text, one line a metric or table."""
        lines = []
        for server, metrics in self.metrics.items():
            lines.append(f"server {server} (metrics, PromQL):")
            lines += [f"  {m}: {self.units.get(m, '')}" for m in metrics]
        for server, tables in self.tables.items():
            lines.append(f"server {server} (tables, SQL):")
            for table, cols in tables.items():
                typed = ", ".join(f"{c} {self.types.get(f'{table}.{c}', '')}".strip() for c in cols)
                lines.append(f"  {table}({typed})")
        for server, tools in self.records.items():
            lines.append(f"server {server} (records, one a call):")
            for tool, fields in tools.items():
                args = ", ".join(self.arguments.get(f"{server}.{tool}", []))
                typed = ", ".join(
                    f"{f} " + ("|".join(json.dumps(v) for v in d["enum"]) if d.get("enum")
                              else str(d.get("type") or "any"))
                    for f, d in fields.items()
                )  # fmt: skip
                lines.append(f"  {tool}({args}) -> {{{typed}}}")
        return "\n".join(lines)

    def measurement_key(self, m: dict[str, Any]) -> tuple:
        """What a measurement reads, for telling copies apart: the metric, or the table,
        column and literal filters."""
        if m.get("metric"):
            return ("metric", m["metric"])
        if m.get("tool"):
            return ("field", m.get("server"), m["tool"], m.get("field"))
        lits = tuple(sorted((k, str(v)) for k, v in (m.get("where") or {}).items()
                            if not str(v).startswith("$")))  # fmt: skip
        return ("table", m.get("table"), m.get("column"), lits)
