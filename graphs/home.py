"""Where sopgraph keeps its state: worlds, checkpoints, logs and reports (``SOPGRAPH_HOME``)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

HOME_NAME = ".sopgraph"


def home_dir() -> Path:
    """Where sopgraph keeps worlds, checkpoints and logs.

    ``SOPGRAPH_HOME`` when set; else the nearest ``.sopgraph`` folder in the current folder or
    one of its parents (a project's home is found from any of its subfolders, as ``.git`` is),
    not looking above the user's home folder, the temporary folder or the root (as git's
    ceiling directories: a stray ``/tmp/.sopgraph`` must not capture every project under
    ``/tmp``); else ``.sopgraph`` in the current folder, made there on first use.
    """
    env = os.environ.get("SOPGRAPH_HOME")
    if env:
        return Path(env).resolve()
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if folder != here and folder in _ceilings():
            break
        if (folder / HOME_NAME).is_dir():
            return folder / HOME_NAME
    return here / HOME_NAME


def _ceilings() -> set[Path]:
    """The folders whose ``.sopgraph`` a project below them never inherits."""
    out = {Path("/"), Path(tempfile.gettempdir()).resolve()}
    try:
        out.add(Path.home().resolve())
    except RuntimeError:  # no home folder known
        pass
    return out
