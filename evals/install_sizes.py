"""``make sizes``: what installing sopgraph costs, the core alone and with each extra.

Each install goes into a fresh virtual environment (``python -m venv``, then ``pip install
<wheel>[extra]``) with the versions of ``requirements/lock.txt`` as constraints, so the figures
are those of the locked releases. Measured: the packages pip adds (sopgraph included) and the MB
they take in site-packages (with the bytecode pip compiles), over an empty environment's.

    python evals/install_sizes.py [--only core,llm] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# what a copy of the checkout leaves out: environments, caches, build leftovers, run homes, and
# the tests and docs, which are not in the package (tests/data links to /dev/zero)
SKIP = shutil.ignore_patterns(
    ".git", ".venv*", "build", "*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache",
    ".sopgraph", ".langgraph_api", "tests", "docs",
)  # fmt: skip


def _pip(python: Path, *args: str | Path) -> None:
    """pip, its output shown only when it fails (a pip.conf may warn on every package)."""
    done = subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", "-q", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        sys.exit(f"pip {' '.join(map(str, args))} failed:\n{done.stdout}{done.stderr}")


def _site(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def _measure(site: Path) -> tuple[set[str], int]:
    """The distributions in ``site`` and the bytes of every file under it."""
    dists = {p.name.split("-")[0].lower() for p in site.glob("*.dist-info")}
    size = sum(f.stat().st_size for f in site.rglob("*") if f.is_file() and not f.is_symlink())
    return dists, size


def constraints(lock: Path, out: Path) -> Path:
    """``requirements/lock.txt`` as a constraints file: ``name==version`` lines, no hashes."""
    pins = re.findall(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?==(\S+)", lock.read_text(), re.M)
    out.write_text("".join(f"{name}=={version}\n" for name, version in pins))
    return out


def build_wheel(work: Path) -> Path:
    """sopgraph's wheel, built from a copy of the checkout (pip builds in the source tree)."""
    src = work / "src"
    shutil.copytree(ROOT, src, ignore=SKIP, symlinks=True)
    _pip(Path(sys.executable), "wheel", "--no-deps", "-w", work, src)
    return next(work.glob("sopgraph-*.whl"))


def install_size(wheel: Path, extra: str | None, pins: Path, work: Path) -> dict[str, object]:
    """Packages and MB that ``pip install sopgraph[extra]`` adds to a fresh environment."""
    venv = work / f"venv-{extra or 'core'}"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    before, base = _measure(_site(venv))
    start = time.perf_counter()
    _pip(python, "install", "-c", pins, f"{wheel}[{extra}]" if extra else wheel)
    seconds = time.perf_counter() - start
    after, size = _measure(_site(venv))
    shutil.rmtree(venv)
    return {
        "install": f"sopgraph[{extra}]" if extra else "sopgraph",
        "packages": len(after - before),
        "mb": round((size - base) / 1e6, 1),
        "seconds": round(seconds),
    }


def main(argv: list[str] | None = None) -> int:
    extras = list(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--only", help=f"comma-separated: core,{','.join(extras)} (default: all of them)"
    )
    p.add_argument("--json", action="store_true", help="one JSON object per install")
    args = p.parse_args(argv)
    wanted = args.only.split(",") if args.only else ["core", *extras]
    unknown = set(wanted) - {"core", *extras}
    if unknown:
        p.error(f"--only: no extra {', '.join(sorted(unknown))}; the extras: {', '.join(extras)}")
    with tempfile.TemporaryDirectory(prefix="sopgraph-sizes-") as tmp:
        work = Path(tmp)
        pins = constraints(ROOT / "requirements" / "lock.txt", work / "constraints.txt")
        wheel = build_wheel(work)
        core_mb = None
        if not args.json:
            print(f"{'install':<22} {'packages':>8} {'MB':>8} {'over the core':>14}")
        for name in wanted:
            row = install_size(wheel, None if name == "core" else name, pins, work)
            if name == "core":
                core_mb = row["mb"]
            if args.json:
                print(json.dumps(row), flush=True)
                continue
            over = (
                f"+{row['mb'] - core_mb:.1f} MB" if core_mb is not None and name != "core" else ""
            )
            print(
                f"{row['install']:<22} {row['packages']:>8} {row['mb']:>8} {over:>14}", flush=True
            )
    print(
        f"(Python {sys.version.split()[0]} on {os.uname().machine}, versions of requirements/lock.txt)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
