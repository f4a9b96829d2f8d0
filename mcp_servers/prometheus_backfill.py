"""The simulated dock's robotics metrics as a real Prometheus TSDB: OpenMetrics, then promtool.

``write_openmetrics`` turns the DuckDB store the simulated server reads (``samples``,
``metric_metadata``) into one OpenMetrics file (a family per metric, each series' samples in
time order, ``# EOF`` last); ``backfill`` runs ``promtool tsdb create-blocks-from openmetrics``
on it, so a stock Prometheus serves the same samples.

Run: ``python -m sopgraph.mcp_servers.prometheus_backfill --db robotics.duckdb --out DIR``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb

LABELS = ("site", "station", "robot")
PROMTOOL = "promtool"
BLOCK_S = 7200  # promtool's block length: blocks start at multiples of 2 hours
INSTALL = "install Prometheus (Debian: apt-get install prometheus, or make system-deps)"


class BackfillError(RuntimeError):
    """A backfill that cannot be done, in one line (what, where, how to fix)."""


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def write_openmetrics(db: Path, folder: Path) -> list[Path]:
    """Write ``db``'s samples as OpenMetrics files, one per 2-hour block window.

    promtool reads its whole input once per block it makes, so one file for four weeks reads
    the file 336 times (six minutes here); a file per window reads each sample once.
    """
    con = duckdb.connect(str(db), read_only=True)
    try:
        meta = {
            r[0]: (r[1], r[2].replace("\n", " "))
            for r in con.execute("SELECT metric, type, help FROM metric_metadata").fetchall()
        }
        cur = con.execute(
            f"SELECT floor(epoch(ts) / {BLOCK_S})::BIGINT AS w, metric, site, station, robot, "
            "epoch(ts), value FROM samples ORDER BY w, metric, site, station, robot, ts"
        )
        files: list[Path] = []
        f, window, family = None, None, None
        while rows := cur.fetchmany(100_000):
            for w, metric, site, station, robot, t, v in rows:
                if w != window:
                    if f:
                        f.write("# EOF\n")
                        f.close()
                    files.append(folder / f"{w}.om")
                    f, window, family = files[-1].open("w"), w, None
                if metric != family:
                    kind, text = meta.get(metric, ("unknown", ""))
                    f.write(f"# HELP {metric} {text}\n# TYPE {metric} {kind}\n")
                    family = metric
                labels = ",".join(
                    f"{k}={_quote(x)}"
                    for k, x in zip(LABELS, (site, station, robot), strict=True)
                    if x  # an empty label is no label, as in Prometheus
                )
                f.write(f"{metric}{{{labels}}} {_number(v)} {_number(t)}\n")
        if f:
            f.write("# EOF\n")
            f.close()
        return files
    finally:
        con.close()


def _promtool(exe: str, text: Path, out: Path) -> str | None:
    done = subprocess.run(
        [exe, "tsdb", "create-blocks-from", "openmetrics", "--quiet", str(text), str(out)],
        capture_output=True,
        text=True,
    )
    if done.returncode == 0:
        return None
    last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
    return f"{text.name}: {last[0]}"


def backfill(db: Path, out: Path, promtool: str = PROMTOOL, jobs: int = 2) -> Path:
    """Blocks of ``db``'s samples under ``out`` (made afresh); returns ``out``."""
    exe = shutil.which(promtool)
    if exe is None:
        raise BackfillError(f"{promtool} not found on PATH: {INSTALL}")
    if not db.is_file():
        raise BackfillError(
            f"{db}: no robotics store; build the world first: python -m sopgraph.evals.fc_triage.build"
        )
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="openmetrics-") as tmp:
        files = write_openmetrics(db, Path(tmp))
        with ThreadPoolExecutor(jobs) as pool:
            errors = [e for e in pool.map(lambda p: _promtool(exe, p, out), files) if e]
    if errors:
        raise BackfillError(f"promtool could not backfill {db} into {out}: {errors[0]}")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True, help="the robotics DuckDB store")
    ap.add_argument("--out", type=Path, required=True, help="the TSDB folder to write")
    args = ap.parse_args(argv)
    try:
        print(backfill(args.db, args.out))
    except BackfillError as exc:
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()
