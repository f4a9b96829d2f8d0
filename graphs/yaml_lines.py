"""Parse SOP YAML into plain data plus the line of every key, with syntax errors in plain words.

``true:`` / ``false:`` keys stay strings (they name edges), duplicate keys are errors rather than
silently dropped, and a syntax error names the node whose block holds it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from sopgraph.graphs.problems import Problem, SopError
from sopgraph.graphs.yaml_limits import check_yaml_limits


@dataclass
class LineMap:
    """Line numbers (1-based) of every mapping key and value in a YAML document."""

    lines: dict[tuple[Any, ...], int] = field(default_factory=dict)
    # (mapping path, key, first line, repeated line) of every key given twice.
    duplicates: list[tuple[tuple[Any, ...], Any, int, int]] = field(default_factory=list)

    def of(self, *path: Any) -> int:
        """The line of the deepest known prefix of ``path`` (1 when nothing is known)."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:end]))
            if line is not None:
                return line
        return 1

    def node(self, node_id: str, *path: Any) -> int:
        return self.of("nodes", node_id, *path)


def _key_text(key: yaml.Node) -> Any:
    """A mapping key as the SOP means it: ``true:`` and ``false:`` are edge names, not booleans."""
    if isinstance(key, yaml.ScalarNode):
        if key.tag == "tag:yaml.org,2002:bool" and key.value.lower() in ("true", "false"):
            return key.value.lower()
        return key.value
    return str(key.value)


def _walk(node: yaml.Node, path: tuple[Any, ...], out: LineMap) -> None:
    out.lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key, value in node.value:
            k = _key_text(key)
            line = key.start_mark.line + 1
            if k in seen:
                out.duplicates.append((path, k, seen[k], line))
                continue
            seen[k] = line
            out.lines[(*path, k)] = line
            _walk(value, (*path, k), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out.lines[(*path, i)] = item.start_mark.line + 1
            _walk(item, (*path, i), out)


class _SopLoader(yaml.SafeLoader):
    """SafeLoader whose mapping keys ``true`` / ``false`` stay strings (YAML 1.1 makes them bools,
    which would turn a node's ``next: {true: [...]}`` into ``{True: [...]}``)."""


def _construct_mapping(loader: _SopLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, bool):
            key = _key_text(key_node)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key must be a plain value", key_node.start_mark
            ) from None
        mapping[key] = loader.construct_object(value_node, deep=deep)
    return mapping


_SopLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

_NODE_KEY = re.compile(r"^(\s+)([^\s#:][^:#]*?)\s*:(\s|$)")


def _node_at_line(text: str, line: int) -> str:
    """The id of the node whose block holds ``line``, read from the raw text.

    Used for YAML syntax errors, where no parsed structure exists to ask.
    """
    rows = text.splitlines()
    indent = None
    found = ""
    for row in rows[: max(line, 0)]:
        if re.match(r"^nodes\s*:", row):
            indent, found = None, ""
            continue
        if row.strip() == "" or row.lstrip().startswith("#"):
            continue
        if not row[0].isspace():
            if indent is not None or found:
                indent, found = -1, ""
            continue
        m = _NODE_KEY.match(row)
        if indent is None and m:
            indent = len(m.group(1))
        if indent is not None and indent >= 0 and m and len(m.group(1)) == indent:
            found = m.group(2).strip("'\"")
    return found if indent is not None and indent >= 0 else ""


def _syntax_message(exc: yaml.MarkedYAMLError) -> tuple[int, str]:
    """A line and a plain-words message for a YAML syntax error."""
    problem = exc.problem or "invalid YAML"
    context = exc.context or ""
    mark = exc.problem_mark or exc.context_mark
    if exc.context_mark and ("quoted scalar" in context or "flow" in context):
        opened = "quote" if "quoted" in context else "bracket"
        return exc.context_mark.line + 1, (
            f"YAML syntax: the {opened} opened on this line is never closed; close it"
        )
    if "constructor for the tag" in problem:
        msg = "unsupported YAML tag: an SOP holds plain values; remove the tag"
    elif "\\t" in problem or "\t" in problem:
        msg = "YAML syntax: a tab character; indent with spaces"
    elif problem.startswith("mapping values are not allowed"):
        msg = "YAML syntax: unexpected ':'; quote text that contains ': ' or fix the indentation"
    elif problem.startswith("expected <block end>"):
        msg = "YAML syntax: this line's indentation does not match the lines above; align it"
    else:
        msg = f"YAML syntax: {problem}; fix the indentation or quoting"
    return (mark.line + 1 if mark else 1), msg


def _duplicate_problem(file: str, dup: tuple[tuple[Any, ...], Any, int, int]) -> Problem:
    path, key, first, line = dup
    if path == ("nodes",):
        return Problem(
            file,
            line,
            str(key),
            f"duplicate node id '{key}' (first defined on line {first}); "
            "give each node a unique id",
        )
    node = str(path[1]) if len(path) > 1 and path[0] == "nodes" else ""
    where = ".".join(str(p) for p in (path[2:] if node else path))
    inside = f" in '{where}'" if where else ""
    return Problem(
        file,
        line,
        node,
        f"duplicate key '{key}'{inside} (first on line {first}); YAML keeps only the last, "
        "so merge them into one",
    )


def parse_yaml(text: str, file: str) -> tuple[Any, LineMap]:
    """Parse YAML text into data and a line map; raise SopError on syntax or duplicate keys.

    Depth, alias expansion and tags are checked first (``graphs/yaml_limits.py``).
    """
    try:
        check_yaml_limits(text, file)
    except SopError as exc:
        first = exc.problems[0]
        node = _node_at_line(text, first.line)
        raise SopError([Problem(first.file, first.line, node, first.message)]) from None
    try:
        # libyaml parses ~20x faster; the pure-Python parser words syntax errors better.
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        root = None
    try:
        if root is None:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
        constructor = _SopLoader("")
        try:
            data = constructor.construct_document(root) if root is not None else None
        finally:
            constructor.dispose()
    except yaml.MarkedYAMLError as exc:
        line, msg = _syntax_message(exc)
        raise SopError([Problem(file, line, _node_at_line(text, line), msg)]) from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        raise SopError(
            [
                Problem(
                    file,
                    line,
                    _node_at_line(text, line),
                    f"the control character U+{exc.character:04X} is not allowed in YAML; "
                    "remove it",
                )
            ]
        ) from None
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SopError([Problem(file, 1, "", f"YAML syntax: {first}")]) from None
    lines = LineMap()
    if root is not None:
        _walk(root, (), lines)
    if lines.duplicates:
        raise SopError([_duplicate_problem(file, lines.duplicates[0])])
    return data, lines
