"""Importers: bring SOPs written in other formats into the native model.

``sopgraph import <kind> FILE -o OUT.yaml`` is ``dump_sop_yaml(import_file(kind, FILE))``.

Example:
    >>> sop = import_file("sopagent", Path("examples/service_interruption/sop_agent.yaml"))
    >>> sop.entry
    {'default': ['service_interruption_handle']}
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from sopgraph.graphs.importers.native_yaml import dump_sop_yaml
from sopgraph.graphs.importers.sopagent import import_sopagent
from sopgraph.graphs.importers.tod_formats import FORMATS as TOD_FORMATS
from sopgraph.graphs.importers.tod_formats import export_tod, import_tod
from sopgraph.graphs.loader import Problem, SopError
from sopgraph.graphs.model import Sop

# kind -> importer(text, file) -> Sop
IMPORTERS: dict[str, Callable[[str, str], Sop]] = {
    "sopagent": import_sopagent,
    **{kind: partial(import_tod, kind) for kind in TOD_FORMATS},
}
# kind -> exporter(sop) -> text (``sopgraph export <kind> SOP``)
EXPORTERS: dict[str, Callable[[Sop], str]] = {
    kind: partial(export_tod, kind) for kind in TOD_FORMATS
}


def import_file(kind: str, path: Path) -> Sop:
    """Read ``path`` in format ``kind`` and return the native SOP.

    Raises:
        SopError: unknown kind, unreadable file, or constructs the importer cannot take.
    """
    importer = IMPORTERS.get(kind)
    if importer is None:
        known = ", ".join(sorted(IMPORTERS))
        raise SopError(
            [Problem(str(path), 1, "", f"unknown import format '{kind}'; use one of: {known}")]
        )
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SopError([Problem(str(path), 1, "", "no such file; check the path")]) from None
    except (IsADirectoryError, UnicodeDecodeError) as exc:
        raise SopError([Problem(str(path), 1, "", f"cannot read the file: {exc}")]) from None
    return importer(text, str(path))


__all__ = ["EXPORTERS", "IMPORTERS", "dump_sop_yaml", "import_file", "import_sopagent"]
