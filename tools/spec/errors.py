"""The one error a spec raises: ``str()`` names the field (``measures.idle.reduce``) and why."""

from __future__ import annotations


class SpecError(ValueError):
    """A spec that cannot run; ``str()`` names the field (``measures.idle.reduce``) and why."""
