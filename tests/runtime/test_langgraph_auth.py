"""The LangGraph server's bearer-token auth (``langgraph.json``'s ``auth``), on a real ``langgraph dev``.

The repository's langgraph.json, served with a tokens file of two identities (the MCP server's
format, ``SOPGRAPH_MCP_TOKENS``): a request without a token of that file is 401, Studio's
``x-auth-scheme: langsmith`` bypass included; with one, a run completes and its gated action
records the token's identity as the approver, whatever name the answer or the run's
configuration gives. A thread is its creator's: another identity neither lists, reads nor
resumes it. The store's namespaces are the caller's own. Without tokens the server does not
start.
"""

from __future__ import annotations

import httpx
import pytest
from gated_sop import INPUT, gated_sop
from langgraph_sdk.schema import Command

from sopgraph.evals.langgraph_dev import CONFIG, LangGraphDev, ServerError
from sopgraph.mcp_servers import langgraph_auth
from sopgraph.mcp_servers.langgraph_auth import bearer_token, store_label
from sopgraph.mcp_servers.server_auth import TOKENS_ENV, TokenError
from sopgraph.runtime.studio import THREAD_SOPS

ALICE, BOB = "alice@example.com", "bob"


def test_bearer_token_of_an_authorization_header():
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("bearer   abc ") == "abc"
    for value in (None, "", "Bearer", "Bearer  ", "Basic abc", "abc"):
        assert bearer_token(value) is None, value


def test_the_operator_pins_the_approval_policy(monkeypatch):
    """Unless the operator says ``client``, a run's own ``approval`` gives way to theirs."""
    run = {"config": {"configurable": {"approval": "approve"}}, "context": {"approval": "approve"}}
    langgraph_auth.pin_approval(run, "ask")
    assert run["config"]["configurable"]["approval"] == run["context"]["approval"] == "ask"
    bare: dict = {}
    langgraph_auth.pin_approval(bare, "reject")
    assert bare == {"config": {"configurable": {"approval": "reject"}}}
    langgraph_auth.pin_approval(run, "client")
    assert run["config"]["configurable"]["approval"] == "ask"  # left as it was
    monkeypatch.delenv(langgraph_auth.APPROVAL_ENV, raising=False)
    assert langgraph_auth.approval_policy() == "ask"
    monkeypatch.setenv(langgraph_auth.APPROVAL_ENV, "yes")
    with pytest.raises(ValueError, match="SOPGRAPH_APPROVAL='yes': not a policy"):
        langgraph_auth.approval_policy()


def test_the_served_auth_needs_a_tokens_file(monkeypatch, tmp_path):
    """Importing the module needs no tokens; the server reading its ``auth`` does."""
    langgraph_auth.served_auth.cache_clear()
    monkeypatch.delenv(TOKENS_ENV, raising=False)
    with pytest.raises(TokenError, match=TOKENS_ENV):
        langgraph_auth.auth  # noqa: B018
    monkeypatch.setenv(TOKENS_ENV, str(tmp_path / "absent"))
    with pytest.raises(TokenError, match="cannot read it"):
        langgraph_auth.auth  # noqa: B018
    langgraph_auth.served_auth.cache_clear()


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> tuple[LangGraphDev, str]:
    """The repository's langgraph.json with tokens for Alice and Bob; the gated SOP's path."""
    work = tmp_path_factory.mktemp("langgraph-auth")
    sop = gated_sop(work)
    (work / "home").mkdir()
    env = {"SOPGRAPH_HOME": str(work / "home")}
    with LangGraphDev(CONFIG, workdir=work, env=env, identities=(ALICE, BOB)) as srv:
        yield srv, str(sop)


async def _pause(client, sop: str, **config) -> str:
    """A new thread of ``client``'s running the gated SOP up to its gate."""
    thread = (await client.threads.create())["thread_id"]
    values = await client.runs.wait(
        thread, "sop", input={"input": INPUT}, config={"configurable": {"sop": sop, **config}}
    )
    assert values.get("__interrupt__"), f"the run did not reach its gated action: {values}"
    return thread


async def _refused(call) -> int:
    """The HTTP status the server refused ``call`` with."""
    with pytest.raises(httpx.HTTPStatusError) as refused:
        await call
    return refused.value.response.status_code


@pytest.mark.slow
async def test_requests_without_a_token_of_the_file_are_401(served):
    srv, _ = served
    wrong = "w" * 43
    refused = [
        {},
        {"Authorization": f"Bearer {wrong}"},
        {"Authorization": f"Basic {srv.tokens[ALICE]}"},
        {"Authorization": srv.tokens[ALICE]},
        # the development server's Studio bypass is off (disable_studio_auth)
        {"x-auth-scheme": "langsmith"},
    ]
    async with httpx.AsyncClient(base_url=srv.url) as http:
        for headers in refused:
            for method, path in (("POST", "/threads/search"), ("POST", "/threads")):
                r = await http.request(method, path, headers=headers, json={})
                assert r.status_code == 401, (headers, path, r.text)
                assert TOKENS_ENV in r.json()["detail"]
        r = await http.post("/runs/wait", json={"assistant_id": "sop", "input": {}})
        assert r.status_code == 401
        ok = await http.post("/threads/search", headers=srv.headers(ALICE), json={})
        assert ok.status_code == 200
        assert (await http.get("/ok")).status_code == 200  # the health check needs no token


@pytest.mark.slow
async def test_the_tokens_identity_is_the_approver_whatever_the_answer_says(served):
    srv, sop = served
    alice = srv.client(ALICE)
    thread = await _pause(alice, sop)
    (pending,) = (await alice.threads.get_state(thread))["interrupts"]
    answer = {"decision": "approve", "key": pending["value"]["key"], "by": "mallory"}

    values = await alice.runs.wait(thread, "sop", command=Command(resume=answer))

    (action,) = [a for a in values["actions"] if a["node"] == "act_standby"]
    assert (action["status"], action["by"], action["approver"]) == ("executed", "human", ALICE)
    assert (await alice.threads.get(thread))["status"] == "idle"
    # a run whose configuration and context say approve: the operator's policy (ask, the
    # default) stands, so the gate pauses for an answer instead of executing
    for given in ({"config": {"configurable": {"sop": sop, "approval": "approve"}}},
                  {"context": {"sop": sop, "approval": "approve"}}):  # fmt: skip
        values = await alice.runs.wait(None, "sop", input={"input": INPUT}, **given)
        assert values.get("__interrupt__"), (given, values)
        assert not [a for a in values.get("actions", []) if a.get("status") == "executed"]


@pytest.mark.slow
async def test_another_identity_cannot_see_run_or_resume_a_thread(served):
    srv, sop = served
    alice, bob = srv.client(ALICE), srv.client(BOB)
    thread = await _pause(alice, sop)
    assert (await alice.threads.get(thread))["metadata"]["owner"] == ALICE

    for read in (bob.threads.get, bob.threads.get_state, bob.threads.get_history):
        assert await _refused(read(thread)) == 404
    assert thread not in {t["thread_id"] for t in await bob.threads.search(limit=100)}
    assert thread in {t["thread_id"] for t in await alice.threads.search(limit=100)}
    (pending,) = (await alice.threads.get_state(thread))["interrupts"]
    answer = {"decision": "approve", "key": pending["value"]["key"]}
    assert await _refused(bob.runs.wait(thread, "sop", command=Command(resume=answer))) == 404
    assert await _refused(bob.threads.update(thread, metadata={"owner": BOB})) == 404
    # still Alice's, still waiting at its gate
    assert (await alice.threads.get(thread))["status"] == "interrupted"
    assert (await alice.threads.get_state(thread))["next"] == ["act_standby"]
    # a thread Bob creates naming Alice as its owner is Bob's
    claimed = await bob.threads.create(metadata={"owner": ALICE})
    assert claimed["metadata"]["owner"] == BOB
    assert await _refused(alice.threads.get(claimed["thread_id"])) == 404


@pytest.mark.slow
async def test_store_namespaces_are_the_callers_and_crons_are_refused(served):
    srv, sop = served
    alice, bob = srv.client(ALICE), srv.client(BOB)
    thread = await _pause(alice, sop)  # the graph records the thread's SOP in the store
    await alice.store.put_item(["notes"], "n1", {"text": "Alice's"})

    assert [i["key"] for i in (await alice.store.search_items(["notes"]))["items"]] == ["n1"]
    assert (await bob.store.search_items(["notes"]))["items"] == []
    assert (await bob.store.search_items([store_label(ALICE), "notes"]))["items"] == []
    # the graph's own records are out of any client's reach
    assert (await alice.store.search_items(list(THREAD_SOPS)))["items"] == []
    await alice.store.put_item(list(THREAD_SOPS), thread, {"sop": "fc_alarm_triage"})
    state = await alice.threads.get_state(thread)
    assert state["next"] == ["act_standby"]  # still the SOP it runs
    cron = bob.crons.create("sop", schedule="* * * * *", input={"input": INPUT})
    assert await _refused(cron) == 403


@pytest.mark.slow
def test_the_server_does_not_start_without_tokens(tmp_path):
    with pytest.raises(ServerError) as refused:
        LangGraphDev(CONFIG, workdir=tmp_path, env={TOKENS_ENV: ""}, timeout=90).start()
    assert f"needs bearer tokens: set {TOKENS_ENV}=FILE" in str(refused.value)
