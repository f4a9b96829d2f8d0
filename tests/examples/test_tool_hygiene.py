"""Compiled tools see the world only through MCP: no simulator, labeler, ground truth or data files."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL_FILES = sorted(ROOT.glob("examples/*/tools/*/v*.py"))
ALLOWED_PROJECT_IMPORTS = {"sopgraph.graphs.model", "sopgraph.tools.kit", "sopgraph.tools.spec"}
LOAD_TIME_IMPORTS = {"sopgraph.tools.registry", "sopgraph.tools.contract"}
KIT = ROOT / "tools" / "kit.py"
SPEC_FILES = sorted((ROOT / "tools" / "spec").glob("*.py"))
FORBIDDEN_NAMES = {"open", "exec", "eval", "__import__", "compile"}
DATA_SUFFIXES = (".duckdb", ".sqlite", ".jsonl", ".parquet", ".csv", "fc_world", "cases.json")


def _problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            for name in names:
                top = name.split(".")[0]
                if name in ALLOWED_PROJECT_IMPORTS or top in sys.stdlib_module_names:
                    continue
                if name.startswith("sopgraph.tools.spec."):
                    continue
                out.append(f"imports {name}")
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            out.append(f"uses {node.id}()")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if any(s in node.value for s in DATA_SUFFIXES):
                out.append(f"names a data file: {node.value!r}")
    for mod in ("pathlib", "sqlite3", "duckdb", "os", "subprocess", "socket"):
        if any(p == f"imports {mod}" for p in out) or f"import {mod}" in path.read_text():
            out.append(f"may reach data outside MCP through {mod}")
    return sorted(set(out))


def test_there_are_tools():
    assert len(TOOL_FILES) >= 9


@pytest.mark.parametrize("path", TOOL_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_tool_reaches_data_only_through_mcp(path):
    assert _problems(path) == []


def test_the_check_catches_a_cheating_tool(tmp_path):
    bad = tmp_path / "v1.py"
    bad.write_text(
        "import duckdb\nfrom sopgraph.evals.fc_triage import labeler\n"
        "async def run(input, ctx):\n    return open('x.jsonl').read()\n"
    )
    problems = _problems(bad)
    assert "imports sopgraph.evals.fc_triage" in problems and "uses open()" in problems
    assert any("duckdb" in p for p in problems)


def test_the_kit_is_standard_library_only():
    tree = ast.parse(KIT.read_text(), str(KIT))
    imported = [
        a.name if isinstance(node, ast.Import) else node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for a in (node.names if isinstance(node, ast.Import) else [node])
    ]
    assert imported and all(
        name.split(".")[0] in sys.stdlib_module_names or name == "__future__" for name in imported
    ), imported
    assert _problems(KIT) == []


@pytest.mark.parametrize("path", SPEC_FILES, ids=lambda p: p.name)
def test_the_spec_runtime_uses_only_the_kit_and_the_standard_library(path):
    """A spec tool is as hygienic as a hand-written one: its runtime reaches data only
    through the kit's MCP calls. pydantic is the spec's model (``Check``), as it is the
    verdict's (``sopgraph.graphs.model``): data types, no I/O."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            for name in names:
                assert (
                    name.split(".")[0] in sys.stdlib_module_names
                    or name == "__future__"
                    or name == "pydantic"
                    or name in ALLOWED_PROJECT_IMPORTS
                    or name.startswith("sopgraph.tools.spec.")
                    # spec_of, at load time: a registered version, through the registry
                    or (path.name == "__init__.py" and name in LOAD_TIME_IMPORTS)
                ), f"{path.name} imports {name}"
    load_time = {f"imports {m}" for m in LOAD_TIME_IMPORTS} if path.name == "__init__.py" else set()
    assert [p for p in _problems(path) if p not in load_time | {"imports pydantic"}] == []
