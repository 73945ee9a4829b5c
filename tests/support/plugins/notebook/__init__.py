"""notebook: a complete, small memory provider (the example of docs/memory.md, used by the tests).

It keeps notes in ``$HERMES_HOME/notebook.json``, recalls the notes that share a word with the user's
message, offers two tools (``notebook_add``, ``notebook_search``) and writes each call it receives to
``$HERMES_HOME/notebook-calls.log``, so a test can check the order of the lifecycle.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

from acp_hermes_memory.providers import MemoryProvider

WORD = re.compile(r"[a-z0-9]{3,}")


class NotebookProvider(MemoryProvider):
    name = "notebook"

    def __init__(self) -> None:
        self._home: Path | None = None
        self._lock = threading.Lock()

    # -- where it keeps things

    def _file(self, name: str) -> Path:
        assert self._home is not None, "initialize() comes first"
        return self._home / name

    def _log(self, call: str) -> None:
        if self._home is not None:
            with self._lock, self._file("notebook-calls.log").open("a", encoding="utf-8") as log:
                log.write(call + "\n")

    def _notes(self) -> list[str]:
        path = self._file("notebook.json")
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []

    def _matching(self, text: str) -> list[str]:
        wanted = set(WORD.findall(text.lower()))
        return [note for note in self._notes() if wanted & set(WORD.findall(note.lower()))]

    # -- the lifecycle

    def initialize(self, session_id: str, **context: Any) -> None:
        self._home = Path(context["hermes_home"])
        self._log("initialize")

    def system_prompt_block(self) -> str:
        self._log("system_prompt_block")
        return f"A notebook of {len(self._notes())} notes is kept for you; notebook_search reads it."

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        self._log("prefetch")
        return "\n".join(f"- {note}" for note in self._matching(query))

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        self._log("queue_prefetch")

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "") -> None:
        self._log("sync_turn")

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [
            {"name": "notebook_add", "description": "Add a note to the notebook.",
             "parameters": {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}},
            {"name": "notebook_search", "description": "Notes that share a word with the query.", "readOnly": True,
             "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
        ]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        self._log(f"handle_tool_call {tool_name}")
        if tool_name == "notebook_add":
            notes = [*self._notes(), str(args["note"])]
            self._file("notebook.json").write_text(json.dumps(notes), encoding="utf-8")
            return f"Noted ({len(notes)} notes)."
        return "\n".join(self._matching(str(args["query"]))) or "No notes match."

    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        self._log(f"on_turn_start {turn_number}")

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        self._log("on_session_end")

    def shutdown(self) -> None:
        self._log("shutdown")
