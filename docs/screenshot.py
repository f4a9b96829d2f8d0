"""Screenshot an HTML report in headless Chromium: the overview, or one alarm alone.

    python docs/screenshot.py REPORT.html OUT.png [--alarm ALM-002278] [--width 1500]

Chromium comes from Debian (``apt-get install chromium``); it runs offline with a fresh
profile. Without ``--alarm`` the page is shot from the top; with it, the report's
``#only-alarm-<id>`` view (that alarm alone). ``--alarm first`` picks the first alarm that
found a root cause.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
    "--virtual-time-budget=5000",
]  # fmt: skip


def chromium() -> str | None:
    """The Chromium binary on PATH, or None."""
    return next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p),
        None,
    )


def first_alarm_with_root_cause(report: Path) -> str:
    text = report.read_text(encoding="utf-8")
    for section in text.split("<section class=alarm")[1:]:
        if "class='chip rc'" in section.split("<div class=drawing>")[0]:
            return re.search(r"id='alarm-([^']+)'", section).group(1)
    raise SystemExit(f"error: {report}: no alarm with a root cause to show")


def screenshot(report: Path, out: Path, alarm: str | None, width: int, height: int) -> Path:
    """Write ``out`` (PNG) from ``report``; raises SystemExit with one line if it cannot."""
    binary = chromium()
    if binary is None:
        raise SystemExit("error: Chromium is not installed: apt-get install -y chromium")
    if alarm == "first":
        alarm = first_alarm_with_root_cause(report)
    url = report.resolve().as_uri() + (f"#only-alarm-{alarm}" if alarm else "")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sopgraph-chromium-") as profile:
        done = subprocess.run(
            [binary, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
             f"--screenshot={out.resolve()}", url],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    if done.returncode != 0 or not out.exists():
        why = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise SystemExit(f"error: Chromium could not shoot {url}: {why}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--alarm", help="an alarm id, or 'first' (the first with a root cause)")
    ap.add_argument("--width", type=int, default=1500)
    ap.add_argument("--height", type=int, default=1700)
    args = ap.parse_args(argv)
    print(screenshot(args.report, args.out, args.alarm, args.width, args.height))
    return 0


if __name__ == "__main__":
    sys.exit(main())
