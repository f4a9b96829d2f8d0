"""The SOP folder's data servers: ``mcp.json`` in the ``mcpServers`` shape MCP clients use
(Claude Desktop, Claude Code, Cursor), or the deprecated ``mcp.yaml`` (``servers:``).

The format, every key and the placeholders are documented in docs/mcp-servers.md.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, model_validator

from sopgraph.graphs.home import home_dir
from sopgraph.graphs.problems import Problem, SopError
from sopgraph.graphs.yaml_limits import decode_sop_bytes
from sopgraph.graphs.yaml_lines import parse_yaml

CONFIG_FILES = ("mcp.json", ".mcp.json")
LEGACY_FILE = "mcp.yaml"
# Values other clients write for the transport (Claude Code's "type": "http").
_TRANSPORTS = {
    "stdio": "stdio",
    "http": "streamable_http",
    "streamable_http": "streamable_http",
    "streamable-http": "streamable_http",
    "streamableHttp": "streamable_http",
    "sse": "sse",
}
# ``{sop_dir}``, ``{home}`` and ``${VAR}`` / ``${VAR:-default}``, replaced in one pass so that
# a substituted value (a token, a path) is never expanded again.
_SUBSTITUTION = re.compile(r"\{sop_dir\}|\{home\}|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_warned: set[Path] = set()


class ServerConfig(BaseModel):
    """How to reach one MCP server: a stdio command, or an HTTP url (streamable HTTP or SSE).

    Example:
        >>> ServerConfig(url="http://127.0.0.1:8931/mcp", headers={"Authorization": "Bearer t"})
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    # ``type`` is what Claude Code writes in .mcp.json; ``transport`` what the adapters call it.
    transport: Literal["stdio", "streamable_http", "sse"] | None = Field(
        default=None, validation_alias=AliasChoices("transport", "type")
    )
    # The tools a decision node may call (docs/mcp-servers.md, "Read-only deciding"): by default
    # those the server annotates ``readOnlyHint``; a list here is the operator's word and
    # replaces the annotations for this server. Only an approved action may call the others.
    read_only_tools: list[str] | None = Field(
        default=None, validation_alias=AliasChoices("readOnlyTools", "read_only_tools"),
        serialization_alias="readOnlyTools",
    )  # fmt: skip

    @model_validator(mode="before")
    @classmethod
    def _transport_names(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in ("transport", "type"):
                value = data.get(key)
                if isinstance(value, str) and value in _TRANSPORTS:
                    data = {**data, key: _TRANSPORTS[value]}
        return data

    @model_validator(mode="after")
    def _one_kind(self) -> ServerConfig:
        if self.url is not None:
            if self.command is not None:
                raise ValueError("give either 'command' (stdio) or 'url' (HTTP), not both")
            stdio_only = [k for k in ("args", "env", "cwd") if getattr(self, k)]
            if stdio_only:
                raise ValueError(f"'{stdio_only[0]}' is for stdio servers; an HTTP server has url")
            if self.transport == "stdio":
                raise ValueError("transport 'stdio' needs 'command', not 'url'")
        elif self.command is None:
            raise ValueError("give 'command' (stdio) or 'url' (HTTP)")
        elif self.headers:
            raise ValueError("'headers' are for HTTP servers (with 'url')")
        elif self.transport in ("streamable_http", "sse"):
            raise ValueError(f"transport '{self.transport}' needs 'url'")
        return self

    @property
    def http_transport(self) -> str:
        """``streamable_http`` (the default) or ``sse``, for an HTTP server."""
        return self.transport if self.transport in ("streamable_http", "sse") else "streamable_http"


def config_path(sop_dir: Path) -> Path | None:
    """The one server file of ``sop_dir`` (``mcp.json``, ``.mcp.json`` or ``mcp.yaml``), or None;
    two of them is an error."""
    found = [sop_dir / n for n in (*CONFIG_FILES, LEGACY_FILE) if (sop_dir / n).is_file()]
    if len(found) > 1:
        names = " and ".join(p.name for p in found)
        how = (
            "delete mcp.yaml (`sopgraph mcp convert` wrote mcp.json from it)"
            if found[-1].name == LEGACY_FILE
            else "keep one"
        )
        raise SopError([Problem(str(found[0]), 1, "", f"{names} both configure servers; {how}")])
    return found[0] if found else None


def load_server_configs(sop_dir: Path) -> dict[str, ServerConfig]:
    """The servers of ``<sop dir>/mcp.json`` (or ``.mcp.json``, or the deprecated ``mcp.yaml``),
    ready to start: ``python`` means this interpreter, ``{sop_dir}``, ``{home}`` and ``${VAR}``
    expand, a relative ``cwd`` is the SOP folder's. No file: no servers.

    Example:
        >>> sorted(load_server_configs(Path("examples/service_interruption")))
        ['customer_service']
    """
    sop_dir = Path(sop_dir)
    path = config_path(sop_dir)
    if path is None:
        return {}
    if path.name == LEGACY_FILE and path.resolve() not in _warned:
        _warned.add(path.resolve())
        print(
            f"warning: {path}: mcp.yaml is deprecated; `sopgraph mcp convert {sop_dir}` writes "
            "mcp.json (the mcpServers shape of Claude Desktop and Cursor, see docs/mcp-servers.md)",
            file=sys.stderr,
        )
    servers, lines = read_raw_configs(path)
    root = sop_dir.resolve()
    subs = {"{sop_dir}": str(root), "{home}": str(home_dir())}
    out: dict[str, ServerConfig] = {}
    for name, cfg in servers.items():

        def expand(text: str, *where: Any, name: str = name) -> str:
            def one(m: re.Match) -> str:
                if m.group(0) in subs:
                    return subs[m.group(0)]
                value = os.environ.get(m.group(1), m.group(2))
                if value is None:
                    key = ".".join(str(w) for w in (name, *where))
                    raise _config_error(
                        path,
                        lines(name, *where),
                        f"server {key}: environment variable {m.group(1)} is not set; export "
                        f"it, or write ${{{m.group(1)}:-default}}",
                    )
                return value

            return _SUBSTITUTION.sub(one, text)

        cfg = cfg.model_copy(deep=True)
        if cfg.command == "python":
            cfg.command = sys.executable
        elif cfg.command is not None:
            cfg.command = expand(cfg.command, "command")
        cfg.args = [expand(a, "args", i) for i, a in enumerate(cfg.args)]
        cfg.env = {k: expand(v, "env", k) for k, v in cfg.env.items()}
        if cfg.cwd is not None:
            cfg.cwd = str(root / expand(cfg.cwd, "cwd"))
        if cfg.url is not None:
            cfg.url = expand(cfg.url, "url")
        cfg.headers = {k: expand(v, "headers", k) for k, v in cfg.headers.items()}
        out[name] = cfg
    return out


def read_raw_configs(path: Path) -> tuple[dict[str, ServerConfig], Any]:
    """The servers of one config file as written (nothing expanded), and ``lines(name, *keys)``
    giving the line of a key; a mistake in the file is one ``SopError`` line."""
    if path.name == LEGACY_FILE:
        # The SOP's own parser: the same size, nesting and alias limits, and one-line errors.
        raw, line_map = parse_yaml(path.read_text(encoding="utf-8"), str(path))
        raw = raw or {}
        if not isinstance(raw, dict) or not isinstance(raw.get("servers") or {}, dict):
            raise _config_error(path, 1, "'servers' must be a mapping of server names")
        servers = raw.get("servers") or {}

        def lines(*keys: Any) -> int:
            return line_map.of("servers", *keys)
    else:
        text = decode_sop_bytes(path.read_bytes(), str(path))
        servers = _parse_json(path, text)

        def lines(*keys: Any) -> int:
            return _json_line(text, keys)

    out: dict[str, ServerConfig] = {}
    for name, spec in servers.items():
        try:
            out[str(name)] = ServerConfig.model_validate(spec)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = err["loc"]
            where = ".".join(str(p) for p in (name, *loc))
            msg = err["msg"].removeprefix("Value error, ")
            raise _config_error(path, lines(name, *loc), f"server {where}: {msg}") from None
    return out, lines


def legacy_to_mcp_json(path: Path) -> str:
    """The ``mcp.json`` text of the deprecated ``mcp.yaml`` at ``path``: the same servers, as
    written (``python``, placeholders and ``${VAR}`` kept), its comments joined in ``$comment``
    (JSON has no comments).

    Example:
        >>> json.loads(legacy_to_mcp_json(Path("my_sop/mcp.yaml")))["mcpServers"]
        {'metrics': {'command': 'python', 'args': ['-m', 'my_metrics']}}
    """
    servers, _ = read_raw_configs(path)
    rows = path.read_text(encoding="utf-8").splitlines()
    notes = [r.strip().lstrip("#").strip() for r in rows if r.strip().startswith("#")]
    out: dict[str, Any] = {"$comment": " ".join(n for n in notes if n)} if notes else {}
    out["mcpServers"] = {
        name: cfg.model_dump(exclude_defaults=True, exclude_none=True, by_alias=True)
        for name, cfg in servers.items()
    }
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"


def _parse_json(path: Path, text: str) -> dict[str, Any]:
    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        twice = next((k for k in keys if keys.count(k) > 1), None)
        if twice is not None:
            raise _config_error(path, _json_line(text, (twice,)), f"key {twice!r} is given twice")
        return dict(pairs)

    try:
        raw = json.loads(text, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as exc:
        where = f"not valid JSON: {exc.msg} (column {exc.colno})"
        raise _config_error(path, exc.lineno, where) from None
    except RecursionError:
        raise _config_error(path, 1, "nested too deeply to be a server configuration") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("mcpServers"), dict):
        raise _config_error(
            path, 1, "the file must be an object with 'mcpServers', a mapping of server names"
        )
    extra = [k for k in raw if k != "mcpServers" and not k.startswith("$")]
    if extra:
        raise _config_error(
            path,
            _json_line(text, (extra[0],), top=True),
            f"unknown key {extra[0]!r} beside 'mcpServers' ('$comment' may hold a note)",
        )
    return raw["mcpServers"]


def _json_line(text: str, keys: tuple[Any, ...], top: bool = False) -> int:
    """The line of the key path ``keys`` under ``mcpServers`` (or at the top), best effort: each
    key's first quoted occurrence after the previous one."""
    at = 0 if top else max(text.find('"mcpServers"'), 0)
    for key in keys:
        if isinstance(key, int):
            continue
        found = text.find(json.dumps(str(key), ensure_ascii=False), at)
        if found < 0:
            found = text.find(json.dumps(str(key)), at)
        if found < 0:
            break
        at = found
    return text.count("\n", 0, at) + 1


def _config_error(path: Path, line: int, message: str) -> SopError:
    shape = (
        "each server is {command, args, env, cwd} (stdio) or {url, headers, transport} (HTTP), "
        "with readOnlyTools optional; see docs/mcp-servers.md"
    )
    return SopError([Problem(str(path), line, "", f"{message}; {shape}")])
