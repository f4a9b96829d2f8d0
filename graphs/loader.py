"""Load an SOP file into the model, reporting every user mistake as one line with its place.

Errors read ``error: <file>:<line>: <node id>: <what is wrong and how to fix it>``. YAML
parsing lives in ``graphs/yaml_lines.py``, graph-level checks in ``graphs/validate.py``; this
module turns model (pydantic) errors into problems and ties the steps together.
"""

from __future__ import annotations

import difflib
import os
import stat
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sopgraph.graphs.model import (
    NODE_KINDS,
    Api,
    Condition,
    InputField,
    Next,
    Node,
    Predicate,
    Sop,
)
from sopgraph.graphs.problems import Problem, SopError
from sopgraph.graphs.validate import validate
from sopgraph.graphs.yaml_limits import (
    MAX_NODES,
    MAX_SOP_BYTES,
    decode_sop_bytes,
    too_many_nodes,
)
from sopgraph.graphs.yaml_lines import LineMap, parse_yaml

# Other modules take the file-level API from here; parsing and problems live next door.
__all__ = ["LineMap", "Problem", "SopError", "load_sop", "load_sop_text", "parse_yaml"]


def _allowed_fields(loc: tuple[Any, ...]) -> list[str]:
    """Field names (as written in YAML) of the model found at ``loc``."""
    shape = tuple("*" if isinstance(p, int) else p for p in loc)
    if shape[:1] in (("nodes",), ("input",)) and len(shape) >= 2:
        shape = (shape[0], "<id>", *shape[2:])
    model = {
        (): Sop,
        ("nodes", "<id>"): Node,
        ("nodes", "<id>", "next"): Next,
        ("nodes", "<id>", "api"): Api,
        ("nodes", "<id>", "next", "when", "*"): Condition,
        ("nodes", "<id>", "next", "when", "*", "if"): Predicate,
        ("input", "<id>"): InputField,
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
    # Unknown fields by the mapping that holds them: a missing field is compared with its own
    # mapping's unknown ones only (comparing every pair made 1,000 misspelled nodes quadratic).
    extras: dict[tuple[Any, ...], list[str]] = {}
    for e in errors:
        if e["type"] == "extra_forbidden":
            extras.setdefault(e["loc"][:-1], []).append(str(e["loc"][-1]))
    out = []
    for err in errors:
        loc = err["loc"]
        if err["type"] == "missing" and any(
            difflib.get_close_matches(x, [str(loc[-1])], cutoff=0.6)
            for x in extras.get(loc[:-1], [])
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
            text = err["msg"].removeprefix("Value error, ")
            what = text[:1].lower() + text[1:]
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
                    f"got a {type(data).__name__}; see docs/sop-format.md",
                )
            ]
        )
    nodes = data.get("nodes")
    if isinstance(nodes, dict) and len(nodes) > MAX_NODES:  # e.g. nodes merged in by aliases
        raise too_many_nodes(file, lines.of("nodes"), len(nodes))
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
        problems = validate(sop, lines, file)
        if problems:
            raise SopError(problems)
    return sop


def read_sop_file(path: Path) -> str:
    """The text of an SOP file, read only if it is a regular file within the size limit."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; only regular files are read.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise SopError([Problem(str(path), 1, "", "no such SOP file; check the path")]) from None
    except OSError as exc:
        raise SopError(
            [Problem(str(path), 1, "", f"cannot open the SOP file ({exc.strerror}); check it")]
        ) from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SopError(
                [
                    Problem(
                        str(path),
                        1,
                        "",
                        "not a regular file (a device, pipe or socket, maybe through a "
                        "symlink); give an SOP YAML file",
                    )
                ]
            )
        data = f.read(MAX_SOP_BYTES + 1)  # one byte over the limit is enough to refuse
    return decode_sop_bytes(data, str(path))


def load_sop(path: str | Path, check: bool = True) -> Sop:
    """Load an SOP file (or a directory holding ``sop.yaml``)."""
    p = Path(path)
    if p.is_dir():
        p = p / "sop.yaml"
    text = read_sop_file(p)
    file = str(path if Path(path).is_file() else p)
    sop = load_sop_text(text, file, check=check)
    if check and sop.params_by is None:
        _check_unkeyed_params(sop, p.parent / "params", file)
    return sop


def _check_unkeyed_params(sop: Sop, params_dir: Path, file: str) -> None:
    """Parameter files beside an SOP that names no field to key them on would silently not
    apply (every run would use the defaults): refuse them with the fix."""
    stray = sorted(f.name for f in params_dir.glob("*.yaml")) if params_dir.is_dir() else []
    if stray:
        more = f" (and {len(stray) - 1} more)" if len(stray) > 1 else ""
        fields = ", ".join(f for f in sop.input if f != "type") or "none declared"
        raise SopError(
            [
                Problem(
                    file,
                    1,
                    "",
                    f"params/{stray[0]}{more} would never be read: the SOP names no input field "
                    "to key parameter files on; add `params_by: <input field>` "
                    f"(input fields: {fields})",
                )
            ]
        )
