"""The web tools the model API runs itself: ``web_search`` and ``web_fetch`` (Anthropic server tools).

Nothing here fetches anything: the API searches and fetches during the model's message and streams
the calls and their results as content blocks (``model.messages.ServerToolUse``, ``ServerToolResult``).
The session offers them as ``web:`` in the config says (search on, fetch off), the loop shows each as a
tool call of kind ``search`` or ``fetch``, and the blocks go back into history exactly as they came
(the API needs its encrypted results back unchanged). An endpoint that refuses them (an
Anthropic-compatible API without server tools) turns them off for the session, once, with a notice,
and the request goes again without them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from acp_hermes.config import WebSettings
from acp_hermes.model.messages import FetchedPage, ServerToolResult
from acp_hermes_memory.text import markdown_line, one_line
from acp_hermes_memory.values import value
from acp_hermes_tools.contracts import ToolKind

# The tool versions of the installed SDK's Messages API (anthropic 2.14: ``WebSearchTool20260318Param``,
# ``WebFetchTool20260318Param``).
SEARCH_TOOL = "web_search_20260318"
FETCH_TOOL = "web_fetch_20260318"
_KINDS: dict[str, ToolKind] = {"web_search": "search", "web_fetch": "fetch"}
_PLAIN_URL = re.compile(r"https?://[^\s<>\\`\x00-\x1f\x7f]{1,2000}", re.ASCII)


class WebTools:
    """The server tools one session offers, until its endpoint refuses them."""

    def __init__(self, settings: Callable[[], WebSettings]) -> None:
        self._settings = settings
        self.refused = False

    def definitions(self) -> list[dict[str, Any]]:
        """The request's server tool entries (none once refused)."""
        web = self._settings()
        if self.refused or not (web.search or web.fetch):
            return []
        domains: dict[str, Any] = {}
        if web.allowed_domains:
            domains["allowed_domains"] = list(web.allowed_domains)
        elif web.blocked_domains:
            domains["blocked_domains"] = list(web.blocked_domains)
        tools = []
        if web.search:
            tools.append({"type": SEARCH_TOOL, "name": "web_search", "max_uses": web.max_uses, **domains})
        if web.fetch:
            tools.append({"type": FETCH_TOOL, "name": "web_fetch", "max_uses": web.max_uses, **domains})
        return tools

    def refuse(self) -> bool:
        """The endpoint refused them: off for this session. True the first time (say so then)."""
        first, self.refused = not self.refused, True
        return first


REFUSED_NOTICE = ("⚠️ The model API refused the web tools (it may be an Anthropic-compatible endpoint without "
                  "server tools): web search and fetch are off for this session, and the request was sent again "
                  "without them. Set `web.search: false` in config.yaml to stop offering them.")


@value
class WebCall:
    """How a server tool call is shown: title, kind, and once done, its outcome."""

    title: str
    kind: ToolKind


def presented(name: str, arguments: dict[str, Any]) -> WebCall:
    """The call as the editor shows it: what was searched for, or which page was fetched."""
    if name == "web_search":
        return WebCall(f"Search the web: {one_line(str(arguments.get('query') or ''), 120)}", "search")
    if name == "web_fetch":
        return WebCall(f"Fetch {one_line(str(arguments.get('url') or ''), 200)}", "fetch")
    return WebCall(f"{name} (run by the model API)", _KINDS.get(name, "other"))


@value
class WebOutcome:
    """A server tool's result as shown: whether it worked, the text (titles and links), the raw output,
    and the scanner's findings in what the model read (titles, a fetched page's text)."""

    ok: bool
    text: str
    raw_output: dict[str, Any]
    threats: tuple[str, ...] = ()


def outcome(block: ServerToolResult) -> WebOutcome:
    """What a web search or web fetch result found (blocking: it scans a fetched page, so call it on a
    worker thread).

    The blocks go back to the API exactly as they came, so the model reads them as they are: a title or
    page carrying injection patterns is flagged here, on the card, and the loop warns the model."""
    if block.error_code is not None:
        return WebOutcome(False, f"The model API's {_tool_of(block)} failed: {block.error_code}.",
                          {"error_code": block.error_code})
    if block.tool == "web_search":
        found = [{"title": hit.title, "url": hit.url} for hit in block.hits]
        lines = [f"- {markdown_line(item['title'], 120)} — {_link(item['url'])}" for item in found]
        threats = _threats("\n".join(f"{item['title']}\n{item['url']}" for item in found))
        return _flagged(WebOutcome(True, "\n".join(lines) or "No results.", {"results": found}, threats))
    page = block.page or FetchedPage("", "", None)
    threats = _threats(f"{page.title}\n{page.url}\n{page.text or ''}")
    shown = f"Fetched {markdown_line(page.title, 160)} — {_link(page.url)}"
    return _flagged(WebOutcome(True, shown, {"url": page.url, "title": one_line(page.title, 160)}, threats))


def _link(url: str) -> str:
    """A web address as one Markdown line: a link when it is a plain http(s) one, else literal text."""
    return f"<{url}>" if _PLAIN_URL.fullmatch(url) else markdown_line(url, 300)


def _threats(text: str) -> tuple[str, ...]:
    from acp_hermes_memory.scan import scan

    return tuple(finding.pattern_id for finding in scan(text, "context"))


def _flagged(found: WebOutcome) -> WebOutcome:
    if not found.threats:
        return found
    said = (f"⚠️ This contains text that looks like instructions to the agent ({', '.join(found.threats)}); "
            "the agent was told to treat it as data.")
    return WebOutcome(found.ok, f"{said}\n\n{found.text}", found.raw_output, found.threats)


def model_warning(call_name: str, call_title: str, threats: tuple[str, ...]) -> str:
    """What the model is told of a flagged result, with the next tool result or prompt."""
    from acp_hermes_memory.scan import injection_warning

    return injection_warning(f"{call_name} result ({call_title})", list(threats))


def _tool_of(block: ServerToolResult) -> str:
    return "web fetch" if block.tool == "web_fetch" else "web search"
