"""Write a ``Sop`` as the native YAML a person would write: keys in reading order, text folded.

Importers produce a ``Sop``; this turns it into the file ``sopgraph`` loads back, so the
output must round-trip through ``graphs.loader.load_sop_text`` to the same model.

Example:
    >>> print(dump_sop_yaml(sop))  # doctest: +SKIP
    id: service_interruption_handling
    entry:
      default: [service_interruption_handle]
    nodes:
      authenticate_customer:
        kind: observation
        ...
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

import yaml

from sopgraph.graphs.model import EDGE_KEYS, Node, Sop

WIDTH = 92


def _scalar(value: Any) -> str:
    """One YAML scalar on one line, quoted only when YAML needs it."""
    text = yaml.safe_dump(value, allow_unicode=True, width=10**9, default_flow_style=True)
    text = text.removesuffix("\n...\n").rstrip("\n")
    if "\n" in text:  # YAML spreads a quoted multi-line string over lines; JSON keeps it on one
        return json.dumps(value, ensure_ascii=False)
    return text


def _flow(value: list[Any] | dict[str, Any]) -> str:
    text = yaml.safe_dump(
        value, allow_unicode=True, width=10**9, default_flow_style=True, sort_keys=False
    )
    return text.strip()


def _foldable(text: str) -> bool:
    # Folding joins lines with single spaces: only text that survives that is folded.
    return (
        "\n" not in text
        and "  " not in text
        and text == text.strip()
        and "\t" not in text
        and text.isprintable()
    )


def _literal(text: str) -> bool:
    lines = text.split("\n")
    return (
        len(lines) > 1
        and not text.startswith((" ", "\n"))
        and not text.endswith("\n\n")
        and all(line == line.rstrip() and line.isprintable() for line in lines)
    )


def _string(key: str, text: str, indent: int) -> list[str]:
    """``key: text``; long text folded (``>-``) at WIDTH, text with line breaks kept (``|``)."""
    pad = " " * indent
    if _literal(text):
        chomp = "" if text.endswith("\n") else "-"
        body = text.removesuffix("\n") if chomp == "" else text
        return [f"{pad}{key}: |{chomp}", *(f"{pad}  {ln}" if ln else "" for ln in body.split("\n"))]
    line = f"{pad}{key}: {_scalar(text)}"
    if len(line) <= WIDTH or not _foldable(text):
        return [line]
    body = textwrap.wrap(
        text,
        width=max(40, WIDTH - indent - 2),
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [f"{pad}{key}: >-", *(f"{pad}  {line}" for line in body)]


def _value(key: str, value: Any, indent: int) -> list[str]:
    pad = " " * indent
    if isinstance(value, str):
        return _string(key, value, indent)
    if isinstance(value, list) and all(not isinstance(v, dict | list) for v in value):
        return [f"{pad}{key}: {_flow(value)}"]
    if isinstance(value, dict | list) and value:
        block = yaml.safe_dump(
            value, allow_unicode=True, sort_keys=False, default_flow_style=False, width=WIDTH
        )
        return [f"{pad}{key}:", *(f"{pad}  {line}" for line in block.splitlines())]
    return [f"{pad}{key}: {_scalar(value)}"]


def _next(node: Node, indent: int) -> list[str]:
    pad = " " * indent
    nxt = node.next
    out: list[str] = []
    for key in EDGE_KEYS:
        children = getattr(nxt, key)
        if children:
            out.append(f"{pad}{key}: {_flow(children)}")
    if nxt.when:
        out.append(f"{pad}when:")
        for cond in nxt.when:
            if isinstance(cond.if_, str):
                first = _string("if", cond.if_, indent + 4)
                first[0] = f"{pad}  - {first[0].lstrip()}"
                out += first
            else:
                pred = cond.if_.model_dump(exclude_defaults=False)
                if pred["op"] == "exists":
                    pred.pop("value")
                out.append(f"{pad}  - if: {_flow(pred)}")
            out.append(f"{pad}    then: {_flow(cond.then)}")
    return out


def _node(node: Node, indent: int) -> list[str]:
    pad = " " * indent
    out = [f"{pad}kind: {node.kind}"]
    if node.title:
        out += _string("title", node.title, indent)
    if node.text:
        out += _string("text", node.text, indent)
    if node.data:
        out.append(f"{pad}data: {_flow(node.data)}")
    if node.api is not None:
        out.append(f"{pad}api:")
        out += _string("name", node.api.name, indent + 2)
        if node.api.description:
            out += _string("description", node.api.description, indent + 2)
    if node.tool:
        out.append(f"{pad}tool: {_scalar(node.tool)}")
    if node.cost != "low":
        out.append(f"{pad}cost: {node.cost}")
    if node.approval != "none":
        out.append(f"{pad}approval: {node.approval}")
    if node.max_visits is not None:
        out.append(f"{pad}max_visits: {node.max_visits}  # loop bound: runs at most this often")
    if node.source:
        out += _string("source", node.source, indent)
    nxt = _next(node, indent + 2)
    if nxt:
        out += [f"{pad}next:", *nxt]
    return out


def dump_sop_yaml(sop: Sop, header: str | None = None) -> str:
    """The native YAML text of ``sop``, optionally under a ``#`` comment ``header``."""
    out: list[str] = []
    if header:
        out += [f"# {line}".rstrip() for line in header.splitlines()]
    out.append(f"id: {_scalar(sop.id)}")
    if sop.title:
        out += _string("title", sop.title, 0)
    out.append(f"version: {sop.version}")
    if sop.description:
        out += _string("description", sop.description, 0)
    if sop.params:
        out += _value("params", sop.params, 0)
    if sop.params_by:
        out.append(f"params_by: {_scalar(sop.params_by)}")
    if sop.input:  # the run input's contract
        out.append("input:")
        for name, spec in sop.input.items():
            out.append(f"  {_scalar(name)}:")
            for key, value in {"type": spec.type, **spec.model_dump(exclude_defaults=True)}.items():
                out += _value(key, value, 4)
    out.append("entry:")
    out += [f"  {_scalar(k)}: {_flow(v)}" for k, v in sop.entry.items()]
    out.append("nodes:")
    for node_id, node in sop.nodes.items():
        out.append(f"  {_scalar(node_id)}:")
        out += _node(node, 4)
    return "\n".join(out) + "\n"
