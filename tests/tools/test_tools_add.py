"""`sopgraph tools add`: a hand-written tool registered, listed and promoted with one command each,
its development mode, and the rehash and checksum messages that point to it (issue 27, finding 1).
"""

import hashlib
import json
import re
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest

from sopgraph.cli import main
from sopgraph.tools.registry import Registry, RegistryError, ToolIntegrityError


def tool_source(answer: str) -> str:
    return (
        "from sopgraph.graphs.model import Verdict\n\n\n"
        "async def run(input, ctx):\n"
        f"    return Verdict(value={answer!r}, observed=input.get('order_id'))\n"
    )


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def manifest(sop: Path) -> dict:
    return json.loads((sop / "tools" / "manifest.json").read_text())


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_add_registers_a_hand_written_tool_and_activates_the_first(sop, tmp_path, capsys):
    mine = write(tmp_path / "paid.py", tool_source("true"))
    rc, out, err = cli(capsys, "tools", "add", sop, "obs_paid", mine)
    assert (rc, err) == (0, "")
    assert "obs_paid: v1 registered" in out and "active" in out
    entry = manifest(sop)["tools"]["obs_paid"]
    assert entry["active"] == 1
    v1 = entry["versions"]["1"]
    assert v1["author"] == "human"
    assert v1["sha256"] == hashlib.sha256(mine.read_bytes()).hexdigest()
    assert (sop / "tools" / "obs_paid" / "v1.py").read_text() == mine.read_text()

    rc, out, _ = cli(capsys, "tools", "list", sop)
    row = next(line for line in out.splitlines() if line.startswith("obs_paid"))
    assert row.split()[:4] == ["obs_paid", "v1", "1", "human"] and row.endswith("ok")

    # a second version is registered but not activated: the promote command is printed
    write(mine, tool_source("false"))
    rc, out, _ = cli(capsys, "tools", "add", sop, "obs_paid", mine)
    assert rc == 0 and manifest(sop)["tools"]["obs_paid"]["active"] == 1
    promote = re.search(r"`(sopgraph tools promote [^`]+)`", out).group(1)
    assert shlex.split(promote)[3:] == [str(sop), "obs_paid", "2"]
    rc, out, _ = cli(capsys, *shlex.split(promote)[1:])
    assert rc == 0 and "obs_paid: v2 is active (was v1)" in out

    # --activate switches at once
    rc, out, _ = cli(capsys, "tools", "add", sop, "obs_paid", mine, "--activate")
    assert rc == 0 and manifest(sop)["tools"]["obs_paid"]["active"] == 3


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("def run(input, ctx):\n    return None\n", "non-async `run`"),
        ("async def run(input):\n    return None\n", "cannot be called as run(input, ctx)"),
        ("x = 1\n", "does not define `run`"),
        ("async def run(input, ctx)\n    return None\n", "SyntaxError"),
    ],
)
def test_add_refuses_a_file_that_breaks_the_contract(sop, tmp_path, capsys, source, says):
    bad = write(tmp_path / "bad.py", source)
    rc, out, err = cli(capsys, "tools", "add", sop, "obs_paid", bad)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and says in err and "bad.py" in err
    assert not (sop / "tools").exists()  # nothing registered, no file copied


def test_add_refuses_an_unknown_node_and_a_missing_file(sop, tmp_path, capsys):
    mine = write(tmp_path / "paid.py", tool_source("true"))
    rc, _, err = cli(capsys, "tools", "add", sop, "obs_payd", mine)
    assert rc == 2 and "did you mean 'obs_paid'" in err
    rc, _, err = cli(capsys, "tools", "add", sop, "obs_paid", tmp_path / "nope.py")
    assert rc == 2 and "nope.py" in err and len(err.strip().splitlines()) == 1
    rc, _, err = cli(capsys, "tools", "add", sop, "obs_paid")
    assert rc == 2 and "sopgraph tools add SOP NODE FILE" in err
    assert not (sop / "tools").exists()


async def test_dev_version_runs_the_file_as_it_is_now(sop, tmp_path, capsys):
    mine = write(tmp_path / "paid.py", tool_source("true"))
    rc, out, _ = cli(capsys, "tools", "add", sop, "obs_paid", mine, "--dev")
    assert rc == 0 and "development version" in out
    entry = manifest(sop)["tools"]["obs_paid"]
    assert entry["active"] == 1 and entry["versions"]["1"]["dev"] is True
    dev_file = sop / "tools" / "obs_paid" / "v1.py"
    assert str(dev_file) in out  # where to edit it

    reg = Registry(sop / "tools")
    ctx = SimpleNamespace(params={})
    assert (await reg.resolve("obs_paid").fn({"order_id": "A1"}, ctx)).value == "true"
    write(dev_file, tool_source("false"))  # edited: no rehash, no new version
    assert (await reg.resolve("obs_paid").fn({"order_id": "A1"}, ctx)).value == "false"

    rc, out, _ = cli(capsys, "tools", "list", sop)
    row = next(line for line in out.splitlines() if line.startswith("obs_paid"))
    assert row.endswith("dev")

    # a development version is never promoted: it is registered for real first
    rc, _, err = cli(capsys, "tools", "promote", sop, "obs_paid", "1")
    assert rc == 2 and "development version" in err and "sopgraph tools add" in err
    rc, out, _ = cli(capsys, "tools", "add", sop, "obs_paid", dev_file, "--activate")
    assert rc == 0
    entry = manifest(sop)["tools"]["obs_paid"]
    assert entry["active"] == 2 and "dev" not in entry["versions"]["2"]
    rc, out, _ = cli(capsys, "tools", "list", sop)
    row = next(line for line in out.splitlines() if line.startswith("obs_paid"))
    assert row.endswith("ok")


def test_rehash_of_files_with_an_empty_manifest_says_what_it_found(sop, capsys):
    (sop / "tools" / "obs_paid").mkdir(parents=True)
    write(sop / "tools" / "obs_paid" / "v1.py", tool_source("true"))
    write(sop / "tools" / "manifest.json", '{"tools": {}}\n')
    rc, out, err = cli(capsys, "tools", "rehash", sop)
    assert rc == 2 and "rehashed" not in out + err
    assert "obs_paid/v1.py" in err and "not registered" in err
    assert f"sopgraph tools add {sop} obs_paid {sop / 'tools' / 'obs_paid' / 'v1.py'}" in err
    assert manifest(sop) == {"tools": {}}


def test_checksum_error_names_a_command_that_works(sop, tmp_path, capsys):
    mine = write(tmp_path / "paid.py", tool_source("true"))
    assert cli(capsys, "tools", "add", sop, "obs_paid", mine)[0] == 0
    registered = sop / "tools" / "obs_paid" / "v1.py"
    write(registered, tool_source("false"))  # edited after it was registered
    with pytest.raises(ToolIntegrityError) as caught:
        Registry(sop / "tools").resolve("obs_paid")
    commands = re.findall(r"`(sopgraph [^`]+)`", str(caught.value))
    add = next(c for c in commands if c.startswith("sopgraph tools add"))
    assert cli(capsys, *shlex.split(add)[1:])[0] == 0
    assert manifest(sop)["tools"]["obs_paid"]["active"] == 2  # the edit runs as v2
    assert Registry(sop / "tools").resolve("obs_paid").version == 2


def test_registry_add_file_checks_before_it_writes(tmp_path):
    reg = Registry(tmp_path / "tools")
    bad = write(tmp_path / "bad.py", "def run(input, ctx):\n    pass\n")
    with pytest.raises(RegistryError, match="non-async"):
        reg.add_file("obs_paid", bad)
    assert reg.list() == [] and not (tmp_path / "tools").exists()
