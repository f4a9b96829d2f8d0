import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from model_env import clean_env  # noqa: F401 - the autouse fixture

from sopgraph.nodes.models import ChatOpenAICompatible, Settings, SettingsError, chat_model, dspy_lm
from sopgraph.nodes.models import _local_llm as local_llm

BEDROCK = "bedrock:anthropic.claude-3-5-sonnet-20240620-v1:0"


def test_openai_compatible_endpoint():
    llm = chat_model(
        Settings(model="openai:qwen2.5-7b", base_url="http://127.0.0.1:8000/v1", temperature=0.3)
    )
    assert isinstance(llm, ChatOpenAICompatible)
    assert (llm.model_name, llm.openai_api_base, llm.temperature) == (
        "qwen2.5-7b",
        "http://127.0.0.1:8000/v1",
        0.3,
    )
    lm = dspy_lm(Settings(model="openai:qwen2.5-7b", base_url="http://127.0.0.1:8000/v1"))
    assert lm.model == "openai/qwen2.5-7b"
    assert lm.kwargs["api_base"] == "http://127.0.0.1:8000/v1"


def test_ollama_defaults_to_its_local_port():
    llm = chat_model(Settings(model="ollama:llama3.2"))
    assert llm.openai_api_base == "http://127.0.0.1:11434/v1"
    assert dspy_lm(Settings(model="ollama:llama3.2")).kwargs["api_base"] == llm.openai_api_base


def test_local_with_a_running_server_url_starts_nothing():
    settings = Settings(model="local", base_url="http://127.0.0.1:9/v1")
    servers_before = dict(local_llm._servers)  # earlier tests in this process may share some
    try:
        llm = chat_model(settings)
    except SettingsError as exc:  # llama-cpp-python not installed here
        assert "make local-llm" in str(exc)
        return
    # the front parses the model's tool calls (``tool_format``); it starts no model
    assert (llm.model_name, llm.max_tokens) == ("qwen2.5-coder-1.5b-instruct", 512)
    front = next(f for f in local_llm.running_fronts() if f.base_url == llm.openai_api_base)
    assert front.upstream_url() == "http://127.0.0.1:9/v1"
    assert local_llm._servers == servers_before
    assert front.adapter is not None and front.adapter.format == "json-schema"
    assert dspy_lm(settings).model == "openai/qwen2.5-coder-1.5b-instruct"
    direct = Settings(
        model="local", base_url="http://127.0.0.1:9/v1", local_tool_format="chatml-function-calling"
    )
    assert chat_model(direct).openai_api_base == "http://127.0.0.1:9/v1"


def test_local_smollm2_by_name():
    settings = Settings(model="local:smollm2", base_url="http://127.0.0.1:9/v1")
    try:
        llm = chat_model(settings)
    except SettingsError as exc:
        assert "make local-llm" in str(exc)
        return
    assert llm.model_name == "smollm2-135m-instruct"


def test_an_unknown_local_model_is_one_clear_error():
    with pytest.raises(SettingsError) as exc:
        chat_model(Settings(model="local:llama9"))
    assert "unknown local model 'llama9'" in str(exc.value) and "smollm2" in str(exc.value)


def test_local_roles_get_their_output_budgets():
    from sopgraph.prompts.envelope import BUDGETS, role_chat, role_lm

    settings = Settings(model="local", base_url="http://127.0.0.1:9/v1")
    try:
        llm, lm = chat_model(settings), dspy_lm(settings)
    except SettingsError:
        pytest.skip("llama-cpp-python is not installed")
    assert role_chat(llm, "route").max_tokens == BUDGETS["route"]
    assert role_lm(lm, "judge").kwargs["max_tokens"] == BUDGETS["judge"]
    assert llm.max_tokens == BUDGETS["default"]  # the original is not changed
    fixed = chat_model(Settings(model="local", base_url="http://127.0.0.1:9/v1", max_tokens=7))
    assert role_chat(fixed, "codeact").max_tokens == 7  # an explicit max_tokens wins
    hosted = chat_model(Settings(model="openai:x", base_url="http://127.0.0.1:9/v1"))
    assert role_chat(hosted, "route") is hosted


def test_bedrock(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIATEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    settings = Settings(model=BEDROCK, aws_region="eu-west-1", max_tokens=256)
    llm = chat_model(settings)
    assert type(llm).__name__ == "ChatBedrockConverse"
    assert (llm.model_id, llm.region_name, llm.max_tokens) == (
        "anthropic.claude-3-5-sonnet-20240620-v1:0",
        "eu-west-1",
        256,
    )
    lm = dspy_lm(settings)
    assert lm.model == "bedrock/converse/anthropic.claude-3-5-sonnet-20240620-v1:0"
    assert lm.kwargs["aws_region_name"] == "eu-west-1"


def test_missing_credential_is_a_settings_error():
    with pytest.raises(SettingsError, match="AWS credentials"):
        chat_model(Settings(model=BEDROCK, aws_region="us-east-1"))
    with pytest.raises(SettingsError, match="SOPGRAPH_BASE_URL"):
        dspy_lm(Settings(model="openai:qwen"))
    with pytest.raises(SettingsError, match="no model configured"):
        chat_model(Settings())


def test_tool_call_turn_is_sent_with_empty_content_not_null():
    llm = chat_model(Settings(model="openai:m", base_url="http://127.0.0.1:9/v1"))
    history = [
        HumanMessage("What is 2 + 3?"),
        AIMessage("", tool_calls=[{"name": "add", "args": {"a": 2, "b": 3}, "id": "call_1"}]),
        ToolMessage("5", tool_call_id="call_1"),
    ]
    payload = llm._get_request_payload(history)
    assistant = payload["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"][0]["function"]["name"] == "add"
    assert assistant["content"] == ""


def test_self_hosted_gets_max_tokens_openai_gets_max_completion_tokens(monkeypatch):
    hosted = chat_model(Settings(model="openai:m", base_url="http://127.0.0.1:9/v1", max_tokens=7))
    assert hosted._get_request_payload("hi")["max_tokens"] == 7
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    api = chat_model(Settings(model="openai:gpt-4o-mini", max_tokens=7))
    payload = api._get_request_payload("hi")
    assert payload["max_completion_tokens"] == 7 and "max_tokens" not in payload
