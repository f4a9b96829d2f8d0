"""sopgraph: compile written SOPs into LangGraph state machines; this package is the CLI shell."""

import os as _os
from importlib.metadata import PackageNotFoundError, version

# LiteLLM (under DSPy) fetches a model price list from the internet on first use; use its copy.
_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

try:
    __version__ = version("sopgraph")
except PackageNotFoundError:  # imported from a checkout that was never installed
    __version__ = "0+unknown"
