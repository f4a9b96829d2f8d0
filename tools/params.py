"""The parameter store: an SOP's parameter defaults overlaid with one site's overrides.

A site overrides defaults in ``<sop dir>/params/<site>.yaml``, a flat mapping
``name: value``. Tools read thresholds from here, never from literals, so one tool library
serves every site; the drift monitor writes back through ``ParamStore.set``.

Example:
    >>> store = ParamStore(sop, Path("examples/fc_outbound_dock"))  # doctest: +SKIP
    >>> store.for_site("BFI4")["idle_pct_threshold"]                # doctest: +SKIP
    30
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Any

import yaml

from sopgraph.graphs.loader import Problem, SopError, parse_yaml
from sopgraph.graphs.model import Sop

_SITE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class ParamError(SopError):
    """A site parameter file the user must fix; ``str()`` is one ``error:`` line per problem."""


class ParamStore:
    """Site parameters of one SOP, re-read when a site file changes."""

    def __init__(self, sop: Sop, sop_dir: Path):
        self.sop = sop
        self.sop_dir = Path(sop_dir)
        self.params_dir = self.sop_dir / "params"
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}
        self._files: dict[str, str] = {}

    def sites(self) -> list[str]:
        """Sites that have a parameter file, sorted."""
        if not self.params_dir.is_dir():
            return []
        return sorted(p.stem for p in self.params_dir.glob("*.yaml") if p.is_file())

    def path_of(self, site: str) -> Path:
        if not _SITE.match(site):
            raise ParamError(
                [
                    Problem(
                        str(self.params_dir),
                        1,
                        site,
                        "site name cannot name a file; use letters, digits, '_', '-', '.'",
                    )
                ]
            )
        return self.params_dir / f"{site}.yaml"

    def for_site(self, site: str | None) -> dict[str, Any]:
        """The SOP's defaults overlaid with the site's file.

        A site without a file (or ``None``) gets the SOP defaults unchanged. The result is a
        fresh dict the caller may modify.

        Raises:
            ParamError: the site file names a parameter the SOP does not define, gives a
                value of the wrong type, or is not a flat mapping.
        """
        values = dict(self.sop.params)
        if site is None:
            return values
        file = self._files.get(site)
        if file is None:  # checked once per site; a str stats faster than a Path
            file = self._files[site] = str(self.path_of(site))
        try:
            st = os.stat(file)
        except FileNotFoundError:
            return values
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        with self._lock:
            cached = self._cache.get(site)
            if cached is None or cached[0] != stamp:
                cached = (stamp, self._read(Path(file)))
                self._cache[site] = cached
        values.update(cached[1])
        return values

    def check(self) -> list[Problem]:
        """Problems in every site file (empty when all are fine); for ``sopgraph validate``."""
        problems: list[Problem] = []
        for site in self.sites():
            try:
                self._read(self.path_of(site))
            except SopError as exc:
                problems += exc.problems
        return problems

    def set(self, site: str, name: str, value: Any) -> None:
        """Set one parameter in the site's file (created if needed); other values are kept.

        The file is rewritten with sorted keys, so comments in it are not kept.
        """
        path = self.path_of(site)
        problem = self._problem(str(path), 1, name, value)
        if problem:
            raise ParamError([problem])
        with self._lock:
            current = self._read(path) if path.is_file() else {}
            current[name] = value
            text = yaml.safe_dump(current, sort_keys=True, default_flow_style=False)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
            self._cache.pop(site, None)

    def _read(self, path: Path) -> dict[str, Any]:
        file = str(path)
        data, lines = parse_yaml(path.read_text(encoding="utf-8"), file)
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise ParamError(
                [Problem(file, 1, "", "a site parameter file is a flat mapping `name: value`")]
            )
        problems = [
            p
            for name, value in data.items()
            if (p := self._problem(file, lines.of(name), str(name), value))
        ]
        if problems:
            raise ParamError(problems)
        return {str(k): v for k, v in data.items()}

    def _problem(self, file: str, line: int, name: str, value: Any) -> Problem | None:
        if name not in self.sop.params:
            known = ", ".join(sorted(self.sop.params)) or "none"
            return Problem(
                file,
                line,
                name,
                f"not defined in the SOP's params (defined: {known}); "
                "fix the name or add it to the SOP's params",
            )
        expected = _kind(self.sop.params[name])
        if expected and _kind(value) != expected:
            return Problem(
                file,
                line,
                name,
                f"value {value!r} is not a {expected} like the SOP default "
                f"{self.sop.params[name]!r}",
            )
        return None


def _kind(value: Any) -> str | None:
    """A coarse type for checking overrides; ``None`` accepts anything."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return None
