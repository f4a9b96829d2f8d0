"""The local model's tool-call formats: the hermes and JSON parsers, and the front that applies them.

The upstream is a tiny OpenAI-compatible server that answers with scripted text, as the GGUF's
own chat template makes the model answer; LangChain's chat model must see ``tool_calls``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fake_chat import FakeChatServer
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from model_env import clean_env  # noqa: F401 - the autouse fixture

from sopgraph.nodes.models import (
    THOUGHT_KEY,
    LocalModelServer,
    Settings,
    SettingsError,
    chat_model,
    tool_format,
)
from sopgraph.nodes.models._tool_format import (
    DEFAULT_TOOL_FORMAT,
    ToolCallAdapter,
    parse_hermes,
    parse_json_reply,
    server_chat_format,
)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def test_one_call():
    reply = parse_hermes(
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    )
    assert reply.calls == [{"name": "get_weather", "arguments": {"city": "Oslo"}}]
    assert reply.content == "" and reply.errors == []


def test_two_calls_and_the_text_around_them():
    text = (
        "Thought: I need both.\n"
        '<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n'
        '<tool_call>\n{"name": "b", "arguments": "{\\"y\\": 2}"}\n</tool_call>'
    )
    reply = parse_hermes(text)
    assert reply.calls == [
        {"name": "a", "arguments": {"x": 1}},
        {"name": "b", "arguments": {"y": 2}},
    ]
    assert reply.content == "Thought: I need both."


@pytest.mark.parametrize(
    "text, error",
    [
        ('<tool_call>\n{"name": "a", "arguments": {x: 1}}\n</tool_call>', "is not JSON"),
        ('<tool_call>\n{"name": "a", "arguments": {"x": ', "is not JSON"),  # cut off
        ('<tool_call>{"arguments": {}}</tool_call>', "no function name"),
        ('<tool_call>{"name": "a", "arguments": [1]}</tool_call>', "not an object"),
    ],
)
def test_a_malformed_call_is_no_call_and_stays_text(text, error):
    reply = parse_hermes(text, {"a"})
    assert reply.calls == [] and reply.content == text.strip()
    assert len(reply.errors) == 1 and error in reply.errors[0]


def test_a_bare_json_call_counts_only_for_an_offered_function():
    bare = '```json\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n```'
    assert parse_hermes(bare, {"get_weather"}).calls == [
        {"name": "get_weather", "arguments": {"city": "Oslo"}}
    ]
    assert parse_hermes(bare, {"other"}).calls == []
    assert parse_hermes("check_area_outage", {"check_area_outage"}).calls == []


def test_json_schema_replies():
    assert parse_json_reply('{"tool": "a", "arguments": {"x": 1}}').calls == [
        {"name": "a", "arguments": {"x": 1}}
    ]
    assert parse_json_reply('{"answer": "done"}').content == "done"
    cut = parse_json_reply('{"tool": "a", "argu')
    assert cut.calls == [] and "not JSON" in cut.errors[0]


def test_the_server_runs_the_gguf_template_except_for_chatml_function_calling():
    assert DEFAULT_TOOL_FORMAT == "json-schema" == Settings(model="local").local_tool_format
    assert server_chat_format("hermes") is server_chat_format("json-schema") is None
    try:
        hermes = LocalModelServer.from_settings(Settings(model="local"))
    except SettingsError:
        pytest.skip("llama-cpp-python is not installed")
    assert "--chat_format" not in hermes.command()
    old = Settings(model="local", local_tool_format="chatml-function-calling")
    command = LocalModelServer.from_settings(old).command()
    assert command[command.index("--chat_format") + 1] == "chatml-function-calling"
    assert tool_format(Settings(model="local:smollm2")) == "chatml-function-calling"


@pytest.fixture
def scripted() -> Iterator[FakeChatServer]:
    """Answers with the texts put in ``replies``, in order."""
    up = FakeChatServer(lambda body, n: up.replies.pop(0))
    up.replies = []
    yield up
    up.close()


def _local(scripted: FakeChatServer, fmt: str):
    try:
        settings = Settings(model="local", base_url=scripted.base_url, local_tool_format=fmt)
        return chat_model(settings, max_retries=0).bind_tools([WEATHER])
    except SettingsError:
        pytest.skip("llama-cpp-python is not installed")


def _history(call: AIMessage) -> list:
    return [
        SystemMessage("You help."),
        HumanMessage("Weather in Oslo?"),
        call,
        ToolMessage("sunny", tool_call_id=call.tool_calls[0]["id"]),
    ]


def test_hermes_replies_become_tool_calls_and_go_back_in_the_template_form(
    scripted, tmp_path, monkeypatch
):
    tape = tmp_path / "tape.jsonl"
    monkeypatch.setenv("SOPGRAPH_CASSETTE", str(tape))
    monkeypatch.setenv("SOPGRAPH_CASSETTE_MODE", "record")
    scripted.replies = [
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>',
        "It is sunny in Oslo.",
    ]
    llm = _local(scripted, "hermes")
    call = llm.invoke("Weather in Oslo?")
    assert [(c["name"], c["args"]) for c in call.tool_calls] == [("get_weather", {"city": "Oslo"})]
    assert call.content == "" and call.response_metadata["finish_reason"] == "tool_calls"
    assert llm.invoke(_history(call)).content == "It is sunny in Oslo."

    sent = scripted.requests[1]
    assert sent["tools"] == [WEATHER]  # the template shows them in the system prompt
    assistant, tool = sent["messages"][2], sent["messages"][3]
    assert "tool_calls" not in assistant
    assert assistant["content"] == (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    )
    assert (tool["role"], tool["content"]) == ("tool", "sunny")
    recorded = [json.loads(line) for line in tape.read_text().splitlines()]
    assert recorded[0]["response"]["body"]["choices"][0]["message"]["content"].startswith(
        "<tool_call>"
    )  # the raw reply: a replay parses it again
    assert "tool_calls" in recorded[1]["request"]["body"]["messages"][2]  # the client's request

    scripted.close()
    monkeypatch.setenv("SOPGRAPH_CASSETTE_MODE", "replay")
    again = _local(scripted, "hermes").invoke("Weather in Oslo?")
    assert again.tool_calls == call.tool_calls


def test_a_malformed_hermes_call_reaches_the_client_as_text(scripted):
    scripted.replies = ['<tool_call>\n{"name": "get_weather", "arguments": {city: Oslo}}']
    reply = _local(scripted, "hermes").invoke("Weather in Oslo?")
    assert reply.tool_calls == [] and reply.content.startswith("<tool_call>")


def test_json_schema_constrains_the_reply_and_describes_the_tools(scripted):
    scripted.replies = [
        '{"tool": "get_weather", "arguments": {"city": "Oslo"}}',
        '{"answer": "It is sunny."}',
    ]
    llm = _local(scripted, "json-schema")
    call = llm.invoke([SystemMessage("You help."), HumanMessage("Weather in Oslo?")])
    assert [(c["name"], c["args"]) for c in call.tool_calls] == [("get_weather", {"city": "Oslo"})]
    assert llm.invoke(_history(call)).content == "It is sunny."
    first, second = scripted.requests
    assert "tools" not in first and "tool_choice" not in first
    assert "get_weather: The weather in a city." in first["messages"][0]["content"]
    union = first["response_format"]["schema"]["anyOf"]
    assert union[0]["properties"]["tool"] == {"const": "get_weather"}
    assert union[-1]["required"] == ["answer"]
    assert second["messages"][2] == {
        "role": "assistant",
        "content": '{"tool": "get_weather", "arguments": {"city": "Oslo"}}',
    }
    assert second["messages"][3] == {"role": "user", "content": "Result of get_weather: sunny"}


def test_a_thought_opens_each_call_when_the_request_asks(scripted):
    """ReAct's Thought under the grammar: a ``thought`` field before ``tool``, returned as the
    message's text and sent back with its call; the extension key never reaches the server."""
    scripted.replies = [
        '{"thought": "I need the weather first.", "tool": "get_weather", '
        '"arguments": {"city": "Oslo"}}',
        '{"thought": "Sunny: I can answer.", "tool": "get_weather", "arguments": {"city": "Bergen"}}',
    ]
    try:
        settings = Settings(
            model="local", base_url=scripted.base_url, local_tool_format="json-schema"
        )
        base = chat_model(settings, max_retries=0)
    except SettingsError:
        pytest.skip("llama-cpp-python is not installed")
    llm = base.model_copy(update={"extra_body": {THOUGHT_KEY: True}}).bind_tools([WEATHER])
    call = llm.invoke([SystemMessage("You help."), HumanMessage("Weather in Oslo?")])
    assert call.content == "I need the weather first."
    assert [(c["name"], c["args"]) for c in call.tool_calls] == [("get_weather", {"city": "Oslo"})]
    llm.invoke(_history(call))
    first, second = scripted.requests
    assert THOUGHT_KEY not in first
    union = first["response_format"]["schema"]["anyOf"]
    assert list(union[0]["properties"]) == ["thought", "tool", "arguments"]
    assert union[0]["required"] == ["thought", "tool", "arguments"]
    assert '{"thought": "<one short sentence' in first["messages"][0]["content"]
    assert json.loads(second["messages"][2]["content"]) == {
        "thought": "I need the weather first.",
        "tool": "get_weather",
        "arguments": {"city": "Oslo"},
    }
    plain = ToolCallAdapter("json-schema").request({"messages": [], "tools": [WEATHER]})
    assert list(plain["response_format"]["schema"]["anyOf"][0]["properties"]) == [
        "tool",
        "arguments",
    ]  # without the key: calls as before


def test_requests_without_tools_pass_unchanged(scripted):
    scripted.replies = ['<tool_call>{"name": "x", "arguments": {}}</tool_call>']
    try:
        llm = chat_model(Settings(model="local", base_url=scripted.base_url), max_retries=0)
    except SettingsError:
        pytest.skip("llama-cpp-python is not installed")
    reply = llm.invoke("Write code.")  # CodeAct and DSPy offer no tools: nothing is parsed
    assert reply.tool_calls == [] and reply.content.startswith("<tool_call>")
    assert scripted.requests[0]["messages"] == [{"role": "user", "content": "Write code."}]


def test_the_adapter_leaves_chatml_function_calling_alone():
    adapter = ToolCallAdapter("chatml-function-calling")
    assert not adapter.applies("/chat/completions", {"messages": [], "tools": [WEATHER]})


def test_schemas_are_made_safe_for_llama_cpp_grammars():
    text = {"type": "string", "minLength": 1, "maxLength": 2000, "pattern": "^P_\\d{5}$"}
    code = {"type": "string", "maxLength": 8, "pattern": "^\\w+$"}
    params = {"type": "object", "properties": {"note": text, "code": code, "pattern": code}}
    tool = {"type": "function", "function": {"name": "f", "parameters": params}}
    body = ToolCallAdapter("json-schema").request({"messages": [], "tools": [tool]})
    arguments = body["response_format"]["schema"]["anyOf"][0]["properties"]["arguments"]
    assert arguments["properties"]["note"] == {
        "type": "string",
        "minLength": 1,
        "pattern": "^P_[0-9]{5}$",
    }
    assert arguments["properties"]["code"] == {
        "type": "string",
        "maxLength": 8,
    }  # \\w: dropped, not guessed
    assert arguments["properties"]["pattern"] == arguments["properties"]["code"]  # a name
    grammar = pytest.importorskip("llama_cpp.llama_grammar")
    # spelt out, maxLength 2000 was 2,000 nested rules, and the pattern an escape llama.cpp rejects
    gbnf = grammar.json_schema_to_gbnf(json.dumps(arguments))
    assert gbnf.count("(") < 60 and "\\d" not in gbnf


def test_json_schema_tool_choice_forces_a_call_or_one_tool():
    answer = {"type": "function", "function": {"name": "answer", "parameters": {"type": "object"}}}
    body = {"messages": [{"role": "user", "content": "hi"}], "tools": [WEATHER, answer]}
    adapter = ToolCallAdapter("json-schema")

    def offered(**extra):
        union = adapter.request({**body, **extra})["response_format"]["schema"]["anyOf"]
        return [u["properties"].get("tool", {}).get("const", "text") for u in union]

    assert offered() == ["get_weather", "answer", "text"]
    assert offered(tool_choice="auto") == ["get_weather", "answer", "text"]
    assert offered(tool_choice="required") == ["get_weather", "answer"]  # no free-text reply
    named = {"type": "function", "function": {"name": "answer"}}
    assert offered(tool_choice=named) == ["answer"]
    prompt = adapter.request({**body, "tool_choice": named})["messages"][0]["content"]
    assert "get_weather" not in prompt and '{"answer": "<your reply>"}' not in prompt
