"""Limits an SOP file must stay within, checked on the raw bytes and the YAML event stream
before anything builds a tree: size, encoding, nesting depth, alias expansion and tags.

PyYAML's composer recurses once per nesting level and the line map and pydantic expand
every alias, so a hostile file (an alias "billion laughs", thousands of nested brackets) must
be stopped here, where the parser's events are read one at a time with constant memory.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator

import yaml

from sopgraph.graphs.problems import Problem, SopError

MAX_SOP_BYTES = 4 * 1024 * 1024  # the largest SOP file read (the 64-node triage SOP: 21 KB)
MAX_DEPTH = 64  # nesting of mappings and lists (a node's predicate sits at depth 7)
# Nodes per SOP: LangGraph checkpoints a run's whole trail at every superstep, so a path of
# N nodes writes O(N^2) (a 1,000-node chain: ~0.3 GB in memory, ~0.2 GB of SQLite).
MAX_NODES = 1000
# Values (scalars, mappings, lists) after expanding every alias. Parsing, the line map, the
# model and the graph checks are linear in them (30-50 us a value on a busy 2-core machine),
# so this bounds a validation's time: 2-5 s there at the limit, where 4 MB SOPs within the
# old 500,000 took 10 to over 150 s. The 64-node triage SOP holds 1,202 values, a 1,000-node
# SOP about 10,000 (100 a node at the node limit).
MAX_VALUES = 100_000
# Tags an SOP may carry: YAML's core schema. Anything else (``!!python/object``, ``!!binary``,
# ``!!set``, ``!custom``) would construct a value the SOP model does not know.
_CORE_TAGS = {
    f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq")
}


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def decode_sop_bytes(data: bytes, file: str) -> str:
    """The text of an SOP file's bytes, or one problem: not UTF-8, a NUL byte, too large."""
    if len(data) > MAX_SOP_BYTES:
        raise _too_large(file)
    utf16 = data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or (
        len(data) >= 4 and (data[1:4:2] == b"\0\0" or data[0:4:2] == b"\0\0")
    )
    if utf16 or data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise SopError(
            [Problem(file, 1, "", "the file is UTF-16 or UTF-32 text; save it as UTF-8")]
        )
    nul = data.find(b"\0")
    if nul >= 0:
        raise SopError(
            [
                Problem(
                    file,
                    _line_of(data, nul),
                    "",
                    "the file holds a NUL byte (binary data, not YAML text); remove it or "
                    "save the file as UTF-8 text",
                )
            ]
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        byte = data[exc.start]
        raise SopError(
            [
                Problem(
                    file,
                    _line_of(data, exc.start),
                    "",
                    f"the file is not UTF-8 (byte 0x{byte:02x}; Latin-1 or Windows-1252?); "
                    "save it as UTF-8",
                )
            ]
        ) from None


def _events(text: str, fast: bool = True) -> Iterator[yaml.Event]:
    # libyaml's parser keeps its own stack (no recursion); PyYAML's pure parser likewise.
    loader = getattr(yaml, "CSafeLoader", None) if fast else None
    return yaml.parse(text, Loader=loader or yaml.SafeLoader)


def _too_large(file: str) -> SopError:
    limit = MAX_SOP_BYTES // (1024 * 1024)
    return SopError(
        [
            Problem(
                file,
                1,
                "",
                f"the SOP file is over {limit} MB (the limit); split the procedure into "
                "smaller SOPs",
            )
        ]
    )


def _problem(file: str, line: int, message: str) -> SopError:
    return SopError([Problem(file, line, "", message)])


def too_many_nodes(file: str, line: int, count: int) -> SopError:
    return _problem(
        file,
        line,
        f"the SOP has {count:,} nodes; sopgraph runs SOPs of at most {MAX_NODES:,} (a run "
        "checkpoints its whole trail at every step, so its memory and disk grow with the square "
        "of its path); split it into smaller SOPs",
    )


def check_yaml_limits(text: str, file: str) -> None:
    """Raise one problem when ``text`` is too large, nests too deep, holds too many values,
    carries a tag outside YAML's core schema or holds more than ``MAX_NODES`` nodes.

    One pass over the parser's events, before any tree is built. Syntax errors are left to
    the parser that follows, which words them with their line.

    libyaml may stop with an error of its own before it has emitted the events that show a
    limit crossed: PyYAML 6.0.4 bundles a libyaml that refuses 1,000 nesting levels while it
    scans ahead for a key, before the first event. So an error from libyaml is never taken at
    its word: the pass runs again on PyYAML's pure parser, which emits events as it goes and
    recurses on nothing, and the file is judged by what that pass saw before its own error.
    """
    if len(text) > MAX_SOP_BYTES:
        raise _too_large(file)
    try:
        _check_events(_events(text), file)
    except yaml.YAMLError:
        try:
            _check_events(_events(text, fast=False), file)
        except yaml.YAMLError:
            return  # a syntax error within the limits: the parser that follows words it


def _check_events(events: Iterator[yaml.Event], file: str) -> None:
    """Walk ``events``, raising SopError at the first limit crossed; a parser error propagates."""
    # Per open collection: [expanded size so far, anchor, is mapping, items seen].
    stack: list[list] = [[0, None, False, 0]]
    anchors: dict[str, int] = {}
    total = 0  # values after expanding aliases
    nodes_line, nodes_count, in_nodes = 0, 0, False
    # The values limit crossed inside 'nodes': the pass goes on to the end of 'nodes' counting
    # them, since "too many nodes" is the better message when it holds (a 10,000-node chain).
    too_many_values: SopError | None = None
    for event in events:
        kind = type(event)
        if (
            kind is yaml.ScalarEvent
            or kind is yaml.MappingStartEvent
            or (kind is yaml.SequenceStartEvent)
        ):
            tag = event.tag
            if tag and tag != "!" and tag not in _CORE_TAGS:
                shown = tag.replace("tag:yaml.org,2002:", "!!")
                raise _problem(
                    file,
                    event.start_mark.line + 1,
                    f"unsupported YAML tag '{shown}': an SOP holds plain text, numbers, "
                    "lists and mappings; remove the tag",
                )
        if kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
            parent = stack[-1]
            parent[3] += 1
            if len(stack) == 2 and in_nodes is None:
                in_nodes = True  # the value of the top-level 'nodes' key
            elif in_nodes is None:
                in_nodes = False
            stack.append([0, event.anchor, kind is yaml.MappingStartEvent, 0])
            if len(stack) - 1 > MAX_DEPTH:
                raise _problem(
                    file,
                    event.start_mark.line + 1,
                    f"nested more than {MAX_DEPTH} levels deep (the limit); an SOP needs "
                    "about 8, so flatten it or close the brackets",
                )
            continue
        if kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            size, anchor, _, _ = stack.pop()
            size += 1
            if anchor:
                anchors[anchor] = size
            if len(stack) == 2 and in_nodes:
                in_nodes = False
                if too_many_values is not None:
                    break
            stack[-1][0] += size
            total += 1
            continue
        if kind is yaml.ScalarEvent:
            size = 1
            top = stack[-1]
            top[3] += 1
            if len(stack) == 2 and top[2] and top[3] % 2 == 1 and event.value == "nodes":
                in_nodes, nodes_line = None, event.start_mark.line + 1
            elif in_nodes is None and len(stack) == 2:
                in_nodes = False  # 'nodes' holds a scalar: the model reports it
            elif in_nodes and len(stack) == 3 and top[3] % 2 == 1:
                nodes_count += 1
            if event.anchor:
                anchors[event.anchor] = 1
        elif kind is yaml.AliasEvent:
            size = anchors.get(event.anchor, 1)
            stack[-1][3] += 1
        else:
            continue
        stack[-1][0] += size
        total += size
        if total > MAX_VALUES and too_many_values is None:
            too_many_values = _problem(
                file,
                event.start_mark.line + 1,
                f"the document expands to more than {MAX_VALUES:,} values (the limit), e.g. "
                "aliases of aliases or thousands of children per node (the 64-node triage SOP "
                "holds 1,202); use fewer aliases, or split the procedure into smaller SOPs",
            )
            if not in_nodes:
                break
    if nodes_count > MAX_NODES:
        raise too_many_nodes(file, nodes_line, nodes_count)
    if too_many_values is not None:
        raise too_many_values
