"""The optional extras (pyproject.toml): which one a missing module comes from, and the one line
that tells the user to install it instead of a traceback."""

from __future__ import annotations

# Top-level modules (or dotted prefixes) that only an extra installs, and that extra.
EXTRA_OF = {
    "dspy": "llm",
    "litellm": "llm",
    "langchain": "llm",
    "langchain_aws": "llm",
    "langchain_openai": "llm",
    "openai": "llm",
    "opentelemetry.exporter": "otlp",
    "langgraph_api": "server",
    "langgraph_cli": "server",
    "langgraph_sdk": "server",
    "langgraph.checkpoint.postgres": "postgres",
    "psycopg": "postgres",
    "psycopg_pool": "postgres",
    "duckdb": "bench",
    "numpy": "bench",
    "pandas": "bench",
    "pypdf": "draft",
    "docx": "draft",
    "procrastinate": "queue",
    "pytest": "dev",
}

WHAT = {
    "llm": "models (CodeAct, the judge and router, the tool-maker)",
    "otlp": "OTLP trace export",
    "server": "the LangGraph server",
    "postgres": "the PostgreSQL checkpointer",
    "bench": "the benchmark worlds and their data servers",
    "draft": "reading PDF and Word documents",
    "queue": "the job queue",
    "dev": "the test tools",
}


def extra_for(module: str | None) -> str | None:
    """The extra that installs ``module`` (a dotted name), or None for any other module."""
    for prefix, extra in EXTRA_OF.items():
        if module is not None and (module == prefix or module.startswith(prefix + ".")):
            return extra
    return None


def missing_extra(exc: BaseException, command: str = "this command") -> str | None:
    """The one ``error:`` line for an import of a module an extra that is not installed holds
    (``exc`` or what it was raised from), else None.

    Example:
        >>> missing_extra(ModuleNotFoundError("No module named 'dspy'", name="dspy"), "sopgraph run")
        "error: sopgraph run needs models (CodeAct, the judge and router, the tool-maker) from the [llm] extra, which is not installed (no module dspy): pip install 'sopgraph[llm]'"
    """
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ModuleNotFoundError) and (extra := extra_for(cause.name)):
            return (
                f"error: {command} needs {WHAT[extra]} from the [{extra}] extra, which is not "
                f"installed (no module {cause.name}): pip install 'sopgraph[{extra}]'"
            )
        cause = cause.__cause__ or cause.__context__
    return None
