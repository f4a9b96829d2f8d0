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
MAX_VALUES = 500_000  # values after expanding every alias (a 1,000-node SOP: ~10,000)
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


def _events(text: str) -> Iterator[yaml.Event]:
    # libyaml's parser keeps its own stack (no recursion); PyYAML's pure parser likewise.
    return yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


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


def check_yaml_limits(text: str, file: str) -> None:
    """Raise one problem when ``text`` is too large, nests too deep, expands aliases too far,
    or carries a tag outside YAML's core schema. Syntax errors are left to the parser."""
    if len(text) > MAX_SOP_BYTES:
        raise _too_large(file)
    depth = 0
    # Expanded size of each open collection, and of each anchored value by anchor name.
    sizes: list[int] = [0]
    anchors: dict[str, int] = {}
    open_anchors: list[str | None] = []
    try:
        for event in _events(text):
            line = event.start_mark.line + 1 if event.start_mark else 1
            tag = getattr(event, "tag", None)
            if tag and tag != "!" and tag not in _CORE_TAGS:
                shown = tag.replace("tag:yaml.org,2002:", "!!")
                raise SopError(
                    [
                        Problem(
                            file,
                            line,
                            "",
                            f"unsupported YAML tag '{shown}': an SOP holds plain text, numbers, "
                            "lists and mappings; remove the tag",
                        )
                    ]
                )
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise SopError(
                        [
                            Problem(
                                file,
                                line,
                                "",
                                f"nested more than {MAX_DEPTH} levels deep (the limit); an SOP "
                                "needs about 8, so flatten it or close the brackets",
                            )
                        ]
                    )
                sizes.append(0)
                open_anchors.append(event.anchor)
                continue
            if isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
                size = sizes.pop() + 1
                anchor = open_anchors.pop()
                if anchor:
                    anchors[anchor] = size
            elif isinstance(event, yaml.ScalarEvent):
                size = 1
                if event.anchor:
                    anchors[event.anchor] = 1
            elif isinstance(event, yaml.AliasEvent):
                size = anchors.get(event.anchor, 1)
            else:
                continue
            sizes[-1] += size
            if sizes[-1] > MAX_VALUES or sum(sizes) > MAX_VALUES:
                raise SopError(
                    [
                        Problem(
                            file,
                            line,
                            "",
                            f"the document expands to more than {MAX_VALUES:,} values (the "
                            "limit), e.g. aliases of aliases; write the values out or use "
                            "fewer aliases",
                        )
                    ]
                )
    except yaml.YAMLError:
        return  # a syntax error: the parser that follows words it, with its line
