"""One full alarm-triage world per test session, copied for each module that imports ``fc_home``.

Import the fixture into a test module with ``from fc_world import fc_home  # noqa: F401``;
point ``SOPGRAPH_HOME`` at it to run the example SOP's MCP servers over this world. A fixture
imported into a module is that module's own (pytest caches it per definition), so the world is
built once per session (about 6 s) and each module gets a copy of it (20 ms): what one module's
tests write into their home stays out of the others'.
``make_session`` is a tool-maker session over it (import it with ``fc_home`` and ``fc_world``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import pytest_asyncio

from sopgraph.evals.fc_triage.build import WorldPaths, build_world


@pytest.fixture(scope="session")
def fc_world(tmp_path_factory: pytest.TempPathFactory) -> WorldPaths:
    built = tmp_path_factory.getbasetemp() / "fc_world_built"
    build_world(built, progress=False)  # reused when its manifest matches: once a session
    home = tmp_path_factory.mktemp("fc_home")
    shutil.copytree(built / "fc_world", home / "fc_world")
    return WorldPaths.under(home / "fc_world")


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
