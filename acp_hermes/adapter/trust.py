"""Workspace trust on the wire, for a client with a trust dialog of its own (mistral-vibe's shape).

A client that advertises ``clientCapabilities._meta["workspace-trust"]`` shows its own dialog: it reads
``_meta.workspace_trust`` (``{status, details}``) on the answers of ``session/new``, ``load``,
``resume`` and ``fork``, asks ``_trust/status`` (``{cwd?, sessionId?}``) when it likes, and tells the
user's choice with ``_trust/decision`` (``{cwd?, sessionId?, decision}``); acp-hermes then asks no
trust question of its own (``core.trust``). Both methods answer ``{trust_status, details}``:
``trust_status`` is ``trusted``, ``session`` (trusted for a session only) or ``untrusted`` (also while
undecided); ``details`` — ``{cwd, repoRoot, ignoredFiles, availableDecisions}`` — only for an untrusted
workspace that carries something. Decisions: ``trust_repo`` (a workspace below its repository's root)
or ``trust_cwd`` (the workspace is the root, or outside git) trust the repository and are remembered,
``trust_session`` trusts it for the session named, ``decline`` is remembered. A remembered decision
applies at once to every open session of that repository. Documented in ``docs/trust.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from acp_hermes.core.errors import InvalidInput

if TYPE_CHECKING:
    from acp_hermes.core.runtime import Runtime
    from acp_hermes.core.session import Session
    from acp_hermes.core.sessions import SessionManager
    from acp_hermes.core.trust import Decision, TrustStatus, WorkspaceTrust

CAPABILITY = "workspace-trust"  # the key of clientCapabilities._meta a client sets to show its own dialog
META_KEY = "workspace_trust"
STATUS_METHOD = "trust/status"  # as the router hands them over: without the leading "_"
DECISION_METHOD = "trust/decision"
_DECISIONS: dict[str, Decision] = {"trust_repo": "always", "trust_cwd": "always", "trust_session": "session",
                                   "decline": "never"}


def advertised(capabilities: dict[str, Any]) -> bool:
    """Whether a client's capabilities (as sent) advertise a trust dialog of its own."""
    meta = capabilities.get("_meta")
    found = meta.get(CAPABILITY) if isinstance(meta, dict) else None
    return found is True or isinstance(found, dict)


def answer(status: TrustStatus) -> dict[str, Any]:
    """The ``{trust_status, details}`` answer for ``status``."""
    from acp_hermes.core.trust import THIS_SESSION

    if status.standing == "trusted":
        return {"trust_status": "session" if status.source == THIS_SESSION else "trusted", "details": None}
    gated = status.gated
    details = None
    if gated is not None and not gated.empty:
        details = {"cwd": str(status.workspace), "repoRoot": str(status.repository.root) if status.repository.git
                   else None, "ignoredFiles": gated.files(), "availableDecisions": decisions(status)}
    return {"trust_status": "untrusted", "details": details}


def meta(status: TrustStatus) -> dict[str, Any]:
    """What a session's answer carries in its ``_meta``."""
    found = answer(status)
    return {META_KEY: {"status": found["trust_status"], "details": found["details"]}}


def decisions(status: TrustStatus) -> list[str]:
    """What the user may decide here: the home folder is never trusted for more than a session."""
    if status.repository.home:
        return ["trust_session", "decline"]
    whole = "trust_repo" if status.repository.git and status.repository.root != status.workspace else "trust_cwd"
    return [whole, "trust_session", "decline"]


async def status_of(runtime: Runtime, trust: WorkspaceTrust | None, cwd: Path) -> TrustStatus:
    """The standing of a session's workspace (``trust``), or of ``cwd`` as a new session would find it."""
    from acp_hermes.core import trust as core

    def read() -> TrustStatus:
        return core.status_of(trust if trust is not None else core.open_trust(runtime, cwd))

    return await anyio.to_thread.run_sync(read)


async def session_meta(runtime: Runtime, trust: WorkspaceTrust | None, cwd: Path) -> dict[str, Any]:
    return meta(await status_of(runtime, trust, cwd))


async def status(runtime: Runtime, manager: SessionManager, params: dict[str, Any]) -> dict[str, Any]:
    """``_trust/status``: the standing of a session's workspace, or of a folder."""
    session, cwd = await _target(manager, params)
    return answer(await status_of(runtime, session.services.trust if session is not None else None, cwd))


async def decision(runtime: Runtime, manager: SessionManager, params: dict[str, Any],
                   announce: Any) -> dict[str, Any]:
    """``_trust/decision``: carry out the user's decision; a remembered one applies to every open
    session of the repository at once (``announce(session)`` then tells the client what changed)."""
    from acp_hermes.core import trust as core

    chosen = params.get("decision")
    if not isinstance(chosen, str) or chosen not in _DECISIONS:
        raise InvalidInput(f"decision must be one of {', '.join(_DECISIONS)}, got {chosen!r}")
    session, cwd = await _target(manager, params)
    found = await status_of(runtime, session.services.trust if session is not None else None, cwd)
    offered = decisions(found)
    if chosen not in offered:
        raise InvalidInput(f"the decision {chosen!r} is not offered here; choose one of {', '.join(offered)}")
    what = _DECISIONS[chosen]
    if what == "session" and session is None:
        raise InvalidInput("trust_session needs the sessionId of the session to trust")
    approve = found.gated.mcp_servers if found.gated is not None else ()
    if what == "session" and session is not None:
        await core.decide(session, what, approve=approve)
        await announce(session)
    else:
        live = _sessions_of(manager, found.repository.root)
        if not live:  # remembered for the sessions to come
            trust = await anyio.to_thread.run_sync(core.open_trust, runtime, cwd)
            await anyio.to_thread.run_sync(core.record, trust, what, approve)
        for each in live:
            await core.decide(each, what, approve=approve)
            await announce(each)
    after = session.services.trust if session is not None else None
    return answer(await status_of(runtime, after, cwd))


def _sessions_of(manager: SessionManager, root: Path) -> list[Session]:
    return [session for session in manager.live()
            if session.subagent is None and session.services.trust.repository.root == root]


async def _target(manager: SessionManager, params: dict[str, Any]) -> tuple[Session | None, Path]:
    """The session named (``sessionId`` or ``session_id``) and its workspace, or the folder ``cwd``."""
    from acp_hermes.adapter.handshake import workspace

    session_id = params.get("sessionId", params.get("session_id"))
    cwd = params.get("cwd")
    if session_id is not None:
        if not isinstance(session_id, str):
            raise InvalidInput("sessionId must be a string")
        session = await manager.get_for_client(session_id, "its workspace is its parent's; ask about that")
        if cwd is not None and (not isinstance(cwd, str) or Path(cwd).resolve() != session.state.cwd):
            raise InvalidInput(f"cwd {cwd!r} is not the workspace of session {session_id} ({session.state.cwd})")
        return session, session.state.cwd
    if not isinstance(cwd, str):
        raise InvalidInput("give the cwd of the workspace (an absolute path) or a sessionId")
    root, _ = workspace(cwd, None)
    return None, root
