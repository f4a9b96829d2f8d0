"""Where sopgraph keeps its state: worlds, checkpoints, logs and reports (``SOPGRAPH_HOME``)."""

from __future__ import annotations

import os
from pathlib import Path


def home_dir() -> Path:
    """Where sopgraph keeps worlds, checkpoints and logs (``SOPGRAPH_HOME``, else ``.sopgraph``)."""
    return Path(os.environ.get("SOPGRAPH_HOME", ".sopgraph")).resolve()
