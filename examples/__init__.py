"""The SOPs that ship with sopgraph, each with its site parameters, MCP servers and tool library.

Installed as package data under ``sopgraph.examples``; ``EXAMPLES`` is their folder.
"""

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent
