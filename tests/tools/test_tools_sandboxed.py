"""Tool files that never run in sopgraph's own process (issue 53, finding 4): ``tools add``
checks the contract in the sandbox, and a model-written version runs in the sandbox at run time
unless a person promotes it with ``--in-process``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from sopgraph.cli import main
from sopgraph.tools.registry import Registry
from sopgraph.tools.toolmaker.sampling import tool_file

VALID_RUN = (
    "from sopgraph.graphs.model import Verdict\n\n\n"
    "async def run(input, ctx):\n"
    "    return Verdict(value='true', observed=input.get('order_id'))\n"
)
MODEL_TOOL = """\
from sopgraph.graphs.model import Verdict


async def run(input, ctx):
    rows = await ctx.mcp.call("shop", "execute_query", {"sql": "select paid"})
    paid = rows[0]["paid"]
    return Verdict(value=paid >= ctx.params["min_paid"], observed=paid,
                   threshold=ctx.params["min_paid"], explanation="paid " + input["order_id"])
"""


def marking(marker: Path, rest: str) -> str:
    """A tool file whose top-level code leaves ``marker`` behind where it can: on the host."""
    return f"try:\n    open({str(marker)!r}, 'w').write('ran')\nexcept OSError:\n    pass\n" + rest


def cli(capsys, *argv: object) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


class FakeMcp:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict]] = []

    async def call(self, server: str, tool: str, args: dict | None = None):
        self.calls.append((server, tool, dict(args or {})))
        return [{"paid": 70}]


def test_tools_add_checks_the_file_without_running_it_on_the_host(sop, tmp_path, capsys):
    marker = tmp_path / "marker"
    mine = tmp_path / "paid.py"
    mine.write_text(marking(marker, VALID_RUN))
    rc, out, err = cli(capsys, "tools", "add", sop, "obs_paid", mine)
    assert not marker.exists()  # the top-level code ran in the jail, if anywhere
    assert (rc, err) == (0, "") and "obs_paid: v1 registered" in out


def test_tools_add_refuses_a_broken_file_in_one_line_without_running_it(sop, tmp_path, capsys):
    marker = tmp_path / "marker"
    bad = tmp_path / "bad.py"
    bad.write_text(marking(marker, "def run(input, ctx):\n    return None\n"))
    rc, out, err = cli(capsys, "tools", "add", sop, "obs_paid", bad)
    assert not marker.exists()
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "non-async `run`" in err and "bad.py" in err
    assert not (sop / "tools").exists()


async def test_a_promoted_model_written_tool_does_not_run_in_this_process(sop, tmp_path, capsys):
    marker = tmp_path / "marker"
    reg = Registry(sop / "tools")
    reg.add_version("obs_paid", marking(marker, VALID_RUN), "tool-maker:m", activate=False)
    rc, out, _ = cli(capsys, "tools", "promote", sop, "obs_paid", "1")
    assert rc == 0 and "sandbox" in out
    tool = Registry(sop / "tools").resolve("obs_paid")
    with pytest.raises(Exception, match="sandbox"):  # the jail stops the write outside it
        await tool.fn({"order_id": "A1"}, SimpleNamespace(params={}, parents={}, mcp=FakeMcp()))
    assert not marker.exists()


async def test_a_model_written_tool_runs_in_the_sandbox_with_its_mcp_calls(sop):
    reg = Registry(sop / "tools")
    reg.add_version("obs_paid", MODEL_TOOL, "tool-maker:m", activate=True)
    mcp = FakeMcp()
    ctx = SimpleNamespace(params={"min_paid": 50}, parents={}, mcp=mcp, node_id="obs_paid")
    verdict = await reg.resolve("obs_paid").fn({"order_id": "A1"}, ctx)
    assert (verdict.value, verdict.observed, verdict.threshold) == ("true", 70, 50)
    assert verdict.explanation == "paid A1"
    assert mcp.calls == [("shop", "execute_query", {"sql": "select paid"})]


async def test_in_process_promotion_is_a_persons_explicit_choice(sop, tmp_path, capsys):
    marker = tmp_path / "marker"
    reg = Registry(sop / "tools")
    reg.add_version("obs_paid", marking(marker, VALID_RUN), "tool-maker:m", activate=False)
    rc, out, err = cli(capsys, "tools", "promote", sop, "obs_paid", "1", "--in-process")
    assert (rc, err) == (0, "") and "in-process" in out
    manifest = json.loads((sop / "tools" / "manifest.json").read_text())
    assert manifest["tools"]["obs_paid"]["versions"]["1"]["in_process"] is True
    tool = Registry(sop / "tools").resolve("obs_paid")
    assert (await tool.fn({"order_id": "A1"}, SimpleNamespace(params={}))).value == "true"
    assert marker.exists()  # now it did run here, as the person asked


def test_in_process_is_refused_for_a_hand_written_version(sop, tmp_path, capsys):
    mine = tmp_path / "paid.py"
    mine.write_text(VALID_RUN)
    assert cli(capsys, "tools", "add", sop, "obs_paid", mine)[0] == 0
    rc, _, err = cli(capsys, "tools", "promote", sop, "obs_paid", "1", "--in-process")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "--in-process" in err


def test_a_model_written_spec_is_read_as_data_not_run(sop):
    spec = {
        "measures": {"paid": {"server": "shop", "table": "orders", "column": "paid",
                              "where": {"order_id": "$order_id"}}},
        "value": "paid", "op": ">=", "threshold": "min_paid",
    }  # fmt: skip
    reg = Registry(sop / "tools")
    reg.add_version("obs_paid", tool_file("obs_paid", "Paid?", spec), "tool-maker:m", activate=True)
    fn = reg.resolve("obs_paid").fn
    assert fn.spec.threshold == "min_paid"  # built by the host from the literal, in-process


def test_an_editable_checkout_is_bound_package_by_package():
    """A clone in a `mktemp -d` folder is mode 700, closed to the sandbox's uid: binding the
    checkout itself would hide every package below it, so its package folders are bound."""
    import sopgraph.tools
    from sopgraph.tools.jailed import _import_paths

    holder = Path(sopgraph.tools.__file__).resolve().parents[1]
    paths, sites = _import_paths()
    if str(holder) in sites:  # a wheel install: site-packages holds sopgraph
        assert str(holder) in paths
        return
    assert str(holder) not in paths
    assert {str(holder / p) for p in ("graphs", "tools", "sopgraph")} <= set(paths)
