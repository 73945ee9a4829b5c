"""``facts``: the memory provider built into acp-hermes, with no network.

It keeps a fact store (``fact_store``) beside the SessionDB. Facts come in two ways: the model adds
and retracts them with its tools, and at a session's end and before a compaction the auxiliary model
reads the conversation and extracts the durable ones (entity, fact, the session, the time). Each
prompt recalls the facts that best match it by FTS5 rank, with no model call on the turn's path.
A fact is scanned like a MEMORY.md entry: one that carries a prompt-injection pattern is refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp_hermes_memory.fact_store import FactStore
from acp_hermes_memory.frames import has_tag
from acp_hermes_memory.providers import FENCE_NAME, FENCE_OPEN, MemoryProvider, current_session_id
from acp_hermes_memory.scan import first_threat

RECALLED = 8
CONVERSATION_CHARS = 24_000  # the end of the conversation the extraction reads
EXTRACT_SYSTEM = (
    "You keep a store of durable facts for a coding agent. From the conversation, list the facts worth "
    "knowing in a later session: about the user, their projects, tools, conventions, decisions and "
    "environment. Skip what only mattered in the moment, guesses, secrets and anything already obvious. "
    'Reply with JSON only: a list of {"entity": "<what it is about, a few words>", "fact": "<one sentence>"}, '
    "at most 12 items; [] when there is nothing."
)
BLOCK = ("Facts from earlier sessions that match the user's message are added to it in a <memory-context> "
         "block. fact_search looks for more, fact_add keeps a durable fact (entity and one sentence), "
         "fact_retract drops one that is wrong.")


class FactsProvider(MemoryProvider):
    name = "facts"

    def __init__(self) -> None:
        self._store: FactStore | None = None
        self._complete: Callable[[str, str], str] | None = None

    def use_model(self, complete: Callable[[str, str], str]) -> None:
        self._complete = complete

    def initialize(self, session_id: str, **context: Any) -> None:
        if self._store is None:
            self._store = FactStore(Path(context["hermes_home"]) / "acp-hermes" / "facts.db")

    @property
    def store(self) -> FactStore:
        if self._store is None:
            raise RuntimeError("the fact store is not open: initialize() comes first")
        return self._store

    def system_prompt_block(self) -> str:
        return BLOCK

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        return "\n".join(f"- {fact.line()}" for fact in self.store.search(query, RECALLED))

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [
            {"name": "fact_search", "readOnly": True,
             "description": "Search the fact store (facts kept from earlier sessions) for words.",
             "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
            {"name": "fact_add", "description": "Keep a durable fact for later sessions: what it is about and one "
             "sentence.", "parameters": {"type": "object", "required": ["entity", "fact"], "properties": {
                 "entity": {"type": "string"}, "fact": {"type": "string"}}}},
            {"name": "fact_retract", "description": "Drop a fact that is wrong or outdated, by its [id].",
             "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
        ]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if tool_name == "fact_search":
            found = self.store.search(str(args.get("query") or ""), 20)
            return "\n".join(fact.line() for fact in found) or "No fact matches."
        if tool_name == "fact_add":
            problem = self._refusal(str(args.get("entity") or ""), str(args.get("fact") or ""))
            if problem is not None:
                return problem
            fact = self.store.add(str(args["entity"]), str(args["fact"]), current_session_id() or None)
            return f"Kept fact [{fact.id}]: {fact.entity}: {fact.fact}"
        if tool_name == "fact_retract":
            number = int(args.get("id") or 0)
            return f"Retracted fact [{number}]." if self.store.retract(number) else f"No live fact [{number}]."
        return super().handle_tool_call(tool_name, args)

    @staticmethod
    def _refusal(entity: str, fact: str) -> str | None:
        if not entity.strip() or not fact.strip():
            return "Not kept: a fact needs an entity and one sentence about it."
        if has_tag(f"{entity}: {fact}", FENCE_NAME):
            return f"Not kept: a fact cannot hold a <{FENCE_NAME}> tag, the fence recall rides in."
        threat = first_threat(f"{entity}: {fact}")
        return f"Not kept: the fact looks like a prompt injection ({threat})." if threat else None

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        self._extract(messages)

    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        self._extract(messages)
        return ""

    def _extract(self, messages: list[dict[str, Any]]) -> None:
        """The durable facts of a conversation, as the auxiliary model reads them, kept."""
        text = _conversation(messages)
        if self._complete is None or self._store is None or not text:
            return
        reply = self._complete(EXTRACT_SYSTEM, text)
        for item in _items(reply):
            if self._refusal(item[0], item[1]) is None:
                self._store.add(item[0], item[1], current_session_id() or None)

    def summary(self) -> list[str]:
        if self._store is None:
            return ["(no session has opened the fact store yet)"]
        return [f"{self._store.count():,} facts; the latest:", *(f"- {fact.line()}" for fact in self._store.recent())]

    def shutdown(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def _conversation(messages: list[dict[str, Any]]) -> str:
    """What the user and the agent said (not tool calls or results), its end kept."""
    lines = []
    for message in messages:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        said = " ".join(str(b.get("text") or "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
                        and not str(b.get("text") or "").startswith(FENCE_OPEN))  # recall is not what was said
        if said.strip():
            lines.append(f"{'User' if message.get('role') == 'user' else 'Agent'}: {said.strip()}")
    return "\n".join(lines)[-CONVERSATION_CHARS:]


def _items(reply: str) -> list[tuple[str, str]]:
    """The (entity, fact) pairs of the model's JSON reply; anything else in it is ignored."""
    start, end = reply.find("["), reply.rfind("]")
    try:
        data = json.loads(reply[start:end + 1]) if start >= 0 < end else []
    except json.JSONDecodeError:
        return []
    return [(str(item["entity"]), str(item["fact"])) for item in data if isinstance(item, dict)
            and isinstance(item.get("entity"), str) and isinstance(item.get("fact"), str)]
