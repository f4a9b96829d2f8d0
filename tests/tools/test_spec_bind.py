"""Nodes that share a check: one written out, the others bind a pinned version of it
(``spec_of(node, version).bind(...)``); ``convert-check`` finds the copies left."""

from __future__ import annotations

import shutil

import pytest

from sopgraph.evals.spec_check import NodeCheck, copy_groups, copy_shape
from sopgraph.examples import EXAMPLES
from sopgraph.tools.registry import Registry, ToolIntegrityError, ToolLoadError
from sopgraph.tools.spec import Check, Measure, SpecError

BASE = Check(
    measures={"jams": Measure(server="conveyance", table="t", column="sorter_jams", minutes=30,
                              where={"site": "$site"}, time_column="ts", reduce="increase")},
    value="jams", op=">=", threshold="sorter_jam_alarm_min", unit=" jams",
)  # fmt: skip
BASE_FILE = """from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={"jams": Measure(server="conveyance", table="t", column="sorter_jams", minutes=30,
                              where={"site": "$site"}, time_column="ts", reduce="increase")},
    value="jams", op=">=", threshold="sorter_jam_alarm_min", unit=" jams",
)
run = tool(SPEC)
"""
BOUND_FILE = """from sopgraph.tools.spec import spec_of, tool

SPEC = spec_of("obs_jams", 1).bind(threshold="jam_min", measures={"jams": {"minutes": 15}})
run = tool(SPEC)
"""


def test_bind_changes_the_named_arguments_only():
    bound = BASE.bind(threshold="jam_min", op=">", measures={"jams": {"minutes": 15}})
    assert (bound.threshold, bound.op, bound.measures["jams"].minutes) == ("jam_min", ">", 15)
    assert bound.measures["jams"].column == "sorter_jams" and bound.unit == " jams"
    assert BASE.threshold == "sorter_jam_alarm_min"  # the shared check is unchanged
    with pytest.raises(SpecError, match="'limit' is not a field of a check"):
        BASE.bind(limit=3)
    with pytest.raises(SpecError, match="no measurement 'errors'; the check has jams"):
        BASE.bind(measures={"errors": {"minutes": 5}})
    with pytest.raises(SpecError, match="op"):
        BASE.bind(op="about")


def test_a_bound_tool_is_added_from_anywhere_and_pins_its_base(tmp_path):
    lib = tmp_path / "tools"
    reg = Registry(lib)
    reg.add_version("obs_jams", BASE_FILE, "human", activate=True)
    outside = tmp_path / "elsewhere" / "rc_jams.py"
    outside.parent.mkdir()
    outside.write_text(BOUND_FILE)
    # checked where it lies, bound in the library it is added to
    assert reg.add_file("rc_jams", outside, activate=True) == (1, True)
    spec = reg.resolve("rc_jams").fn.spec
    assert spec == BASE.bind(threshold="jam_min", measures={"jams": {"minutes": 15}})
    # the base edited without a new version (in a copy: a process imports a version once):
    # the bound tool refuses to load
    copy = tmp_path / "copy" / "tools"
    shutil.copytree(lib, copy)
    base = copy / "obs_jams" / "v1.py"
    base.write_text(base.read_text().replace("30", "45"))
    with pytest.raises((ToolIntegrityError, ToolLoadError), match="obs_jams"):
        Registry(copy).resolve("rc_jams")


def test_binding_a_version_that_is_missing_or_python_is_one_clear_error(tmp_path):
    reg = Registry(tmp_path / "tools")
    reg.add_version("obs_jams", BASE_FILE, "human", activate=True)
    reg.add_version("obs_py", "async def run(input, ctx):\n    return None\n", "human")
    for code, why in ((BOUND_FILE.replace('"obs_jams", 1', '"obs_jams", 7'), "no version 7"),
                      (BOUND_FILE.replace('"obs_jams", 1', '"obs_py", 1'), "Python, not a spec")):  # fmt: skip
        with pytest.raises(ToolLoadError, match=why):
            path = tmp_path / "t.py"
            path.write_text(code)
            reg.add_file("rc_jams", path)


def test_copies_are_found_until_they_bind():
    lib = Registry(EXAMPLES / "fc_alarm_triage" / "tools")
    sorter = lib.load("rc_sorter_jam", lib.entry("rc_sorter_jam").version(4)).fn.spec  # a copy
    obs = lib.resolve("obs_sorter_jams").fn.spec
    assert copy_shape(sorter) == copy_shape(obs) != copy_shape(obs.bind(value="jams * 2"))

    def check(node, spec, binds=None):
        return NodeCheck(node=node, spec=True, shape=copy_shape(spec), binds=binds)

    both_written = [check("obs_sorter_jams", obs), check("rc_sorter_jam", sorter)]
    assert copy_groups(both_written) == ([], [["obs_sorter_jams", "rc_sorter_jam"]])
    bound = [both_written[0], check("rc_sorter_jam", sorter, binds="obs_sorter_jams v4")]
    assert copy_groups(bound) == ([["obs_sorter_jams", "rc_sorter_jam"]], [])
