"""The tool registry's errors: each a problem the user can fix, its ``str()`` one line."""


class RegistryError(Exception):
    """A registry problem the user can fix; ``str()`` is one line (what, where, how to fix)."""


class ToolMissing(RegistryError):
    """The node has no usable tool: no manifest entry, no active version, or no file."""


class ToolLoadError(ToolMissing):
    """The tool file exists and is intact but cannot be used: it fails to import or breaks the
    contract (``tools/contract.py``: ``async def run(input, ctx)``)."""


class ToolIntegrityError(RegistryError):
    """A tool file's sha256 differs from the manifest (edited after it was registered)."""
