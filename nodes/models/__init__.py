"""Model set-up: settings, chat models and DSPy LMs by role, and the local llama.cpp models.

This is the package's public surface; the settings sources (``_settings``), the providers
(``_chat_models``), the local server and its loopback front (``_local_llm``, ``_model_proxy``,
``_tool_format``, ``_llama_child``) and the model files (``_local_models``, ``_model_file``)
are internals. ``python -m sopgraph.nodes.models`` installs and assembles the local model.

Example:
    >>> from sopgraph.nodes.models import Settings, chat_model
    >>> llm = chat_model(Settings(model="local:smollm2"), role="judge")
"""

from typing import Any

from sopgraph.nodes.models._local_llm import (
    LocalModelError,
    LocalModelServer,
    running_fronts,
    shared_server,
    tool_format,
)
from sopgraph.nodes.models._local_models import LocalModelUnavailable, ensure_installed, local_model
from sopgraph.nodes.models._model_file import (
    QWEN,
    ModelFile,
    ModelFileError,
    assemble,
    verified_path,
)
from sopgraph.nodes.models._settings import OLLAMA_BASE_URL, Settings
from sopgraph.nodes.models._settings_error import SettingsError
from sopgraph.nodes.models._tool_format import (
    DEFAULT_TOOL_FORMAT,
    THOUGHT_KEY,
    TOOL_FORMATS,
    ToolFormat,
)

__all__ = [
    "DEFAULT_TOOL_FORMAT", "OLLAMA_BASE_URL", "QWEN", "THOUGHT_KEY", "TOOL_FORMATS", "ChatOpenAICompatible",
    "LocalModelError", "LocalModelServer", "LocalModelUnavailable", "ModelFile", "ModelFileError",
    "Settings", "SettingsError", "ToolFormat", "assemble", "chat_model", "dspy_lm",
    "ensure_installed", "local_model", "running_fronts", "shared_server", "tool_format",
    "verified_path",
]  # fmt: skip

# The providers import DSPy and LangChain (seconds); the CLI reads settings and tool formats
# on every start, so these load on first use.
_PROVIDERS = ("ChatOpenAICompatible", "chat_model", "dspy_lm")


def __getattr__(name: str) -> Any:
    if name in _PROVIDERS:
        from sopgraph.nodes.models import _chat_models

        return getattr(_chat_models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
