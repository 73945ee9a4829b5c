"""The ``session_search`` tool: recall past sessions from the shared SessionDB.

The pipeline lives in ``memory.recall``; this module declares the tool, reads its arguments
the way Hermes does (``role_filter`` is a comma-separated string) and plugs in the summarizer:
one short call per session to the session's auxiliary model (``services.auxiliary``), which
charges its cost to the session. A subagent session found is marked ``(subagent of <parent>)``
after its title (by ``memory.recall``), so the model can tell a delegated task from a conversation
with the user.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp_hermes_memory.frames import framed
from acp_hermes_memory.recall import (
    ALL_ROLES,
    DEFAULT_PARALLEL,
    DEFAULT_ROLES,
    DEFAULT_TIMEOUT,
    MAX_RECENT,
    MAX_SESSIONS,
    SORT_ORDERS,
    RecallResult,
    Summarizer,
    SummaryRequest,
    recall,
)
from acp_hermes_memory.text import one_line
from acp_hermes_tools.context import ToolContext, ToolScope
from acp_hermes_tools.contracts import AuxiliaryModel
from acp_hermes_tools.registry import Access, Guidance, Presentation, Tool, ToolError, ToolResult

if TYPE_CHECKING:
    pass

SUMMARY_MAX_TOKENS = 500
_TITLE_QUERY_CHARS = 60

DESCRIPTION = f"""\
Search your past sessions with this user (every earlier conversation in any project, kept in \
a local database) and get a short recap of each matching session written for your query.

Use it when the user refers to earlier work ("like last time", "what did we decide about X", \
"the bug we fixed yesterday") or when a past conversation probably solved the problem at hand, \
before asking the user to repeat themselves. The current session is never searched; sessions \
of subagents (delegated tasks) are, marked "(subagent of <session>)".

- No query: lists the most recent sessions (title, date, folder, size); costs nothing.
- With a query: keyword search (not semantic), best matches first. Words are ANDed; use OR for \
alternatives (`deploy OR release`), "double quotes" for a phrase, `prefix*` for word starts. \
Use words that were likely written in that conversation.
- limit: sessions to recap (default 3, at most {MAX_SESSIONS}; up to {MAX_RECENT} when listing).
- role_filter: comma-separated roles whose messages may match: {", ".join(ALL_ROLES)}; default \
"{",".join(DEFAULT_ROLES)}" (tool output is mostly noise).
- sort: relevance (default), newest (where did we leave X) or oldest (how did X start).\
"""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "Keywords, phrases or boolean expressions to find. Omit to list recent sessions.",
        },
        "limit": {
            "type": "integer",
            "description": f"How many sessions (default 3, at most {MAX_SESSIONS}).",
            "default": 3,
        },
        "role_filter": {
            "type": "string",
            "description": 'Comma-separated roles whose messages may match, e.g. "user" or "user,assistant,tool".',
        },
        "sort": {
            "type": "string",
            "enum": list(SORT_ORDERS),
            "description": "relevance (default), newest or oldest first.",
        },
    },
    "additionalProperties": False,
}

SUMMARY_SYSTEM = (
    "You recall past conversations between a developer and a coding agent. Given a search topic and an "
    "excerpt of one past session, write a factual recap focused on the topic: what was asked, what was "
    "done and decided, the outcome, and exact details worth reusing (commands, file paths, names, errors). "
    "Past tense, at most 150 words, no preamble. If the excerpt does not cover the topic, say so in one line."
)


def summary_prompt(request: SummaryRequest) -> str:
    """The user message for one session's recap: topic, session label, then the conversation."""
    title = request.title or "untitled"
    conversation = framed("conversation", request.conversation)
    return f"Search topic: {request.query}\nSession: {title}\n\n{conversation}"


def auxiliary_summarizer(model: AuxiliaryModel) -> Summarizer:
    """A summarizer that asks the auxiliary model for each session's recap."""

    async def summarize(request: SummaryRequest) -> str:
        prompt = summary_prompt(request)
        return await model.complete(system=SUMMARY_SYSTEM, prompt=prompt, max_tokens=SUMMARY_MAX_TOKENS)

    return summarize


def search_title(query: object) -> str:
    """``Search past sessions: "<query>"`` or ``Recent sessions`` for an empty query."""
    text = one_line(query, _TITLE_QUERY_CHARS) if isinstance(query, str) else ""
    return f'Search past sessions: "{text}"' if text else "Recent sessions"


def parse_roles(role_filter: object) -> tuple[str, ...]:
    """Hermes's comma-separated ``role_filter``; absent or blank means the default roles."""
    if role_filter is None or (isinstance(role_filter, str) and not role_filter.strip()):
        return DEFAULT_ROLES
    if not isinstance(role_filter, str):
        raise ToolError('role_filter must be a comma-separated string such as "user,assistant".')
    return tuple(part for part in role_filter.split(",") if part.strip())


def _present(args: dict[str, Any], scope: ToolScope) -> Presentation:
    return Presentation(search_title(args.get("query")))


async def _run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    db = ctx.services.sessions
    if db is None:
        raise ToolError("the session history is not available in this session.")
    query = args.get("query") or ""
    auxiliary = ctx.services.auxiliary
    try:
        result = await recall(
            db,
            query,
            current_session=ctx.session_id,
            limit=args.get("limit"),
            role_filter=parse_roles(args.get("role_filter")),
            sort=args.get("sort") or "relevance",
            summarize=None if auxiliary is None else auxiliary_summarizer(auxiliary),
            timeout=DEFAULT_TIMEOUT,
            max_parallel=DEFAULT_PARALLEL,
        )
    except ValueError as error:  # an unknown role
        raise ToolError(str(error)) from error
    return ToolResult(result.text(), raw_output=_raw_output(result))


def _raw_output(result: RecallResult) -> dict[str, Any]:
    return {
        "query": result.query,
        "sessions": [
            {"sessionId": s.session_id, "title": s.title, "summarized": s.summary is not None}
            for s in result.sessions
        ],
    }


SESSION_SEARCH_TOOL = Tool(
    name="session_search",
    description=DESCRIPTION,
    schema=SCHEMA,
    handler=_run,
    kind="search",
    access=Access.READ,
    parallel_safe=True,
    present=_present,
    guidance=Guidance(90, section=(
        "# Past sessions\n"
        "When the user refers to earlier work or a past conversation, look it up with "
        "`session_search` before asking them to repeat themselves."
    )),
    toolsets=("session_search",),
)
