"""Load one SOP-Bench domain folder: SOP text, tool specs, tasks with only the input columns.

The simulator (``tools.py``) is third-party code: it is only parsed here (``ast``) to check
that it serves every tool the specs offer; it runs in the tool server's own process.
"""

from __future__ import annotations

import ast
import csv
import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_DATA = Path("/work/shared/sopbench")
REQUIRED_FILES = ("sop.txt", "toolspecs.json", "tools.py", "metadata.json")
TASK_FILE = "test_set_with_outputs.csv"
VIEW_FILE = "test_set_without_outputs.csv"  # the task view the benchmark publishes


class DomainError(ValueError):
    """A domain folder that cannot be evaluated; ``str`` is one line: what, where, how to fix."""


def data_root(explicit: str | Path | None = None) -> Path:
    """Where the domains live: ``--data``, else ``SOPBENCH_DATA``, else the shared copy."""
    return Path(explicit or os.environ.get("SOPBENCH_DATA") or DEFAULT_DATA)


def resolve_domain(spec: str | Path, data: str | Path | None = None) -> Path:
    """A domain path as given, or a bare name looked up under the data root."""
    p = Path(spec)
    if p.is_dir() or p.is_absolute() or len(p.parts) > 1:
        return p
    return data_root(data) / p


class ToolSpec(BaseModel):
    """One Bedrock ``toolSpec``: what an agent is offered."""

    model_config = ConfigDict(extra="ignore")
    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})


class Task(BaseModel):
    """One row: ``inputs`` is all an agent may see; ``expected`` is only for scoring."""

    task_id: str
    inputs: dict[str, str]
    expected: dict[str, str]


class Domain(BaseModel):
    name: str
    path: Path
    sop_text: str
    tools: list[ToolSpec]
    input_columns: list[str]
    output_columns: list[str]
    tasks: list[Task]

    def label(self, task: Task) -> str:
        """The answer label a stratified sample balances over (all output fields joined)."""
        return " | ".join(task.expected[c] for c in self.output_columns)


def read_toolspecs(path: Path) -> list[ToolSpec]:
    """Parse ``toolspecs.json`` (a list of ``{"toolSpec": {...}}``)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DomainError(f"{path}: not readable JSON ({exc}); fix or restore the file") from None
    items = raw.get("tools", raw) if isinstance(raw, dict) else raw
    specs: list[ToolSpec] = []
    for i, item in enumerate(items if isinstance(items, list) else []):
        spec = item.get("toolSpec", item) if isinstance(item, dict) else None
        if not isinstance(spec, dict) or "name" not in spec:
            raise DomainError(f"{path}: entry {i} has no toolSpec.name; each entry needs one")
        schema = (spec.get("inputSchema") or {}).get("json") or {"type": "object"}
        specs.append(
            ToolSpec(
                name=spec["name"], description=spec.get("description", ""), input_schema=schema
            )
        )
    if not specs:
        raise DomainError(f"{path}: no tool specs; expected a list of {{'toolSpec': ...}}")
    return specs


def simulator_tools(path: Path) -> tuple[str, set[str]]:
    """The ``*Manager`` class of ``tools.py`` and the tool names it serves, read without running it.

    A name is served when it is a method of the class or a string that ``process_tool_call``
    dispatches on.
    """
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as exc:
        raise DomainError(f"{path}:{exc.lineno}: not valid Python ({exc.msg})") from None
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.endswith("Manager")]
    if len(classes) != 1:
        raise DomainError(f"{path}: expected one *Manager class, found {len(classes)}")
    cls = classes[0]
    served: set[str] = set()
    for fn in cls.body:
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            if not fn.name.startswith("_"):
                served.add(fn.name)
            if fn.name == "process_tool_call":
                served |= {
                    n.value
                    for n in ast.walk(fn)
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)
                }
    return cls.name, served


def read_metadata(path: Path) -> tuple[list[str], list[str]]:
    """``metadata.json``'s input and output columns. Without ``input_columns``, the inputs are
    the columns of ``test_set_without_outputs.csv`` beside it (the task view the benchmark
    publishes for agents), less any output column."""
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DomainError(f"{path}: not readable JSON ({exc}); fix or restore the file") from None
    outputs = meta.get("output_columns")
    if not outputs:
        raise DomainError(f"{path}: no output_columns; list the answer columns there")
    inputs = meta.get("input_columns") or _published_inputs(path.parent / VIEW_FILE, outputs)
    if not inputs:
        # the reference loader would then pass the whole row, answer included: refuse instead
        raise DomainError(
            f"{path}: no input_columns and no {VIEW_FILE}, so the agent's view of a task is "
            "undefined (the whole row would leak the answer); add input_columns to metadata.json"
        )
    return list(inputs), list(outputs)


def _published_inputs(path: Path, outputs: list[str]) -> list[str]:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            header = next(csv.reader(f), [])
    except OSError:
        return []
    return [c for c in header if c and c not in outputs]


def read_tasks(path: Path, inputs: list[str], outputs: list[str], id_col: str) -> list[Task]:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
            header = list(rows[0]) if rows else []
    except OSError as exc:
        raise DomainError(f"{path}: cannot read it ({exc.strerror})") from None
    if not rows:
        raise DomainError(f"{path}: no tasks (empty CSV)")
    missing = [c for c in inputs + outputs if c not in header]
    if missing:
        raise DomainError(
            f"{path}: columns {missing} named in metadata.json are not in the CSV header; "
            "make metadata.json and the CSV agree"
        )
    tasks = []
    for i, row in enumerate(rows):
        tid = f"{i:04d}-{row.get(id_col, '')}"
        tasks.append(
            Task(
                task_id=tid,
                inputs={c: row[c] or "" for c in inputs},
                expected={c: row[c] or "" for c in outputs},
            )
        )
    return tasks


def load_domain(path: str | Path) -> Domain:
    """Load and check a domain folder; every problem is a one-line ``DomainError``."""
    root = Path(path)
    if not root.is_dir():
        raise DomainError(f"{root}: no such domain folder; give PATH/DOMAIN or a name under --data")
    missing = [f for f in (*REQUIRED_FILES, TASK_FILE) if not (root / f).is_file()]
    if missing:
        raise DomainError(
            f"{root}: missing {', '.join(missing)}; a domain folder needs all of them"
        )
    inputs, outputs = read_metadata(root / "metadata.json")
    specs = read_toolspecs(root / "toolspecs.json")
    cls, served = simulator_tools(root / "tools.py")
    unserved = [s.name for s in specs if s.name not in served]
    if unserved:
        raise DomainError(
            f"{root / 'toolspecs.json'}: tools {unserved} are not served by {cls} in tools.py; "
            "make the specs and the simulator name the same tools"
        )
    return Domain(
        name=root.name,
        path=root.resolve(),
        sop_text=(root / "sop.txt").read_text(encoding="utf-8"),
        tools=specs,
        input_columns=inputs,
        output_columns=outputs,
        tasks=read_tasks(root / TASK_FILE, inputs, outputs, inputs[0]),
    )
