"""Cassettes at the HTTP layer: record through the loopback front, replay without a model, misses fail loudly.

The upstream here is a tiny OpenAI-compatible HTTP server that answers with a counter (a fake
LLM); LangChain's ChatOpenAI and DSPy (through LiteLLM) both talk to it through the front.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import dspy
import openai
import pytest
from fake_chat import FakeChatServer
from model_env import clean_env  # noqa: F401 - the autouse fixture

from sopgraph.nodes.models import Settings, chat_model, dspy_lm
from sopgraph.nodes.models import _local_llm as local_llm
from sopgraph.nodes.models._model_proxy import Cassette, CassetteError, request_key


@pytest.fixture
def upstream() -> Iterator[FakeChatServer]:
    """Answers every chat completion with ``reply <n>``; counts the requests it got."""
    up = FakeChatServer(lambda body, n: f"reply {n}")
    yield up
    up.close()


def _settings(upstream: FakeChatServer) -> Settings:
    return Settings(model="openai:fake", base_url=upstream.base_url, api_key="k")


def test_record_then_replay_without_the_model(upstream, tmp_path, monkeypatch):
    tape = tmp_path / "tape.jsonl"
    monkeypatch.setenv("SOPGRAPH_CASSETTE", str(tape))
    monkeypatch.setenv("SOPGRAPH_CASSETTE_MODE", "record")
    llm = chat_model(_settings(upstream), max_retries=0)
    assert llm.openai_api_base != upstream.base_url  # it goes through the front
    assert llm.invoke("first").content == "reply 1"
    assert llm.invoke("second").content == "reply 2"
    lines = [json.loads(line) for line in tape.read_text().splitlines()]
    assert [e["response"]["body"]["choices"][0]["message"]["content"] for e in lines] == [
        "reply 1",
        "reply 2",
    ]
    assert lines[0]["request"]["path"] == "/chat/completions"

    upstream.close()  # replay must not need it
    monkeypatch.setenv("SOPGRAPH_CASSETTE_MODE", "replay")
    replay = chat_model(_settings(upstream), max_retries=0)
    assert replay.invoke("second").content == "reply 2"
    assert replay.invoke("first").content == "reply 1"
    reply = replay.invoke("first")
    assert reply.usage_metadata["input_tokens"] == 5  # token accounting replays too
    with pytest.raises(openai.BadRequestError) as exc:
        replay.invoke("never recorded")
    message = str(exc.value)
    assert str(tape) in message and "no recorded response" in message
    front = next(f for f in local_llm.running_fronts() if f.cassette and f.cassette.path == tape
                 and f.cassette.mode == "replay")  # fmt: skip
    assert len(front.misses) == 1 and {e.source for e in front.exchanges} == {"cassette", "miss"}


def test_dspy_goes_through_the_same_cassette(upstream, tmp_path, monkeypatch):
    tape = tmp_path / "dspy.jsonl"
    monkeypatch.setenv("SOPGRAPH_CASSETTE", str(tape))
    monkeypatch.setenv("SOPGRAPH_CASSETTE_MODE", "record")
    lm = dspy_lm(_settings(upstream), cache=False, num_retries=0)
    assert lm("Say hi.") == ["reply 1"]
    monkeypatch.setenv("SOPGRAPH_CASSETTE_MODE", "replay")
    upstream.close()
    again = dspy_lm(_settings(upstream), cache=False, num_retries=0)
    assert again("Say hi.") == ["reply 1"]
    with pytest.raises(Exception, match="no recorded response"):
        again("Say something else.")
    assert isinstance(dspy.settings.lm, dspy.BaseLM | None)


def test_replaying_the_local_model_starts_no_server(tmp_path, monkeypatch):
    tape = tmp_path / "local.jsonl"
    tape.write_text("")
    monkeypatch.setenv("SOPGRAPH_CASSETTE", str(tape))
    servers_before = dict(local_llm._servers)  # earlier tests in this process may share some
    llm = chat_model(Settings(model="local"), max_retries=0)
    with pytest.raises(openai.BadRequestError, match="no recorded response"):
        llm.invoke("hello")
    assert local_llm._servers == servers_before


def test_a_missing_cassette_or_a_bad_mode_is_one_clear_error(tmp_path):
    with pytest.raises(CassetteError, match="does not exist: record it"):
        Cassette.open(tmp_path / "none.jsonl")
    with pytest.raises(CassetteError, match="'rewind' is not one of replay, record"):
        Cassette.open(tmp_path / "none.jsonl", "rewind")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n")
    with pytest.raises(CassetteError, match=r"bad.jsonl:1 is not a recorded exchange"):
        Cassette.open(bad)


def test_the_key_ignores_json_key_order_and_whitespace():
    a = request_key("POST", "/chat/completions", b'{"a": 1, "b": [1, 2]}')
    b = request_key("post", "/chat/completions/", b'{"b":[1,2],"a":1}')
    assert a == b != request_key("POST", "/chat/completions", b'{"a": 2, "b": [1, 2]}')


def test_a_key_asked_twice_replays_in_recorded_order(tmp_path: Path):
    tape = Cassette.open(tmp_path / "t.jsonl", "record")
    tape.record("k", {}, {"status": 200, "body": 1})
    tape.record("k", {}, {"status": 200, "body": 2})
    replay = Cassette.open(tmp_path / "t.jsonl")
    assert [replay.replay("k")["body"] for _ in range(3)] == [1, 2, 2]
    assert replay.replay("other") is None


PRUNING_RUN = """
import sys
import openai
from sopgraph.nodes.models import Settings, chat_model
llm = chat_model(Settings(model="openai:fake", base_url="http://127.0.0.1:9/v1", api_key="k"),
                 max_retries=0)
for prompt in sys.argv[1:]:
    try:
        print(llm.invoke(prompt).content)
    except openai.BadRequestError:
        print("miss")
"""


def _replay_pruning(tape: Path, *prompts: str, mode: str = "replay"):
    import os
    import subprocess
    import sys

    env = {**os.environ, "SOPGRAPH_CASSETTE": str(tape), "SOPGRAPH_CASSETTE_MODE": mode,
           "SOPGRAPH_CASSETTE_PRUNE": "1"}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-c", PRUNING_RUN, *prompts], env=env, capture_output=True, text=True
    )


def test_a_pruning_replay_keeps_only_what_the_run_asked(upstream, tmp_path, monkeypatch):
    tape = tmp_path / "tape.jsonl"
    monkeypatch.setenv("SOPGRAPH_CASSETTE", str(tape))
    monkeypatch.setenv("SOPGRAPH_CASSETTE_MODE", "record")
    llm = chat_model(_settings(upstream), max_retries=0)
    for prompt in ("first", "second", "third", "second"):
        llm.invoke(prompt)
    recorded = tape.read_text().splitlines()
    assert len(recorded) == 4
    # a run that misses a request did not replay whole: nothing is pruned
    run = _replay_pruning(tape, "second", "never recorded")
    assert run.stdout.split() == ["reply", "2", "miss"]
    assert "not pruned: 1 request(s) missing" in run.stderr
    assert tape.read_text().splitlines() == recorded
    # "second" asked once keeps its first recording only, "first" and "third" go
    run = _replay_pruning(tape, "second")
    assert run.returncode == 0 and f"cassette {tape}: pruned 4 -> 1 exchanges" in run.stderr
    assert tape.read_text().splitlines() == [recorded[1]]
    # pruning is for a replay: another mode is one clear error
    run = _replay_pruning(tape, "second", mode="fill")
    assert (
        "SOPGRAPH_CASSETTE_PRUNE prunes a replayed cassette, and the mode is 'fill'" in run.stderr
    )
    assert tape.read_text().splitlines() == [recorded[1]]


@pytest.mark.parametrize(
    ("mode", "prune", "said"),
    [
        ("rewind", "", "SOPGRAPH_CASSETTE_MODE='rewind' is not one of replay, record, fill"),
        ("fill", "1", "SOPGRAPH_CASSETTE_PRUNE prunes a replayed cassette, and the mode is 'fill'"),
    ],
)
def test_a_cassette_setting_the_cli_cannot_use_is_one_error_line(
    tmp_path, monkeypatch, capsys, mode, prune, said
):
    from sopgraph.cli import main

    tape = tmp_path / "tape.jsonl"
    tape.write_text("")
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SOPGRAPH_MODEL", "local")
    monkeypatch.setenv("SOPGRAPH_CASSETTE", str(tape))
    monkeypatch.setenv("SOPGRAPH_CASSETTE_MODE", mode)
    monkeypatch.setenv("SOPGRAPH_CASSETTE_PRUNE", prune)
    assert main(["model", "judge", "--zero-shot", "--limit", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {said}")
