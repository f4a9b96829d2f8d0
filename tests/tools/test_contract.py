"""The tool contract with no alarm words: ``run(input, ctx)`` on an SOP about refunds, whose
parameter files are keyed on the input field it names (``params_by: customer``)."""

from __future__ import annotations

import json
import sqlite3

from sop_factory import make_sop

from sopgraph.runtime.runner import Session
from sopgraph.tools.contract import contract_problem

REFUNDS = {
    "id": "refunds",
    "params": {"max_refund": 50},
    "params_by": "customer",
    "input": {
        "customer": {"type": "string", "required": True},
        "amount": {"type": "number", "required": True},
    },
    "entry": {"refund": ["obs_over_limit"]},
    "nodes": {
        "obs_over_limit": {"kind": "observation", "text": "The refund is above {max_refund}.",
                           "next": {"true": ["act_escalate"], "false": ["act_refund"]}},
        "act_escalate": {"kind": "action", "text": "Escalate to a supervisor."},
        "act_refund": {"kind": "action", "text": "Refund the customer."},
    },
}  # fmt: skip
OVER_LIMIT = """
limit = ctx.params["max_refund"]
return Verdict(value=input["amount"] > limit, observed=input["amount"], threshold=limit)
"""


async def test_a_tool_reads_the_sops_own_input_and_its_keyed_parameters(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    root = make_sop(tmp_path / "refunds", REFUNDS, {"obs_over_limit": OVER_LIMIT})
    (root / "params").mkdir()
    (root / "params" / "acme.yaml").write_text("max_refund: 80\n")
    got = {}
    async with Session(root, mcp=False, checkpoint="memory") as s:
        for customer in ("acme", "globex"):  # globex has no file: the SOP's default
            result = await s.run({"type": "refund", "customer": customer, "amount": 60})
            verdict = result.verdicts["obs_over_limit"]
            got[customer] = (verdict.value, verdict.threshold)
    assert got == {"acme": ("false", 80), "globex": ("true", 50)}
    # the invocation log keeps what the tool saw: the whole input and the parameters
    log = sqlite3.connect(tmp_path / "home" / "invocations.sqlite")
    rows = [json.loads(r[0]) for r in log.execute("SELECT inputs FROM invocations ORDER BY id")]
    assert rows[0] == {
        "input": {"type": "refund", "customer": "acme", "amount": 60},
        "params": {"max_refund": 80},
    }


def test_the_contract_is_checked_once_by_signature():
    async def new(input, ctx): ...
    async def legacy(site, timestamp, ctx): ...
    async def flexible(*args): ...
    def sync(input, ctx): ...

    assert contract_problem(new) is None and contract_problem(flexible) is None
    assert "old alarm-shaped form" in contract_problem(legacy)
    assert "read input['site'] and input['timestamp']" in contract_problem(legacy)
    assert "non-async" in contract_problem(sync)
    assert "does not define `run`" in contract_problem(None)
