"""No two modules of the installed package import each other, directly or round a circle.

grimp (under import-linter) cannot see the folders installed under the ``sopgraph`` namespace
from an editable install, so the graph is built here from the source: every import statement,
at module level or inside a function (a lazy import still ties the two files together).
"""

from __future__ import annotations

import ast
from pathlib import Path

from package_files import package_modules

from sopgraph.graphs.topology import Edge, cycles, shortest_cycle


def _imported(name: str, file: Path, known: set[str]) -> set[str]:
    """The package's modules that ``name`` imports anywhere in its source."""
    package = name if file.stem == "__init__" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"), str(file))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            # `from pkg import mod` imports the module pkg.mod; `from mod import name` imports mod
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import a.b.c` of a name inside a module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = package_modules()
    known = set(modules)
    return {name: _imported(name, file, known) for name, file in modules.items()}


def circles(imports: dict[str, set[str]]) -> list[str]:
    """One shortest circle through each tangle of modules importing each other."""
    # the SOP validator's loop finder: one place knows what a cycle is
    graph = {m: [Edge(m, t, "import", ()) for t in sorted(ts)] for m, ts in imports.items()}
    found = []
    for tangle in cycles(graph, sorted(graph)):
        _, circle = shortest_cycle(graph, tangle, min(tangle))
        text = " -> ".join([*circle, circle[0]])
        if len(tangle) > len(circle):
            text += f" (the tangle holds {', '.join(sorted(tangle))})"
        found.append(text)
    return found


def test_the_graph_sees_every_folder_of_the_package() -> None:
    graph = import_graph()
    tops = {name.split(".")[1] for name in graph if name.count(".") >= 1}
    assert {"cli", "graphs", "nodes", "tools", "prompts", "mcp_servers", "evals"} <= tops
    assert "sopgraph.commands.eval" in graph["sopgraph.cli"]  # `from pkg import mod as name`
    assert "sopgraph.runtime.runner" in graph["sopgraph.commands.run"]  # imported in a function


def test_the_check_finds_a_circle() -> None:
    imports = {"a": {"b"}, "b": {"c", "d"}, "c": {"a"}, "d": {"b"}, "e": {"a"}}
    assert circles(imports) == ["a -> b -> c -> a (the tangle holds a, b, c, d)"]


def test_no_two_modules_import_each_other() -> None:
    found = circles(import_graph())
    assert not found, "import circles:\n" + "\n".join(found)
