"""The locks in requirements/ stay in step with pyproject.toml: every dependency the package
declares is pinned there, with hashes, at a version its range admits."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCKS = ["lock.txt", "local-llm.txt", "phoenix.txt"]


def _pins(lock: Path) -> dict[str, tuple[str, list[str]]]:
    """``name -> (version, hashes)`` of a lock written by ``uv pip compile --generate-hashes``."""
    pins: dict[str, tuple[str, list[str]]] = {}
    for entry in re.split(r"\n(?=[A-Za-z0-9])", lock.read_text()):
        m = re.match(r"([A-Za-z0-9_.\-\[\]]+)==(\S+)", entry)
        if m:
            name = canonicalize_name(m[1].split("[")[0])
            pins[name] = (m[2], re.findall(r"--hash=sha256:([0-9a-f]{64})", entry))
    return pins


@pytest.mark.parametrize("name", LOCKS)
def test_every_pin_is_exact_and_hashed(name: str):
    pins = _pins(ROOT / "requirements" / name)
    assert len(pins) > 10
    unhashed = [n for n, (_, hashes) in pins.items() if not hashes]
    assert unhashed == [], f"{name}: pins without a hash: {unhashed}; run `make lock`"


def test_the_lock_admits_every_declared_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    # every extra's requirements, the extras that name other extras of sopgraph aside
    declared = project["dependencies"] + [
        spec for specs in extras.values() for spec in specs if Requirement(spec).name != "sopgraph"
    ]
    pins = _pins(ROOT / "requirements" / "lock.txt")
    wrong = []
    for spec in declared:
        req = Requirement(spec)
        pinned = pins.get(canonicalize_name(req.name))
        if pinned is None or not req.specifier.contains(pinned[0], prereleases=True):
            wrong.append(f"{spec} (lock: {pinned[0] if pinned else 'absent'})")
    assert wrong == [], f"pyproject.toml and requirements/lock.txt disagree: {wrong}; make lock"


def test_all_is_every_extra():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    (everything,) = extras["all"]
    assert Requirement(everything).extras == set(extras) - {"all"}
