"""Load an SOP file into the model, reporting every user mistake as one line with its place.

Errors read ``error: <file>:<line>: <node id>: <what is wrong and how to fix it>``.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from graphs.model import NODE_KINDS, Api, Condition, Next, Node, Predicate, Sop


@dataclass(frozen=True)
class Problem:
    """One mistake in an SOP file."""

    file: str
    line: int
    node: str
    message: str

    def __str__(self) -> str:
        return f"error: {self.file}:{self.line}: {self.node or '-'}: {self.message}"


class SopError(Exception):
    """An SOP file the user must fix; ``str()`` is one ``error:`` line per problem."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


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
    if "\\t" in problem or "\t" in problem:
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
    """Parse YAML text into data and a line map; raise SopError on syntax or duplicate keys."""
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
    except yaml.YAMLError as exc:
        raise SopError([Problem(file, 1, "", f"YAML syntax: {exc}")]) from None
    lines = LineMap()
    if root is not None:
        _walk(root, (), lines)
    if lines.duplicates:
        raise SopError([_duplicate_problem(file, lines.duplicates[0])])
    return data, lines


def _allowed_fields(loc: tuple[Any, ...]) -> list[str]:
    """Field names (as written in YAML) of the model found at ``loc``."""
    shape = tuple("*" if isinstance(p, int) else p for p in loc)
    if shape[:1] == ("nodes",) and len(shape) >= 2:
        shape = ("nodes", "<id>", *shape[2:])
    model = {
        (): Sop,
        ("nodes", "<id>"): Node,
        ("nodes", "<id>", "next"): Next,
        ("nodes", "<id>", "api"): Api,
        ("nodes", "<id>", "next", "when", "*"): Condition,
        ("nodes", "<id>", "next", "when", "*", "if"): Predicate,
    }.get(shape)
    if model is None:
        return []
    return [
        f.alias or name for name, f in model.model_fields.items() if name != "id" or model is Sop
    ]


def _clean_errors(exc: ValidationError, data: Any) -> list[dict[str, Any]]:
    """Pydantic errors without the noise: one error per union field, typo'd fields merged."""
    errors = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        if "if" in loc and loc[loc.index("if") + 1 : loc.index("if") + 2] in (
            ("str",),
            ("Predicate",),
        ):
            # `if` is a predicate mapping or a condition text; pydantic reports both readings.
            i = loc.index("if")
            if isinstance(_at(data, loc[: i + 1]), dict):
                if loc[i + 1] == "str":
                    continue
            else:
                err = {
                    **err,
                    "type": "if_type",
                    "msg": "use a predicate {var, op, value} or a text",
                }
            loc = loc[: i + 1] + loc[i + 2 :]
        errors.append({**err, "loc": loc})
    # A misspelled field shows up twice (unknown 'node', missing 'nodes'): keep the unknown one.
    extras = {e["loc"] for e in errors if e["type"] == "extra_forbidden"}
    out = []
    for err in errors:
        loc = err["loc"]
        if err["type"] == "missing" and any(
            x[:-1] == loc[:-1] and difflib.get_close_matches(str(x[-1]), [str(loc[-1])], cutoff=0.6)
            for x in extras
        ):
            continue
        out.append(err)
    seen: set[tuple[Any, ...]] = set()
    return [e for e in out if not (e["loc"] in seen or seen.add(e["loc"]))]


def _at(data: Any, loc: tuple[Any, ...]) -> Any:
    for part in loc:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


# How to write a required field or a mapping the user got wrong, for the fix part of a message.
_EXAMPLES = {
    ("id",): "e.g. 'id: dock_triage'",
    ("entry",): "e.g. 'entry: {station_idle: [obs_first]}'",
    ("nodes",): "e.g. 'nodes: {obs_first: {kind: observation, text: ...}}'",
    ("next",): "e.g. 'next: {true: [a], false: [b]}'",
    ("api",): "e.g. 'api: {name: escalate_issue, description: ...}'",
}


def _dotted(path: tuple[Any, ...]) -> str:
    """``("next", "when", 0, "if")`` as ``next.when[0].if``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _pydantic_problems(exc: ValidationError, data: Any, file: str, lines: LineMap) -> list[Problem]:
    problems: list[Problem] = []
    for err in _clean_errors(exc, data):
        loc = tuple(err["loc"])
        node = str(loc[1]) if len(loc) > 1 and loc[0] == "nodes" else ""
        rel = loc[2:] if node else loc
        field_path = _dotted(rel)
        example = _EXAMPLES.get(rel, "")
        got = _short(err["input"])
        kind = err["type"]
        if node and rel == ("kind",) and kind in ("missing", "string_type"):
            msg = f"missing 'kind'; use one of: {', '.join(NODE_KINDS)}"
        elif kind == "missing":
            msg = f"missing required field '{field_path}'; add it" + (
                f", {example}" if example else ""
            )
        elif kind == "extra_forbidden":
            allowed = _allowed_fields(loc[:-1])
            near = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
            hint = f"did you mean '{near[0]}'?" if near else f"use one of: {', '.join(allowed)}"
            msg = f"unknown field '{field_path}'; {hint}"
        elif node and not rel:
            msg = f"a node is a mapping with at least 'kind', e.g. '{{kind: action, text: ...}}', got {got}"
        elif kind in ("model_type", "dict_type"):
            msg = (
                f"'{field_path}' must be a mapping"
                + (f", {example}" if example else "")
                + f"; got {got}"
            )
        else:
            what = err["msg"][:1].lower() + err["msg"][1:]
            msg = f"{field_path}: {what}" + (
                "" if isinstance(err["input"], dict) else f", got {got}"
            )
            if isinstance(err["input"], bool):
                msg += " (YAML reads yes/no/on/off as true/false; quote the word)"
        problems.append(Problem(file, lines.of(*loc), node, msg))
    return problems


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def load_sop_text(text: str, file: str = "<sop>", check: bool = True) -> Sop:
    """Parse and validate SOP YAML text. Raises SopError with every problem found."""
    data, lines = parse_yaml(text, file)
    if (
        data is None
        or data == {}
        or (isinstance(data, dict) and "nodes" in data and not data["nodes"])
    ):
        raise SopError(
            [Problem(file, 1, "", "empty SOP: add an 'id', an 'entry' and at least one node")]
        )
    if not isinstance(data, dict):
        raise SopError(
            [
                Problem(
                    file,
                    lines.of(),
                    "",
                    f"an SOP file is a mapping with 'id', 'entry' and 'nodes', "
                    f"got a {type(data).__name__}; see the SOP format in README.md",
                )
            ]
        )
    nodes = data.get("nodes")
    if isinstance(nodes, dict):
        for node_id, node in nodes.items():
            kind = node.get("kind") if isinstance(node, dict) else None
            if kind is not None and kind not in NODE_KINDS:
                near = difflib.get_close_matches(str(kind), NODE_KINDS, n=1)
                hint = (
                    f"did you mean '{near[0]}'?" if near else f"use one of: {', '.join(NODE_KINDS)}"
                )
                raise SopError(
                    [
                        Problem(
                            file,
                            lines.node(node_id, "kind"),
                            str(node_id),
                            f"unknown kind '{kind}'; {hint}",
                        )
                    ]
                )
    try:
        sop = Sop.model_validate(data)
    except ValidationError as exc:
        raise SopError(_pydantic_problems(exc, data, file, lines)) from None
    if check:
        from graphs.validate import validate

        problems = validate(sop, lines, file)
        if problems:
            raise SopError(problems)
    return sop


def load_sop(path: str | Path, check: bool = True) -> Sop:
    """Load an SOP file (or a directory holding ``sop.yaml``)."""
    p = Path(path)
    if p.is_dir():
        p = p / "sop.yaml"
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SopError([Problem(str(p), 1, "", "no such SOP file; check the path")]) from None
    except (IsADirectoryError, UnicodeDecodeError) as exc:
        raise SopError([Problem(str(p), 1, "", f"cannot read the SOP file: {exc}")]) from None
    return load_sop_text(text, str(path if Path(path).is_file() else p), check=check)
