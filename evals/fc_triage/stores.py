"""Write the simulated world into the three backends the MCP servers serve.

- ``robotics.duckdb``: long, Prometheus-like ``samples(metric, site, station, robot, ts,
  value)`` plus ``metric_metadata``; percentages are 0-100; a missing sample has no row.
- ``conveyance.duckdb``: one wide row per site and 5 minutes in ``conveyance_5m``; ratios are
  0-1, jam counters are cumulative and restart at zero, an offline sensor leaves NULL.
- ``ops.sqlite``: stations, equipment states, maintenance log, tickets, staffing, alarms.

Bulk loads only (numpy arrays scanned by DuckDB, ``executemany`` into SQLite).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
import numpy as np

from sopgraph.evals.fc_triage.plant import QUADRANTS, printer_id, robot_id, sql_time, tick_times
from sopgraph.evals.fc_triage.world import CONVEYANCE_COLUMNS, ROBOT_METRICS, World

METRIC_META: dict[str, tuple[str, str, str]] = {
    "station_idle_pct": (
        "gauge",
        "percent",
        "Share of the 5-minute interval the station was idle (0-100).",
    ),
    "pick_attempts": (
        "gauge",
        "count",
        "Pick attempts by the station's robot in the 5-minute interval.",
    ),
    "pick_errors": (
        "gauge",
        "count",
        "Failed picks (drops, double picks, misreads) in the 5-minute interval.",
    ),
    "pick_error_pct": (
        "gauge",
        "percent",
        "pick_errors / pick_attempts * 100 for the interval; absent when there were no attempts.",
    ),
    "units_inducted": (
        "gauge",
        "count",
        "Units inducted onto the collector belt in the 5-minute interval.",
    ),
    "suction_vacuum_kpa": (
        "gauge",
        "kPa",
        "Mean vacuum level at the suction cup over the interval.",
    ),
    "camera_read_fail_pct": (
        "gauge",
        "percent",
        "Share of vision reads that failed in the interval (0-100).",
    ),
    "label_print_fail_pct": (
        "gauge",
        "percent",
        "Share of label print-and-apply cycles that failed (0-100).",
    ),
    "label_stock_pct": (
        "gauge",
        "percent",
        "Label roll remaining at the end of the interval (0-100).",
    ),
}


def _ts_array(seconds: np.ndarray) -> np.ndarray:
    return seconds.astype("datetime64[s]").astype("datetime64[us]")


def write_robotics(world: World, path: Path) -> None:
    """Long-form samples, ordered by (metric, site, station, ts) so range scans stay narrow."""
    times = tick_times(world.n_ticks)
    series = [(site, st) for site, fr in world.sites.items() for st in fr.stations]
    mids, sids, ts, values = [], [], [], []
    for m, metric in enumerate(ROBOT_METRICS):
        for s, (site, st) in enumerate(series):
            fr = world.sites[site]
            v = fr.robo[metric][fr.stations.index(st)]
            keep = ~np.isnan(v)
            k = int(keep.sum())
            mids.append(np.full(k, m + 1, dtype=np.int32))
            sids.append(np.full(k, s + 1, dtype=np.int32))
            ts.append(times[keep])
            values.append(v[keep])
    cols = {
        "mid": np.concatenate(mids),
        "sid": np.concatenate(sids),
        "ts": _ts_array(np.concatenate(ts)),
        "value": np.concatenate(values),
    }
    # Strings come from small lookup lists inside DuckDB: scanning millions of Python
    # string objects is what makes a bulk load slow.
    names = list(ROBOT_METRICS)
    sites = [s for s, _ in series]
    stations = [st for _, st in series]
    robots = [robot_id(s, st) for s, st in series]
    meta = {
        "metric": np.array(list(METRIC_META), dtype=object),
        "type": np.array([m[0] for m in METRIC_META.values()], dtype=object),
        "unit": np.array([m[1] for m in METRIC_META.values()], dtype=object),
        "help": np.array([m[2] for m in METRIC_META.values()], dtype=object),
    }
    con = duckdb.connect(str(path))
    try:
        con.register("cols", cols)
        con.register("meta", meta)
        con.execute(
            f"CREATE TABLE samples AS SELECT list_extract({names}, mid) AS metric, "
            f"list_extract({sites}, sid) AS site, list_extract({stations}, sid) AS station, "
            f"list_extract({robots}, sid) AS robot, ts, value FROM cols"
        )
        con.execute("CREATE TABLE metric_metadata AS SELECT * FROM meta")
    finally:
        con.close()


def write_conveyance(world: World, path: Path) -> None:
    times = tick_times(world.n_ticks)
    cols: dict[str, list[np.ndarray]] = {"site": [], "five_minute_interval": []}
    for name in CONVEYANCE_COLUMNS:
        cols[name] = []
    for site, fr in world.sites.items():
        cols["site"].append(np.full(world.n_ticks, site, dtype=object))
        cols["five_minute_interval"].append(times)
        for name in CONVEYANCE_COLUMNS:
            cols[name].append(fr.conv[name])
    data = {k: np.concatenate(v) for k, v in cols.items()}
    data["five_minute_interval"] = _ts_array(data["five_minute_interval"])
    ints = {
        "sorter_chutes_full": "INTEGER",
        "upstream_jam_events_total": "BIGINT",
        "sorter_jam_events_total": "BIGINT",
    }
    select = ", ".join(
        f"CAST({c} AS {ints[c]}) AS {c}" if c in ints else c
        for c in ("site", "five_minute_interval", *CONVEYANCE_COLUMNS)
    )
    con = duckdb.connect(str(path))
    try:
        con.register("data", data)
        con.execute(
            f"CREATE TABLE conveyance_5m AS SELECT {select} FROM data ORDER BY site, five_minute_interval"
        )
        quads = {
            "quadrant": np.array(QUADRANTS, dtype=object),
            "fill_column": np.array(
                [f"belt_{q.lower()}_fill_ratio" for q in QUADRANTS], dtype=object
            ),
            "half": np.array(["north", "north", "south", "south"], dtype=object),
        }
        con.register("quads", quads)
        con.execute("CREATE TABLE collector_quadrants AS SELECT * FROM quads")
    finally:
        con.close()


OPS_SCHEMA = """
CREATE TABLE stations (site TEXT, station TEXT, robot_id TEXT, printer_id TEXT, quadrant TEXT,
  PRIMARY KEY (site, station));
CREATE TABLE equipment_states (site TEXT, equipment_id TEXT, equipment_type TEXT, state TEXT,
  started_at TEXT, ended_at TEXT);
CREATE INDEX ix_states ON equipment_states (site, equipment_id, started_at);
CREATE TABLE maintenance_log (site TEXT, equipment_id TEXT, component TEXT, action TEXT,
  performed_at TEXT);
CREATE INDEX ix_maint ON maintenance_log (site, equipment_id, component, performed_at);
CREATE TABLE tickets (ticket_id TEXT PRIMARY KEY, site TEXT, equipment_id TEXT, category TEXT,
  status TEXT, opened_at TEXT, closed_at TEXT);
CREATE INDEX ix_tickets ON tickets (site, equipment_id, opened_at);
CREATE TABLE staffing (site TEXT, hour_start TEXT, area TEXT, planned_headcount INTEGER,
  present_headcount INTEGER, PRIMARY KEY (site, hour_start, area));
CREATE TABLE alarms (alarm_id TEXT PRIMARY KEY, site TEXT, alarm_type TEXT, station TEXT,
  raised_at TEXT, severity TEXT);
CREATE INDEX ix_alarms ON alarms (site, raised_at);
"""


def write_ops(world: World, path: Path, alarms: list[dict]) -> None:
    con = sqlite3.connect(str(path))
    try:
        con.executescript(OPS_SCHEMA)
        for site, fr in world.sites.items():
            con.executemany(
                "INSERT INTO stations VALUES (?,?,?,?,?)",
                [
                    (site, s, robot_id(site, s), printer_id(site, s), fr.quadrant[s])
                    for s in fr.stations
                ],
            )
            con.executemany(
                "INSERT INTO equipment_states VALUES (?,?,?,?,?,?)",
                [
                    (
                        site,
                        iv.equipment_id,
                        iv.equipment_type,
                        iv.state,
                        sql_time(iv.start),
                        None if iv.end is None else sql_time(iv.end),
                    )
                    for iv in fr.states
                ],
            )
            con.executemany(
                "INSERT INTO maintenance_log VALUES (?,?,?,?,?)",
                [
                    (site, eq, comp, act, sql_time(ts))
                    for eq, comp, act, ts in sorted(fr.maintenance, key=lambda m: m[3])
                ],
            )
            con.executemany(
                "INSERT INTO tickets VALUES (?,?,?,?,?,?,?)",
                [
                    (
                        f"T-{site}-{i + 1:05d}",
                        site,
                        t["equipment_id"],
                        t["category"],
                        "open" if t["closed_at"] is None else "closed",
                        sql_time(t["opened_at"]),
                        None if t["closed_at"] is None else sql_time(t["closed_at"]),
                    )
                    for i, t in enumerate(fr.tickets)
                ],
            )
            hours = tick_times(world.n_ticks)[:: 3600 // 300]
            rows = []
            for area, (planned, present) in fr.staffing.items():
                rows += [
                    (site, sql_time(h), area, int(p), int(q))
                    for h, p, q in zip(hours, planned, present, strict=False)
                ]
            con.executemany("INSERT INTO staffing VALUES (?,?,?,?,?)", rows)
        con.executemany(
            "INSERT INTO alarms VALUES (?,?,?,?,?,?)",
            [
                (
                    a["alarm_id"],
                    a["site"],
                    a["type"],
                    a.get("station"),
                    sql_time(a["ts"]),
                    a["severity"],
                )
                for a in alarms
            ],
        )
        con.commit()
    finally:
        con.close()
