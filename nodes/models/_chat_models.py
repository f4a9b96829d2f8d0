"""One model setting, two clients: a LangChain chat model and a DSPy LM.

Bedrock goes through langchain-aws (``ChatBedrockConverse``) and LiteLLM's
``bedrock/converse/``; every other provider is an OpenAI-compatible endpoint.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

# LiteLLM and DSPy otherwise fetch a model price map from the internet on first use.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import dspy  # noqa: E402
from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_openai import ChatOpenAI

from sopgraph.nodes.models._settings import OLLAMA_BASE_URL, Settings
from sopgraph.prompts.envelope import Role, budget

LOCAL_CLIENT_TIMEOUT = 3600.0
"""The client's timeout for the local model: requests queue at its one server, and the
loopback front times each one out from when the model starts on it (``envelope``)."""


class ChatOpenAICompatible(ChatOpenAI):
    """``ChatOpenAI`` whose requests self-hosted OpenAI-compatible servers understand.

    - langchain-openai sends ``content: null`` on an assistant message that only
      calls tools; llama.cpp's server rejects it. ``""`` is accepted by all.
    - langchain-openai sends the reply budget as ``max_completion_tokens``, which
      llama.cpp's server ignores (it then generates until the context is full);
      with ``send_max_tokens`` it goes as ``max_tokens``, which every server reads.
    """

    send_max_tokens: bool = True
    budgets_by_role: bool = False
    """Set for the local model: each LLM step gets its role's output budget (``envelope``)."""

    def _get_request_payload(
        self,
        input_: LanguageModelInput,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> dict:
        payload = super()._get_request_payload(input_, stop=stop, **kwargs)
        if self.send_max_tokens and "max_completion_tokens" in payload:
            payload["max_tokens"] = payload.pop("max_completion_tokens")
        for message in payload.get("messages", ()):
            if message.get("role") == "assistant" and message.get("content") is None:
                message["content"] = ""
        return payload


@dataclass(frozen=True)
class Endpoint:
    """Where an OpenAI-compatible model answers."""

    model: str
    base_url: str | None
    api_key: str | None


def openai_endpoint(settings: Settings) -> Endpoint:
    """The endpoint for an ``openai``, ``ollama`` or ``local`` model.

    ``local`` and any model while ``SOPGRAPH_CASSETTE`` is set go through the process-wide
    loopback front (``_local_llm.shared_front``): it starts the local server
    only when a request first needs the model, records or replays the exchanges, and parses
    the local model's tool calls (``tool_format``); ``local`` with a ``base_url`` and
    llama-cpp-python's own ``chatml-function-calling`` format is reached directly. Nothing is
    started here.
    """
    from sopgraph.nodes.models._local_llm import shared_front
    from sopgraph.nodes.models._model_proxy import cassette_from_env

    provider, name = settings.provider, settings.model_name
    key = settings.resolved_api_key()
    if provider == "local":
        from sopgraph.nodes.models._local_llm import tool_format
        from sopgraph.nodes.models._local_models import local_model

        alias = local_model(name).alias
        direct = tool_format(settings) == "chatml-function-calling"
        if settings.base_url is not None and cassette_from_env() is None and direct:
            return Endpoint(alias, settings.base_url, key or "local")
        upstream = (lambda: settings.base_url) if settings.base_url else None
        return Endpoint(alias, shared_front(settings, upstream).base_url, key or "local")
    if provider == "ollama":
        endpoint = Endpoint(name, settings.base_url or OLLAMA_BASE_URL, key or "ollama")
    elif provider == "openai":
        # A self-hosted server usually ignores the key, but the client requires one.
        endpoint = Endpoint(
            name, settings.base_url, key or ("unused" if settings.base_url else None)
        )
    else:
        raise ValueError(f"{settings.model!r} is not an OpenAI-compatible model")
    if cassette_from_env() is not None and endpoint.base_url:
        real = endpoint.base_url
        front = shared_front(settings, lambda: real)
        return Endpoint(endpoint.model, front.base_url, endpoint.api_key)
    return endpoint


def _max_tokens(settings: Settings, role: Role) -> int | None:
    """``max_tokens`` if set, else the role's budget on the local model (none elsewhere)."""
    if settings.max_tokens is None and settings.provider == "local":
        return budget(role)
    return settings.max_tokens


def _timeout(settings: Settings) -> float:
    if settings.provider == "local" and "timeout" not in settings.model_fields_set:
        return LOCAL_CLIENT_TIMEOUT
    return settings.timeout


def chat_model(
    settings: Settings | None = None, *, role: Role = "default", **kwargs: Any
) -> BaseChatModel:
    """The LangChain chat model the settings name.

    Args:
        settings: defaults to ``Settings()`` (environment and config file).
        role: which LLM step it serves; sets the local model's output budget.
        **kwargs: passed to the chat model class, overriding the settings.

    Raises:
        SettingsError: no model, an unknown provider or a missing credential.

    Example:
        >>> llm = chat_model(Settings(model="ollama:llama3.2"))
        >>> llm.openai_api_base
        'http://127.0.0.1:11434/v1'
    """
    settings = settings or Settings()
    settings.check_model()
    common: dict[str, Any] = {
        "temperature": settings.temperature,
        "max_tokens": _max_tokens(settings, role),
    }
    if settings.provider == "bedrock":
        options = {
            "region_name": settings.resolved_aws_region(),
            "credentials_profile_name": settings.aws_profile,
            **common,
            **kwargs,
        }
        return init_chat_model(
            settings.model_name,
            model_provider="bedrock_converse",
            **{k: v for k, v in options.items() if v is not None},
        )
    endpoint = openai_endpoint(settings)
    return ChatOpenAICompatible(
        model=endpoint.model,
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        timeout=_timeout(settings),
        # api.openai.com's reasoning models refuse `max_tokens`; self-hosted servers need it.
        send_max_tokens=endpoint.base_url is not None,
        budgets_by_role=settings.provider == "local" and settings.max_tokens is None,
        **{**common, **kwargs},
    )


def dspy_lm(settings: Settings | None = None, *, role: Role = "default", **kwargs: Any) -> dspy.LM:
    """The DSPy LM for the same model as ``chat_model``, served through LiteLLM.

    Args:
        settings: defaults to ``Settings()`` (environment and config file).
        role: which LLM step it serves; sets the local model's output budget.
        **kwargs: passed to ``dspy.LM``, e.g. ``cache=False``.

    Raises:
        SettingsError: no model, an unknown provider or a missing credential.

    Example:
        >>> lm = dspy_lm(Settings(model="openai:qwen", base_url="http://127.0.0.1:8000/v1"))
        >>> lm.model
        'openai/qwen'
    """
    settings = settings or Settings()
    settings.check_model()
    options: dict[str, Any] = {
        "temperature": settings.temperature,
        "max_tokens": _max_tokens(settings, role),
        "timeout": _timeout(settings),
    }
    if settings.provider == "bedrock":
        model = f"bedrock/converse/{settings.model_name}"
        options["aws_region_name"] = settings.resolved_aws_region()
        options["aws_profile_name"] = settings.aws_profile
    else:
        endpoint = openai_endpoint(settings)
        model = f"openai/{endpoint.model}"
        options["api_base"] = endpoint.base_url
        options["api_key"] = endpoint.api_key
    options = {k: v for k, v in options.items() if v is not None}
    if settings.provider == "local":
        # measured, replayed or recorded: every call must reach the front (DSPy's disk cache
        # would answer a repeated call from an earlier run, and no cassette would see it)
        options["cache"] = False
    lm = dspy.LM(model, **{"engine": "litellm", **options, **kwargs})
    lm.budgets_by_role = settings.provider == "local" and settings.max_tokens is None
    return lm
