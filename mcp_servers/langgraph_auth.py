"""Who is calling the LangGraph server: the MCP server's bearer tokens, and what each may touch.

``langgraph.json`` names ``auth`` here (``"auth": {"path":
"sopgraph.mcp_servers.langgraph_auth:auth", "disable_studio_auth": true}``), so the LangGraph
server (``langgraph dev``, or the platform image) checks every API request as ``sopgraph mcp
serve --transport http`` does: ``Authorization: Bearer <token>`` with a token of the operator's
tokens file, named by ``SOPGRAPH_MCP_TOKENS`` (format and checks: ``server_auth.py``, the same
code). A missing, malformed or unknown token is answered 401. The token's identity is the
server's user: the run's ``configurable.langgraph_auth_user_id``, which the compiler records as
the approver of the gated actions that user's runs decide or resume.

Fail closed: without a usable tokens file the server does not start (the error names the
variable), as the HTTP MCP server refuses to. The file is read once, at start.

What each identity may touch: a thread (and its runs, state and history) is its creator's, by
an ``owner`` in its metadata that no client can set; another identity neither lists, reads,
runs on nor resumes it (the server answers 404). An assistant anyone may read and run, only its
creator may change or delete. The store's namespaces are kept under the caller's identity (``store_label``).
Crons, and anything the server adds later, are refused (403). ``disable_studio_auth`` turns
off the development server's bypass that lets a request saying ``x-auth-scheme: langsmith``
in as the Studio user.

Gated actions follow the operator's policy, not the client's: ``$SOPGRAPH_APPROVAL`` (as
``sopgraph mcp serve --approval``) is ``ask`` (the default: each gated action pauses for an
answer), ``approve`` or ``reject`` (decides all), or ``client`` (a run's
``configurable.approval`` decides, as before). Unless it is ``client``, every run created is
given the operator's policy over whatever its configuration or context says.

Example:
    $ SOPGRAPH_MCP_TOKENS=tokens langgraph dev --no-browser --allow-blocking
    >>> client = get_client(url="http://127.0.0.1:2024",
    ...                     headers={"Authorization": f"Bearer {token}"})
"""

from __future__ import annotations

import logging
import os
from functools import cache
from typing import Any

from langgraph_sdk import Auth

from sopgraph.mcp_servers.server_auth import TOKENS_ENV, TokenError, TokenTable, load_tokens

log = logging.getLogger(__name__)
APPROVAL_ENV = "SOPGRAPH_APPROVAL"
POLICIES = ("ask", "approve", "reject", "client")
OWNER = "owner"  # the metadata key naming a thread's (or an assistant's) creator
UNAUTHORIZED = (
    "this LangGraph server needs 'Authorization: Bearer <token>' with a token of its operator's "
    f"tokens file (${TOKENS_ENV})"
)


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` value, else None."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def store_label(identity: str) -> str:
    """The first label of ``identity``'s store namespaces: a label holds no ``.``, and an
    identity holds no ``%``, so ``%2E`` for ``.`` keeps identities apart."""
    return identity.replace(".", "%2E")


def pin_approval(run: dict[str, Any], policy: str) -> None:
    """Give the run being created (a ``RunsCreate``'s ``kwargs``) the operator's ``policy``
    for gated actions, over its configuration's and its context's; ``client`` leaves them."""
    if policy == "client":
        return
    config = run.setdefault("config", {})
    config.setdefault("configurable", {})["approval"] = policy
    if isinstance(run.get("context"), dict):
        run["context"]["approval"] = policy


def approval_policy() -> str:
    """The operator's ``$SOPGRAPH_APPROVAL`` (default ``ask``); raises ``ValueError`` on another."""
    policy = os.environ.get(APPROVAL_ENV, "ask").strip() or "ask"
    if policy not in POLICIES:
        raise ValueError(
            f"{APPROVAL_ENV}={policy!r}: not a policy for gated actions; use one of "
            f"{', '.join(POLICIES)} (ask, the default, pauses each for an answer)"
        )
    return policy


def langgraph_auth(tokens: TokenTable, approval: str = "ask") -> Auth:
    """The LangGraph server's ``Auth``: ``tokens`` authenticate, identities own their threads,
    runs follow the operator's ``approval`` policy (``client``: the run's own)."""
    auth = Auth()

    @auth.authenticate
    async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
        identity = tokens.identity(bearer_token(authorization) or "")
        if identity is None:
            raise Auth.exceptions.HTTPException(status_code=401, detail=UNAUTHORIZED)
        return {"identity": identity, "permissions": []}

    @auth.on
    async def refuse_the_rest(ctx: Auth.types.AuthContext, value: Any) -> None:
        raise Auth.exceptions.HTTPException(
            status_code=403, detail=f"{ctx.resource}.{ctx.action} is not served here"
        )

    @auth.on.threads
    async def own_threads(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
        return _owned(ctx, value)

    @auth.on.threads.create_run
    async def own_run(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
        kwargs = value.get("kwargs")
        if isinstance(kwargs, dict):
            pin_approval(kwargs, approval)
        return _owned(ctx, value)

    @auth.on.assistants.create
    async def own_new_assistant(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
        return _owned(ctx, value)

    @auth.on(resources=["assistants"], actions=["update", "delete"])
    async def change_own_assistant(
        ctx: Auth.types.AuthContext, value: Any
    ) -> Auth.types.FilterType:
        return _owned(ctx, value)

    @auth.on(resources=["assistants"], actions=["read", "search"])
    async def read_assistants(ctx: Auth.types.AuthContext, value: Any) -> None:
        return None  # the served graphs' own assistants have no owner; anyone may run them

    @auth.on.store
    async def own_namespace(ctx: Auth.types.AuthContext, value: Any) -> None:
        own = store_label(ctx.user.identity)
        namespace = tuple(value.get("namespace") or ())
        if namespace[:1] != (own,):
            value["namespace"] = (own, *namespace)

    return auth


def _owned(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    """Mark what ``ctx``'s user creates or changes as theirs; match only what is theirs."""
    metadata = value.get("metadata")
    if isinstance(metadata, dict):
        metadata[OWNER] = ctx.user.identity  # a client never names another owner
    elif ctx.action in ("create", "create_run"):
        value["metadata"] = {OWNER: ctx.user.identity}
    return {OWNER: ctx.user.identity}


@cache
def served_auth() -> Auth:
    """The server's ``Auth`` over ``$SOPGRAPH_MCP_TOKENS``; raises ``TokenError`` without it."""
    path = os.environ.get(TOKENS_ENV)
    if not path:  # the server would otherwise run open: it refuses to start, saying why
        raise TokenError(
            f"the LangGraph server (langgraph.json's auth) needs bearer tokens: set {TOKENS_ENV}="
            "FILE, a file of '<identity> <token>' lines as for `sopgraph mcp serve --tokens`"
        )
    policy = approval_policy()
    tokens = load_tokens(path)
    for warning in tokens.warnings:
        log.warning("%s", warning)
    return langgraph_auth(tokens, policy)


def __getattr__(name: str) -> Any:
    # ``auth`` is read when the server loads it, so importing this module needs no tokens.
    if name == "auth":
        return served_auth()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
