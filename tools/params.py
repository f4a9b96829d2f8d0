"""The parameter store: an SOP's parameter defaults overlaid with one key's overrides.

The SOP names the input field its overrides are keyed on (``params_by: site``; a customer, a
region, whatever its input contract declares); a run whose input has ``site: BFI4`` reads
``<sop dir>/params/BFI4.yaml``, a flat mapping ``name: value``. An SOP without ``params_by``
runs on its defaults. Tools read thresholds from here, never from literals, so one tool
library serves every key; the drift monitor writes back through ``ParamStore.set``.

Example:
    >>> store = ParamStore(sop, Path("examples/fc_alarm_triage"))  # doctest: +SKIP
    >>> store.for_input({"site": "BFI4", ...})["idle_pct_threshold"]  # doctest: +SKIP
    30
    >>> store.for_key("BFI4") == store.for_input({"site": "BFI4"})  # doctest: +SKIP
    True
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

_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class ParamError(SopError):
    """A parameter file the user must fix; ``str()`` is one ``error:`` line per problem."""


class ParamStore:
    """Parameters of one SOP by key, re-read when a parameter file changes."""

    def __init__(self, sop: Sop, sop_dir: Path):
        self.sop = sop
        self.sop_dir = Path(sop_dir)
        self.params_dir = self.sop_dir / "params"
        self.by = sop.params_by  # the input field whose value picks the file; None: defaults
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}
        self._files: dict[str, str] = {}

    def keys(self) -> list[str]:
        """Keys (values of the ``params_by`` field) that have a parameter file, sorted."""
        if not self.params_dir.is_dir():
            return []
        return sorted(p.stem for p in self.params_dir.glob("*.yaml") if p.is_file())

    def path_of(self, key: str) -> Path:
        if not _KEY.match(key):
            field = self.by or "key"
            raise ParamError(
                [
                    Problem(
                        str(self.params_dir),
                        1,
                        key,
                        f"{field} value cannot name a file; use letters, digits, '_', '-', '.'",
                    )
                ]
            )
        return self.params_dir / f"{key}.yaml"

    def for_input(self, inp: dict[str, Any]) -> dict[str, Any]:
        """The parameters of a run: the defaults overlaid with the file its ``params_by``
        field's value names (the defaults alone when the SOP names no field)."""
        if self.by is None:
            return dict(self.sop.params)
        key = inp.get(self.by)
        return self.for_key(None if key is None else str(key))

    def for_key(self, key: str | None) -> dict[str, Any]:
        """The SOP's defaults overlaid with ``params/<key>.yaml``.

        A key without a file (or ``None``) gets the SOP defaults unchanged. The result is a
        fresh dict the caller may modify.

        Raises:
            ParamError: the file names a parameter the SOP does not define, gives a value of
                the wrong type, or is not a flat mapping.
        """
        values = dict(self.sop.params)
        if key is None:
            return values
        file = self._files.get(key)
        if file is None:  # checked once per key; a str stats faster than a Path
            file = self._files[key] = str(self.path_of(key))
        try:
            st = os.stat(file)
        except FileNotFoundError:
            return values
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        with self._lock:
            cached = self._cache.get(key)
            if cached is None or cached[0] != stamp:
                cached = (stamp, self._read(Path(file)))
                self._cache[key] = cached
        values.update(cached[1])
        return values

    def check(self) -> list[Problem]:
        """Problems in every parameter file (empty when all are fine); for ``sopgraph validate``."""
        problems: list[Problem] = []
        for key in self.keys():
            try:
                self._read(self.path_of(key))
            except SopError as exc:
                problems += exc.problems
        return problems

    def set(self, key: str, name: str, value: Any) -> None:
        """Set one parameter in ``params/<key>.yaml`` (created if needed); other values are kept.

        The file is rewritten with sorted keys, so comments in it are not kept.
        """
        path = self.path_of(key)
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
            self._cache.pop(key, None)

    def _read(self, path: Path) -> dict[str, Any]:
        file = str(path)
        data, lines = parse_yaml(path.read_text(encoding="utf-8"), file)
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise ParamError(
                [Problem(file, 1, "", "a parameter file is a flat mapping `name: value`")]
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
