"""One full alarm-triage world per test session, shared by the modules that import ``fc_home``.

Import the fixture into a test module with ``from fc_world import fc_home  # noqa: F401``;
point ``SOPGRAPH_HOME`` at it to run the example SOP's MCP servers over this world.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sopgraph.evals.fc_triage.build import WorldPaths, build_world


@pytest.fixture(scope="session")
def fc_world(tmp_path_factory: pytest.TempPathFactory) -> WorldPaths:
    return build_world(tmp_path_factory.mktemp("fc_home"), progress=False)


@pytest.fixture(scope="session")
def fc_home(fc_world: WorldPaths) -> Path:
    """The home folder holding ``fc_world/`` (the value for ``SOPGRAPH_HOME``)."""
    return fc_world.root.parent
