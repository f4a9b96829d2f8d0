"""sopgraph: compile written SOPs into LangGraph state machines; this package is the CLI shell."""

import os as _os

# LiteLLM (under DSPy) fetches a model price list from the internet on first use; use its copy.
_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
