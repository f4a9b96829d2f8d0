"""One full alarm-triage world per test session, shared by the modules that import ``fc_home``.

Import the fixture into a test module with ``from fc_world import fc_home  # noqa: F401``;
point ``SOPGRAPH_HOME`` at it to run the example SOP's MCP servers over this world.
``make_session`` is a tool-maker session over it (import it with ``fc_home`` and ``fc_world``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_asyncio

from sopgraph.evals.fc_triage.build import WorldPaths, build_world


@pytest.fixture(scope="session")
def fc_world(tmp_path_factory: pytest.TempPathFactory) -> WorldPaths:
    return build_world(tmp_path_factory.mktemp("fc_home"), progress=False)


@pytest.fixture(scope="session")
def fc_home(fc_world: WorldPaths) -> Path:
    """The home folder holding ``fc_world/`` (the value for ``SOPGRAPH_HOME``)."""
    return fc_world.root.parent


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def make_session(fc_home: Path):
    """An open tool-maker session on the triage SOP over this world (its MCP servers running),
    with ``cases`` set to the world's labeled cases; one per test module."""
    from sopgraph.examples import EXAMPLES
    from sopgraph.tools.toolmaker.session import MakeSession

    mp = pytest.MonkeyPatch()
    mp.setenv("SOPGRAPH_HOME", str(fc_home))
    async with MakeSession(EXAMPLES / "fc_alarm_triage") as s:
        s.cases = fc_home / "fc_world" / "cases"
        yield s
    mp.undo()
