import hashlib
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from sopgraph.graphs.model import Verdict
from sopgraph.tools.commands import tools_list, tools_promote, tools_remove, tools_revert
from sopgraph.tools.registry import (
    Registry,
    RegistryError,
    ToolIntegrityError,
    ToolLoadError,
    ToolMissing,
)


def tool_code(answer: str) -> str:
    return (
        "from sopgraph.graphs.model import Verdict\n\n"
        "async def run(input, ctx):\n"
        f"    return Verdict(value={answer!r}, observed={{'site': input['site']}},"
        " threshold=ctx.params.get('t'))\n"
    )


def manifest(lib: Path) -> dict:
    return json.loads((lib / "manifest.json").read_text())


async def test_resolve_runs_the_active_version(tmp_path):
    reg = Registry(tmp_path / "tools")
    assert reg.add_version("obs_idle", tool_code("true"), "human", activate=True) == 1
    tool = reg.resolve("obs_idle")
    assert (tool.node_id, tool.version, tool.author) == ("obs_idle", 1, "human")
    assert tool.path == tmp_path / "tools" / "obs_idle" / "v1.py"
    verdict = await tool.fn({"site": "BFI4"}, SimpleNamespace(params={"t": 25}))
    assert verdict == Verdict(value="true", observed={"site": "BFI4"}, threshold=25)
    assert reg.resolve("obs_idle") is tool  # cached per (node, version, sha)


def test_manifest_format(tmp_path):
    (tmp_path / "sop.yaml").write_text("id: my_sop\n")
    reg = Registry(tmp_path / "tools")
    reg.add_version("obs_idle", tool_code("true"), "tool-maker:gpt", 0.9, 0.8, activate=True)
    text = (tmp_path / "tools" / "manifest.json").read_text()
    m = json.loads(text)
    assert text == json.dumps(m, sort_keys=True, indent=2) + "\n"
    assert m["sop"] == "my_sop"
    entry = m["tools"]["obs_idle"]
    assert entry["active"] == 1 and entry["history"] == [1]
    v1 = entry["versions"]["1"]
    assert v1["author"] == "tool-maker:gpt"
    assert (v1["train_pass"], v1["eval_pass"]) == (0.9, 0.8)
    assert len(v1["sha256"]) == 64 and len(v1["date"]) == 10
    assert not list((tmp_path / "tools").glob("*.tmp"))


def test_reads_a_hand_written_manifest(tmp_path):
    lib = tmp_path / "tools"
    (lib / "obs_a").mkdir(parents=True)
    (lib / "obs_a" / "v1.py").write_text(tool_code("false"))
    sha = hashlib.sha256((lib / "obs_a" / "v1.py").read_bytes()).hexdigest()
    (lib / "manifest.json").write_text(
        json.dumps(
            {
                "sop": "s",
                "tools": {
                    "obs_a": {
                        "active": 1,
                        "history": [1],
                        "versions": {
                            "1": {
                                "sha256": sha,
                                "author": "human",
                                "train_pass": 0.98,
                                "eval_pass": 0.97,
                                "date": "2026-11-22",
                            }
                        },
                    }
                },
            }
        )
    )
    reg = Registry(lib)
    assert reg.resolve("obs_a").version == 1
    [entry] = reg.list()
    assert entry.versions[0].eval_pass == 0.97 and entry.versions[0].date == "2026-11-22"


def test_tampered_file_is_refused_naming_the_file(tmp_path):
    reg = Registry(tmp_path / "tools")
    reg.add_version("obs_idle", tool_code("true"), "human", activate=True)
    path = tmp_path / "tools" / "obs_idle" / "v1.py"
    path.write_text(tool_code("false"))
    with pytest.raises(ToolIntegrityError) as err:
        Registry(tmp_path / "tools").resolve("obs_idle")
    msg = str(err.value)
    assert str(path) in msg and "\n" not in msg and "sopgraph tools rehash" in msg
    reg2 = Registry(tmp_path / "tools")
    reg2.rehash("obs_idle")
    assert reg2.resolve("obs_idle").fn is not None


def test_promote_and_revert_change_manifest_and_resolved_version(tmp_path):
    lib = tmp_path / "tools"
    reg = Registry(lib)
    assert reg.add_version("n", tool_code("true"), "human", activate=True) == 1
    assert reg.add_version("n", tool_code("false"), "tool-maker:m") == 2
    assert reg.resolve("n").version == 1  # a new version is not active until promoted
    reg.promote("n", 2)
    assert manifest(lib)["tools"]["n"]["active"] == 2
    assert manifest(lib)["tools"]["n"]["history"] == [1, 2]
    assert reg.resolve("n").version == 2
    assert Registry(lib).resolve("n").author == "tool-maker:m"
    assert reg.revert("n") == 1
    assert manifest(lib)["tools"]["n"]["active"] == 1
    assert reg.resolve("n").version == 1
    with pytest.raises(RegistryError, match="no earlier active version"):
        reg.revert("n")
    with pytest.raises(RegistryError, match=r"no v7 \(registered: v1, v2\)"):
        reg.promote("n", 7)


def test_another_process_promotion_is_seen(tmp_path):
    lib = tmp_path / "tools"
    reg = Registry(lib)
    reg.add_version("n", tool_code("true"), "human", activate=True)
    reg.add_version("n", tool_code("false"), "human")
    assert reg.resolve("n").version == 1
    Registry(lib).promote("n", 2)  # a separate Registry stands for the CLI
    assert reg.resolve("n").version == 2


def test_add_version_numbering_skips_files_on_disk(tmp_path):
    lib = tmp_path / "tools"
    reg = Registry(lib)
    assert [reg.add_version("n", tool_code("true"), "human") for _ in range(3)] == [1, 2, 3]
    assert reg.list()[0].active is None
    reg.remove("n")
    assert not reg.has("n") and (lib / "n" / "v3.py").exists()
    assert reg.add_version("n", tool_code("true"), "human", activate=True) == 4
    assert reg.has("n") and reg.resolve("n").version == 4


def test_missing_tool_errors(tmp_path):
    reg = Registry(tmp_path / "nothing_here")
    assert reg.list() == [] and not reg.has("x")
    with pytest.raises(ToolMissing, match="no tool for node 'x'"):
        reg.resolve("x")
    reg.add_version("x", tool_code("true"), "human")
    with pytest.raises(ToolMissing, match="no active tool version"):
        reg.resolve("x")
    reg.promote("x", 1)
    (tmp_path / "nothing_here" / "x" / "v1.py").unlink()
    assert not reg.has("x")
    with pytest.raises(ToolMissing, match="is missing"):
        Registry(tmp_path / "nothing_here").resolve("x")


@pytest.mark.parametrize(
    "code, what",
    [
        ("X = 1\n", "does not define `run`"),
        ("def run(input, ctx):\n    return None\n", "non-async `run`"),
        ("async def run(site, timestamp, ctx):\n    return None\n", "old alarm-shaped form"),
        ("async def run(ctx):\n    return None\n", "`run(ctx)` cannot be called as run(input"),
        ("import no_such_module_xyz\n", "cannot import the tool"),
    ],
)
def test_unusable_tool_file(tmp_path, code, what):
    reg = Registry(tmp_path / "tools")
    reg.add_version("n", code, "human", activate=True)
    with pytest.raises(ToolLoadError) as err:
        reg.resolve("n")
    assert isinstance(err.value, ToolMissing)  # the executor falls back the same way
    assert what in str(err.value) and "\n" not in str(err.value)
    assert "async def run(input, ctx)" in str(err.value) or "import" in what


def test_bad_author_and_node_id(tmp_path):
    reg = Registry(tmp_path / "tools")
    with pytest.raises(RegistryError, match="tool-maker:<model>"):
        reg.add_version("n", tool_code("true"), "bob")
    with pytest.raises(RegistryError, match="cannot name a tool folder"):
        reg.add_version("../evil", tool_code("true"), "human")


def test_invalid_manifest_is_one_line(tmp_path):
    lib = tmp_path / "tools"
    lib.mkdir()
    (lib / "manifest.json").write_text('{"tools": {"n": {"active": "one"}}}')
    with pytest.raises(RegistryError) as err:
        Registry(lib).list()
    assert "invalid manifest at tools.n.active" in str(err.value)
    assert "\n" not in str(err.value)


def test_same_node_in_two_libraries_does_not_collide(tmp_path):
    a = Registry(tmp_path / "a" / "tools")
    b = Registry(tmp_path / "b" / "tools")
    a.add_version("n", tool_code("true"), "human", activate=True)
    b.add_version("n", tool_code("false"), "human", activate=True)
    assert a.resolve("n").fn is not b.resolve("n").fn


def test_commands(tmp_path):
    (tmp_path / "sop.yaml").write_text(
        "id: s\nentry: {a: [obs_a]}\nnodes:\n"
        "  obs_a: {kind: observation, text: A}\n"
        "  obs_b: {kind: observation, text: B}\n"
    )
    reg = Registry(tmp_path / "tools")
    reg.add_version("obs_a", tool_code("true"), "human", 1.0, 0.95, activate=True)
    reg.add_version("obs_a", tool_code("false"), "tool-maker:m", 0.5)
    out = tools_list(tmp_path, as_json=False)
    lines = out.splitlines()
    assert lines[0].split() == [
        "node",
        "active",
        "versions",
        "author",
        "train",
        "eval",
        "date",
        "sha256",
        "status",
    ]
    assert lines[1].split()[:6] == ["obs_a", "v1", "1,2", "human", "100%", "95%"]
    assert lines[1].split()[-1] == "ok"
    assert lines[2].split() == ["obs_b", "-", "-", "-", "-", "-", "-", "-", "no", "tool"]
    data = json.loads(tools_list(tmp_path / "sop.yaml", as_json=True))
    assert data["sop"] == "s" and [r["node"] for r in data["tools"]] == ["obs_a", "obs_b"]
    shown = tools_promote(tmp_path, "obs_a", 2).splitlines()
    assert shown[-1] == "obs_a: v2 is active (was v1)"
    assert shown[0].startswith("active: v1 by human") and shown[1].startswith("new:    v2 by")
    assert "--- obs_a/v1.py" in shown and "+++ obs_a/v2.py" in shown  # the diff, then the switch
    assert tools_revert(tmp_path, "obs_a") == "obs_a: reverted to v1 (was v2)"
    (tmp_path / "tools" / "obs_a" / "v1.py").write_text("# edited\n")
    assert tools_list(tmp_path, as_json=False).splitlines()[1].split()[-1] == "modified"
    assert "falls back" in tools_remove(tmp_path, "obs_a")
    with pytest.raises(ToolMissing, match=r"nodes with tools: none"):
        tools_remove(tmp_path, "obs_a")


ADDER = """
import sys
from pathlib import Path
from sopgraph.tools.registry import Registry

reg = Registry(Path(sys.argv[1]))
for _ in range(10):
    reg.add_version(sys.argv[2], "async def run(input, ctx):\\n    return None\\n", "human")
"""


def test_concurrent_writers_from_two_processes_lose_nothing(tmp_path):
    lib = tmp_path / "tools"
    procs = [subprocess.Popen([sys.executable, "-c", ADDER, str(lib), node]) for node in ("a", "b")]
    assert [p.wait(60) for p in procs] == [0, 0]
    tools = manifest(lib)["tools"]
    assert sorted(tools) == ["a", "b"]
    assert [sorted(map(int, tools[n]["versions"])) for n in "ab"] == [list(range(1, 11))] * 2


def test_set_pass_rates_updates_one_version(tmp_path):
    from sopgraph.tools.registry import Registry, ToolMissing

    reg = Registry(tmp_path / "tools", sop_id="s")
    code = "async def run(input, ctx):\n    return {'value': 'true'}\n"
    reg.add_version("n1", code, author="human", train_pass=0.5, activate=True)
    reg.set_pass_rates("n1", 1, train=0.9, eval=0.8)
    info = reg.entry("n1").versions[0]
    assert (info.train_pass, info.eval_pass) == (0.9, 0.8)
    reg.set_pass_rates("n1", 1, eval=1.0)
    assert reg.entry("n1").versions[0].train_pass == 0.9
    import pytest

    with pytest.raises(ToolMissing, match="no version 7"):
        reg.set_pass_rates("n1", 7, train=1.0)
