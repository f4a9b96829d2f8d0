"""Build the fulfillment-center world: stores, alarms, scenarios and labeled cases.

``build_world(home)`` writes ``{home}/fc_world/`` once and reuses it while the seed, size and
world version match. Run it as ``python -m sopgraph.evals.fc_triage.build [--home DIR] [--seed N]``.

Example:
    >>> paths = build_world(Path(".sopgraph"), days=7, sites=1)  # doctest: +SKIP
    >>> paths.robotics.exists()                                  # doctest: +SKIP
    True
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from sopgraph.evals.fc_triage.alarms import raise_alarms
from sopgraph.evals.fc_triage.cases import build_cases
from sopgraph.evals.fc_triage.labeler import Labeler
from sopgraph.evals.fc_triage.scenarios import build_scenarios
from sopgraph.evals.fc_triage.simulator import simulate
from sopgraph.evals.fc_triage.stores import write_conveyance, write_ops, write_robotics
from sopgraph.evals.fc_triage.world import World
from sopgraph.examples import EXAMPLES
from sopgraph.graphs.loader import load_sop
from sopgraph.tools.params import ParamStore

WORLD_VERSION = 2
SOP_DIR = EXAMPLES / "fc_alarm_triage"


class WorldPaths(BaseModel):
    """Where a built world lives."""

    root: Path
    robotics: Path
    conveyance: Path
    ops: Path
    scenarios: Path
    cases: Path
    manifest: Path

    @classmethod
    def under(cls, root: Path) -> WorldPaths:
        return cls(
            root=root,
            robotics=root / "robotics.duckdb",
            conveyance=root / "conveyance.duckdb",
            ops=root / "ops.sqlite",
            scenarios=root / "scenarios.jsonl",
            cases=root / "cases",
            manifest=root / "world.json",
        )


def data_hash(world: World) -> str:
    """sha256 over every simulated series and record: same seed, same hash."""
    h = hashlib.sha256()
    for site, fr in sorted(world.sites.items()):
        h.update(site.encode())
        for name in sorted(fr.conv):
            h.update(np.ascontiguousarray(fr.conv[name]).tobytes())
        for name in sorted(fr.robo):
            h.update(np.ascontiguousarray(fr.robo[name]).tobytes())
        h.update(repr([(i.equipment_id, i.state, i.start, i.end) for i in fr.states]).encode())
        h.update(repr(fr.maintenance).encode())
        h.update(repr(fr.tickets).encode())
    return h.hexdigest()


def _wanted(seed: int, days: int, sites: int | None) -> dict:
    return {"version": WORLD_VERSION, "seed": seed, "days": days, "sites": sites}


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, separators=(",", ":")) + "\n")


def build_world(
    home: Path | str = Path(".sopgraph"),
    seed: int = 7,
    progress: bool = True,
    *,
    days: int = 28,
    sites: int | None = None,
    scenarios: int = 1500,
    force: bool = False,
    sop_dir: Path = SOP_DIR,
) -> WorldPaths:
    """Build (or reuse) the world under ``{home}/fc_world``; returns its paths."""
    root = Path(home) / "fc_world"
    paths = WorldPaths.under(root)
    wanted = _wanted(seed, days, sites)
    if not force and paths.manifest.exists():
        have = json.loads(paths.manifest.read_text())
        if {k: have.get(k) for k in wanted} == wanted:
            return paths
    say = (lambda msg: print(f"fc_world: {msg}", file=sys.stderr)) if progress else (lambda m: None)
    t0 = time.perf_counter()
    tmp = root.with_name(f"fc_world.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:  # a failed or interrupted build leaves no half-built folder behind
        tp = WorldPaths.under(tmp)
        world = simulate(seed, days, sites)
        say(f"simulated {len(world.sites)} sites x {days} days ({time.perf_counter() - t0:.1f}s)")
        sop = load_sop(sop_dir)
        store = ParamStore(sop, sop_dir)
        params_of = {site: store.for_key(site) for site in world.sites}
        rng = np.random.default_rng([seed, 1])
        alarms = raise_alarms(world, rng, min_total=int(scenarios * 1.25))
        write_robotics(world, tp.robotics)
        write_conveyance(world, tp.conveyance)
        write_ops(world, tp.ops, alarms)
        say(f"wrote stores ({time.perf_counter() - t0:.1f}s)")
        labeler = Labeler(world)
        rows = build_scenarios(sop, labeler, alarms, params_of, rng, scenarios)
        _write_jsonl(tp.scenarios, rows)
        tp.cases.mkdir()
        cases = build_cases(sop, labeler, alarms, params_of, seed)
        for node_id, node_cases in cases.items():
            _write_jsonl(tp.cases / f"{node_id}.jsonl", node_cases)
        say(
            f"labeled {len(rows)} scenarios and {sum(map(len, cases.values()))} cases ({time.perf_counter() - t0:.1f}s)"
        )
        manifest = wanted | {
            "site_names": list(world.sites),
            "data_hash": data_hash(world),
            "alarms": len(alarms),
            "scenarios": len(rows),
            "cases": {k: len(v) for k, v in cases.items()},
            "build_seconds": round(time.perf_counter() - t0, 2),
        }
        tp.manifest.write_text(json.dumps(manifest, indent=1))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = root.with_name(f"fc_world.old{os.getpid()}")
    if root.exists():
        root.rename(old)
    tmp.rename(root)
    shutil.rmtree(old, ignore_errors=True)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build the simulated fulfillment-center world.")
    ap.add_argument("--home", default=os.environ.get("SOPGRAPH_HOME", ".sopgraph"))
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--days", type=int, default=28)
    ap.add_argument("--sites", type=int, default=None)
    ap.add_argument("--force", action="store_true", help="rebuild even if a matching world exists")
    args = ap.parse_args(argv)
    paths = build_world(
        Path(args.home), args.seed, days=args.days, sites=args.sites, force=args.force
    )
    print(paths.root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
