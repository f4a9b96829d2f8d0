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

from sopgraph.nodes.settings import OLLAMA_BASE_URL, Settings

LOCAL_MAX_TOKENS = 512
"""Default reply budget for the local model: its context is small (``local_n_ctx``)."""


class ChatOpenAICompatible(ChatOpenAI):
    """``ChatOpenAI`` whose requests self-hosted OpenAI-compatible servers understand.

    - langchain-openai sends ``content: null`` on an assistant message that only
      calls tools; llama.cpp's server rejects it. ``""`` is accepted by all.
    - langchain-openai sends the reply budget as ``max_completion_tokens``, which
      llama.cpp's server ignores (it then generates until the context is full);
      with ``send_max_tokens`` it goes as ``max_tokens``, which every server reads.
    """

    send_max_tokens: bool = True

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

    For ``local`` without a ``base_url`` this starts the process-wide local
    server (see ``sopgraph.nodes.local_llm.shared_server``).
    """
    provider, name = settings.provider, settings.model_name
    key = settings.resolved_api_key()
    if provider == "local":
        base_url = settings.base_url
        if base_url is None:
            from sopgraph.nodes.local_llm import shared_server

            base_url = shared_server(settings).base_url
        return Endpoint(name, base_url, key or "local")
    if provider == "ollama":
        return Endpoint(name, settings.base_url or OLLAMA_BASE_URL, key or "ollama")
    if provider == "openai":
        # A self-hosted server usually ignores the key, but the client requires one.
        return Endpoint(name, settings.base_url, key or ("unused" if settings.base_url else None))
    raise ValueError(f"{settings.model!r} is not an OpenAI-compatible model")


def _max_tokens(settings: Settings) -> int | None:
    if settings.max_tokens is None and settings.provider == "local":
        return LOCAL_MAX_TOKENS
    return settings.max_tokens


def chat_model(settings: Settings | None = None, **kwargs: Any) -> BaseChatModel:
    """The LangChain chat model the settings name.

    Args:
        settings: defaults to ``Settings()`` (environment and config file).
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
        "max_tokens": _max_tokens(settings),
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
        timeout=settings.timeout,
        # api.openai.com's reasoning models refuse `max_tokens`; self-hosted servers need it.
        send_max_tokens=endpoint.base_url is not None,
        **{**common, **kwargs},
    )


def dspy_lm(settings: Settings | None = None, **kwargs: Any) -> dspy.LM:
    """The DSPy LM for the same model as ``chat_model``, served through LiteLLM.

    Args:
        settings: defaults to ``Settings()`` (environment and config file).
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
        "max_tokens": _max_tokens(settings),
        "timeout": settings.timeout,
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
    return dspy.LM(model, **{"engine": "litellm", **options, **kwargs})
