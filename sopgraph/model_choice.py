"""Which model a command runs on: the configured one (SOPGRAPH_MODEL), or one error line."""

from __future__ import annotations

from typing import Any

from sopgraph.errors import UserError

ARCH_HELP = "direct: compiled tools (default); subagent or codeact: needs SOPGRAPH_MODEL"


def models_for(arch: str) -> Any:
    """The configured models (SOPGRAPH_MODEL); only ``--arch direct`` runs without one."""
    from sopgraph.nodes.architectures import load_models

    models = load_models()
    if arch != "direct" and models.chat is None:
        raise UserError(f"--arch {arch} needs a model: set SOPGRAPH_MODEL (`local` runs one here)")
    return models


def model_required() -> Any:
    """The configured models, for a command that measures the model itself."""
    from sopgraph.nodes.architectures import load_models

    models = load_models()
    if models.chat is None:
        raise UserError("this command measures a model: set SOPGRAPH_MODEL (e.g. `local`)")
    return models
