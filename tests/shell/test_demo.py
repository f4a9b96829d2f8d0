"""``sopgraph demo`` leaves no half-built world behind when building it fails or is stopped."""

from __future__ import annotations

import pytest

from sopgraph.cli import main
from sopgraph.evals.fc_triage import build


@pytest.mark.parametrize("stop", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_failed_world_build_leaves_nothing_behind(tmp_path, monkeypatch, stop):
    home = tmp_path / "home"
    monkeypatch.setenv("SOPGRAPH_HOME", str(home))
    wrote: list[str] = []

    def robotics_then_fail(world, path):  # the first store is written, the second fails
        path.write_bytes(b"partial")
        wrote.append(path.parent.name)
        raise stop

    monkeypatch.setattr(build, "write_conveyance", robotics_then_fail)
    if isinstance(stop, KeyboardInterrupt):
        assert main(["demo", "--alarms", "1"]) == 130
    else:
        with pytest.raises(OSError):
            main(["demo", "--alarms", "1"])
    assert wrote and wrote[0].startswith("fc_world.tmp")  # it did start building
    assert not [p.name for p in home.iterdir() if p.name.startswith("fc_world")]
