"""The layer contracts hold on the package as `make lint` installs it, and each one breaks on a
deliberate back-edge: an import that points up a layer, or across independent siblings."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "pyproject.toml"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def contract_names() -> dict[str, str]:
    """The contracts of pyproject.toml by a short key: their type, or the source of a forbidden."""
    contracts = tomllib.loads(CONFIG.read_text())["tool"]["importlinter"]["contracts"]
    return {
        c["type"] if c["type"] == "layers" else c["source_modules"][0]: c["name"] for c in contracts
    }


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The package installed as `make lint` installs it (pip --target), built from a fresh copy
    of the sources so that no other build's leftovers (setuptools' build/) come with it."""
    tmp = tmp_path_factory.mktemp("layers")
    src = tmp / "src"
    src.mkdir()
    setuptools = tomllib.loads(CONFIG.read_text())["tool"]["setuptools"]
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for folder in set(setuptools["package-dir"].values()):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp / "pkg"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
        + ["--target", str(target), str(src)],
        check=True,
        capture_output=True,
    )
    return target


def lint(target: Path) -> tuple[int, str]:
    """Run import-linter with the project's contracts; its exit code and its words, unwrapped."""
    proc = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(CONFIG)],
        cwd=target,
        env={"PYTHONPATH": str(target), "PATH": str(LINT_IMPORTS.parent)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def test_the_installed_package_keeps_every_contract(installed):
    rc, out = lint(installed)
    assert rc == 0, out
    for name in contract_names().values():
        assert f"{name} KEPT" in out


# (file of the installed package, the import appended to it, the contracts it must break)
BACK_EDGES = [
    # the compiler reaching up into the runtime that drives it
    ("graphs/compiler.py", "import sopgraph.runtime", ["layers", "sopgraph.graphs"]),
    # the SOP model importing the compiler built on it
    ("graphs/model.py", "import sopgraph.graphs.compiler", ["sopgraph.graphs.model"]),
    # an executor reaching the session
    ("nodes/tool_node.py", "import sopgraph.runtime.runner", ["layers", "sopgraph.nodes"]),
    # the tool store reaching tool work
    ("tools/registry.py", "import sopgraph.tools.shadow", ["layers"]),
    # independent siblings: the prompts and the tool store
    ("prompts/routing.py", "import sopgraph.tools.registry", ["layers"]),
    # the runtime reaching the MCP servers that run on it
    ("runtime/services.py", "import sopgraph.mcp_servers", ["layers"]),
]


@pytest.mark.parametrize("path,statement,broken", BACK_EDGES, ids=[e[0] for e in BACK_EDGES])
def test_a_back_edge_breaks_its_contracts(installed, path, statement, broken):
    file = installed / "sopgraph" / path
    original = file.read_text()
    file.write_text(f"{original}\n{statement}  # a deliberate back-edge\n")
    try:
        rc, out = lint(installed)
    finally:
        file.write_text(original)
    assert rc != 0, out
    names = contract_names()
    for key in broken:
        assert f"{names[key]} BROKEN" in out, out
    module = "sopgraph." + path.removesuffix(".py").replace("/", ".")
    assert module in out  # the report names the importer
