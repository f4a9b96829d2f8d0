"""The node journal lives outside the nodes: the compiler wraps node functions for a saver that
journals, and nothing in the compiled node function itself mentions the journal."""

from __future__ import annotations

import inspect
import types

import pytest
from sop_factory import make_sop

from sopgraph.graphs import compiler
from sopgraph.runtime.journal import DurableNode
from sopgraph.runtime.runner import Session


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))


# every name by which durability reached into the node function before it moved out
JOURNAL_WORDS = ("journal", "replay", "settle", "in_flight", "durab", "checkpoint")


def _node_sop(tmp_path):
    nodes = {
        "first": {"kind": "observation", "text": "first", "next": {"true": ["act"]}},
        "act": {"kind": "action", "text": "act"},
    }
    sop = {"id": "wrapped", "entry": {"alarm": ["first"]}, "nodes": nodes}
    return make_sop(tmp_path / "sop", sop, {"first": "return Verdict(value=True)"})


def _node_function(graph, node_id: str):
    """The function LangGraph calls for ``node_id`` in a compiled graph."""
    bound = graph.nodes[node_id].bound
    return getattr(bound, "afunc", None) or bound.func


def _code_names(code: types.CodeType) -> set[str]:
    """Every name, attribute, local and string constant a code object and its nested code use."""
    names = set(code.co_names) | set(code.co_varnames) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, str):
            names.add(const)
        elif isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _mentions(text: str) -> list[str]:
    return [w for w in JOURNAL_WORDS if w in text.lower()]


@pytest.mark.parametrize("checkpoint", ["sqlite", "memory"])
async def test_nothing_in_the_compiled_node_function_mentions_the_journal(tmp_path, checkpoint):
    """Journaled (SQLite) the compiler wraps each node in ``DurableNode``; in memory the node is
    added bare. Either way the node function inside, its class's source and the code of every
    one of its methods, names nothing of the journal."""
    spec = str(tmp_path / "ck.sqlite") if checkpoint == "sqlite" else "memory"
    async with Session(_node_sop(tmp_path), checkpoint=spec, mcp=False) as s:
        for node_id in ("first", "act"):
            fn = _node_function(s.graph, node_id)
            if checkpoint == "sqlite":
                assert isinstance(fn, DurableNode) and fn.journal and fn.saver is s.journal
                fn = fn.node
            assert isinstance(fn, compiler._NodeRunner)
            assert _mentions(inspect.getsource(type(fn))) == []
            for name, member in vars(type(fn)).items():
                if isinstance(member, types.FunctionType):
                    used = " ".join(_code_names(member.__code__))
                    assert _mentions(used) == [], f"_NodeRunner.{name} uses {_mentions(used)}"
        result = await s.run({"type": "alarm"})
    assert result.status == "done" and result.path == ["first", "act"]


async def test_a_session_without_the_journal_only_counts_running_nodes(tmp_path):
    async with Session(_node_sop(tmp_path), checkpoint=str(tmp_path / "ck.sqlite"), mcp=False,
                       journal=False) as s:  # fmt: skip
        fn = _node_function(s.graph, "first")
        assert isinstance(fn, DurableNode) and not fn.journal and s.journal is None
        assert (await s.run({"type": "alarm"})).status == "done"
