"""The paper's three agent configurations as executor chains, selectable per run for ablations.

- ``direct``: the graph calls each node's compiled tool; a missing or failing tool falls back
  to the CodeAct sub-agent when a model is configured.
- ``subagent``: an LLM sub-agent calls the node's tool (``run_<node>``) and reports the verdict;
  CodeAct is the fallback.
- ``codeact``: no tools; the CodeAct sub-agent writes MCP code for every node.
- ``check``: ``direct`` with the Check fallback before CodeAct: a node without a working tool
  is decided by Checks sampled under its grammar (``tools/toolmaker/check_fallback.py``, built
  by the runtime: the executors may not import the tool-maker), CodeAct only where no Check
  fits.
- ``check-only``: no tools; a Check is sampled for every decision node (the same fallback),
  CodeAct only where no Check fits: what the Check fallback decides on its own.

Example:
    >>> models = load_models(Settings(model="local"))
    >>> [e.name for e in executors_for("subagent", models.chat, registry, lm=models.lm)]
    ['subagent', 'codeact']
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.language_models import BaseChatModel

from sopgraph.graphs.executors import Executor, ToolContext, Unavailable
from sopgraph.graphs.model import Node
from sopgraph.nodes.models import Settings, SettingsError
from sopgraph.nodes.sandbox import SandboxLimits
from sopgraph.nodes.tool_node import ToolExecutor
from sopgraph.tools.invocation_log import InvocationLog
from sopgraph.tools.registry import Registry

if TYPE_CHECKING:
    from sopgraph.prompts.verdict import VerdictExtractor

# Why a node no compiled tool decides stays open in the core install (sopgraph without [llm]).
NO_LLM_EXTRA = (
    "no model: deciding a node without a compiled tool needs the [llm] extra "
    "(pip install 'sopgraph[llm]') and SOPGRAPH_MODEL"
)

Architecture = Literal["direct", "subagent", "codeact", "check", "check-only"]
ARCHITECTURES: tuple[Architecture, ...] = ("direct", "subagent", "codeact", "check", "check-only")


class ArchitectureError(SettingsError):
    """An unknown architecture, or one that needs a model when none is configured."""


@dataclass
class Models:
    """The chat model and DSPy LM one setting names (both None when no model is configured)."""

    chat: BaseChatModel | None
    lm: Any
    name: str = ""


def load_models(settings: Settings | None = None) -> Models:
    """The models ``settings`` name (nothing is started: the local server starts on first use).

    Raises:
        SettingsError: an unknown provider or a missing credential.
    """
    settings = settings or Settings()
    name = settings.model.strip()
    if not name:
        return Models(None, None, "")
    from sopgraph.nodes.models import chat_model, dspy_lm

    return Models(chat_model(settings), dspy_lm(settings), name)


def executors_for(
    arch: str,
    model: BaseChatModel | None = None,
    registry: Registry | None = None,
    log: InvocationLog | None = None,
    *,
    lm: Any = None,
    extractor: VerdictExtractor | None = None,
    limits: SandboxLimits | None = None,
    max_turns: int | None = None,
    check: Executor | None = None,
) -> list[Executor]:
    """The executor chain of ``arch``, in the order the chain tries them; ``check`` is the
    Check fallback ``check`` and ``check-only`` put before CodeAct.

    Raises:
        ArchitectureError: ``arch`` is unknown, or needs a model and ``model`` is None.
    """
    if arch not in ARCHITECTURES:
        raise ArchitectureError(
            f"unknown architecture {arch!r}: use one of {', '.join(ARCHITECTURES)}"
        )
    if arch != "direct" and model is None:
        raise ArchitectureError(
            f"architecture {arch!r} needs a model: set SOPGRAPH_MODEL (`local` runs one here)"
        )
    if arch != "codeact" and registry is None:
        raise ValueError(f"architecture {arch!r} needs the SOP's tool registry")
    if arch in ("check", "check-only") and check is None:
        raise ValueError(f"architecture {arch!r} needs the Check fallback (the runtime builds it)")
    if model is None and lm is None and find_spec("dspy") is None:
        # the core install: only compiled tools decide; the model steps say what is missing
        return [ToolExecutor(registry, log), NeedsLlmExtra()]
    from sopgraph.nodes.codeact import DEFAULT_MAX_TURNS, CodeActExecutor
    from sopgraph.nodes.judge import JudgeExecutor
    from sopgraph.nodes.subagent import SubAgentToolExecutor
    from sopgraph.prompts.verdict import VerdictExtractor

    extractor = extractor or VerdictExtractor(lm=lm)
    from sopgraph.nodes.codeact_demos import LibraryDemos

    codeact = CodeActExecutor(
        model,
        extractor,
        limits or SandboxLimits(),
        DEFAULT_MAX_TURNS if max_turns is None else max_turns,
        # demonstrations: how the SOP's other verified tools read their data
        library=LibraryDemos(registry) if registry is not None else None,
    )
    # dialogue-state nodes (no API, no data hint) go to the judge before any MCP code is written
    judge = JudgeExecutor(lm=lm)
    if arch == "direct":
        # without a model the CodeAct step says so, which is the reason a missing tool stays open
        return [ToolExecutor(registry, log), judge, codeact]
    if arch == "check":
        return [ToolExecutor(registry, log), judge, check, codeact]  # type: ignore[list-item]
    if arch == "check-only":
        return [judge, check, codeact]  # type: ignore[list-item]
    if arch == "subagent":
        return [SubAgentToolExecutor(model, registry, log, extractor), judge, codeact]
    return [codeact]


class NeedsLlmExtra:
    """The judge's and CodeAct's place in the direct chain where DSPy is not installed."""

    name = "codeact"

    async def decide(self, node: Node, ctx: ToolContext) -> Any:
        raise Unavailable(NO_LLM_EXTRA)
