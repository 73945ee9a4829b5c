"""The live sessions of this process, backed by the shared SessionDB: create, restore, fork, close, delete."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from acp_hermes.core.choices import SessionChoices
from acp_hermes.core.errors import SessionNotFoundError
from acp_hermes.core.events import EventSink
from acp_hermes.core.runtime import Runtime
from acp_hermes.core.session import Session
from acp_hermes.core.transcript import Transcript, announced_calls, history_from_rows, last_measured
from acp_hermes.permissions.gate import Asker
from acp_hermes.permissions.modes import Mode
from acp_hermes_memory.values import value
from acp_hermes_tools.contracts import Editor

if TYPE_CHECKING:
    from acp_hermes_memory.session_db import MessageRecord, SessionRecord


@value
class SessionWiring:
    """How a session reaches its client: per session id, where events go, who answers
    permission questions, and the editor that does its file and command I/O."""

    sink_for: Callable[[str], EventSink]
    asker_for: Callable[[str], Asker]
    editor_for: Callable[[str], Editor]


class SessionManager:
    def __init__(self, runtime: Runtime, wiring: SessionWiring) -> None:
        self.runtime = runtime
        self._wiring = wiring
        self._live: dict[str, Session] = {}

    def live(self) -> list[Session]:
        return list(self._live.values())

    def get(self, session_id: str) -> Session:
        session = self._live.get(session_id)
        if session is None:
            raise SessionNotFoundError(session_id)
        return session

    def _build(
        self, record: SessionRecord, rows: Sequence[MessageRecord], cwd: Path, extra: tuple[Path, ...]
    ) -> tuple[Session, Sequence[MessageRecord]]:
        """The live session for a stored one, and its rows as the session now has them."""
        settings = self.runtime.settings
        config = record.model_config or {}
        choices = SessionChoices(
            mode=Mode(record.mode) if record.mode in {m.value for m in Mode} else settings.default_mode,
            model=record.model or settings.model,
            thought_level=config.get("thought_level", settings.thought_level),
        )
        # Compaction continues a conversation in new segments: the model sees the last one's
        # history, the editor replays them all.
        segments = self.runtime.db.segments(record.id) if rows else [record]
        current = segments[-1]
        later = [self.runtime.db.messages(segment.id) for segment in segments[1:]]
        transcript = Transcript(current.id, self.runtime.db, history_from_rows(later[-1] if later else rows))
        left_open = transcript.last_calls_left_open()
        if left_open:  # the process that ran them was killed, or the editor quit mid-turn
            transcript.close_interrupted(left_open, announced_calls(later[-1] if later else rows))
            if later:
                later[-1] = self.runtime.db.messages(current.id)
            else:
                rows = self.runtime.db.messages(record.id)
        history_rows = later[-1] if later else rows
        rows = [*rows, *(row for segment in later for row in segment)]
        session = Session(
            session_id=record.id,
            cwd=cwd,
            additional_directories=extra,
            choices=choices,
            system_prompt=current.system_prompt or "",
            transcript=transcript,
            runtime=self.runtime,
            editor=self._wiring.editor_for(record.id),
            sink=self._wiring.sink_for(record.id),
            asker=self._wiring.asker_for(record.id),
            title=record.title,
        )
        session.stored_tool_results = [
            (row.tool_name, row.display.get("raw_output"))
            for row in rows
            if row.role == "tool" and row.tool_name and isinstance(row.display, dict)
            and row.display.get("status") == "completed"
        ]
        session.last_context_tokens, session.measured_messages = _restored_context(
            session.system_prompt, history_rows, len(transcript.messages), carried=bool(later))
        session.rebuild_prompt = lambda: self.system_prompt(record.id, cwd, extra)
        self._live[record.id] = session
        return session, rows

    def system_prompt(self, session_id: str, cwd: Path, extra: tuple[Path, ...]) -> str:
        # Imported here, once a session is built: the prompt code and its injection scanner are not
        # needed to answer initialize or session/new.
        from acp_hermes.core.system_prompt import PromptInputs, build_system_prompt

        settings = self.runtime.settings
        return build_system_prompt(
            PromptInputs(
                paths=self.runtime.paths,
                cwd=cwd,
                session_id=session_id,
                now=datetime.now().astimezone(),
                system_message=settings.system_message,
                memory_block=self.runtime.memory.snapshot().render(),
                tool_names=self.runtime.tool_names,
                skills=[(s.name, s.category, s.description) for s in self.runtime.skills_for(cwd).skills()],
                context_file_max_chars=settings.context_file_max_chars,
                additional_directories=extra,
            )
        )

    def new_choices(self) -> SessionChoices:
        """What a new session starts with: known before create() has built and stored it."""
        settings = self.runtime.settings
        return SessionChoices(mode=settings.default_mode, model=settings.model, thought_level=settings.thought_level)

    def create(self, cwd: Path, extra: tuple[Path, ...], session_id: str | None = None) -> Session:
        """Build the session's frozen system prompt and store it with the new session."""
        session_id = session_id or str(uuid.uuid4())
        choices = self.new_choices()
        record = self.runtime.db.create_session(
            session_id,
            cwd=str(cwd),
            model=choices.model,
            mode=choices.mode.value,
            model_config=choices.as_config(),
            system_prompt=self.system_prompt(session_id, cwd, extra),
            additional_directories=[str(p) for p in extra],
        )
        return self._build(record, (), cwd, extra)[0]

    def restore(
        self, session_id: str, cwd: Path, extra: tuple[Path, ...], rows: Sequence[MessageRecord] | None = None
    ) -> tuple[Session, Sequence[MessageRecord]]:
        """The live session, or one rebuilt from the SessionDB (from ``rows`` when the caller has
        already read its messages), with its stored messages; unknown ids raise."""
        live = self._live.get(session_id)
        if live is not None:
            return live, rows or ()
        record = self.runtime.db.get_session(session_id)
        if record is None:
            raise SessionNotFoundError(session_id)
        if rows is None:
            rows = self.runtime.db.messages(session_id)
        if str(cwd) != record.cwd:
            self.runtime.db.update_session(session_id, cwd=str(cwd))
        return self._build(record, rows, cwd, extra)

    def fork(self, source_id: str, cwd: Path, extra: tuple[Path, ...]) -> Session:
        if source_id in self._live:
            source = self._live[source_id]
            self.runtime.db.update_session(
                source_id, mode=source.choices.mode.value, model=source.choices.model,
                model_config=source.choices.as_config(),
            )
        source_record = self.runtime.db.get_session(source_id)
        if source_record is None:
            raise SessionNotFoundError(source_id)
        new_id = str(uuid.uuid4())
        # A fork never has a first exchange of its own to be named after: it starts from the source's name.
        title = f"{source_record.title} (fork)" if source_record.title else None
        latest = self.runtime.db.segments(source_id)[-1].id  # after compactions: the history as it is now
        record = self.runtime.db.fork_session(
            latest, new_id, cwd=str(cwd), additional_directories=[str(p) for p in extra], title=title,
            model=source_record.model, mode=source_record.mode, model_config=source_record.model_config,
        )
        return self._build(record, self.runtime.db.messages(new_id), cwd, extra)[0]

    def close(self, session_id: str) -> None:
        session = self._live.pop(session_id, None)
        if session is None:
            if self.runtime.db.get_session(session_id) is None:
                raise SessionNotFoundError(session_id)
            return
        session.close()

    def delete(self, session_id: str) -> None:
        session = self._live.pop(session_id, None)
        if session is not None:
            session.close()
        db = self.runtime.db
        continuations = [segment.id for segment in db.segments(session_id)[1:]]  # compaction's segments go too
        if not db.delete_session(session_id) and session is None:
            raise SessionNotFoundError(session_id)
        for segment in continuations:
            db.delete_session(segment)


def _restored_context(system_prompt: str, rows: Sequence[MessageRecord], message_count: int, *,
                      carried: bool) -> tuple[int, int]:
    """The context a restored conversation holds, as ``Session`` keeps it: the figure the last model
    call measured (stored with its message; the gauge then reads as it did after that turn) and how
    many of the ``message_count`` messages it covers. A conversation stored before figures were kept
    is estimated whole."""
    measured = last_measured(rows)
    if measured is None:
        return _estimated_context(system_prompt, rows, carried=carried), message_count
    tokens, index = measured
    return tokens, message_count - len(history_from_rows(rows[index + 1:]))


def _estimated_context(system_prompt: str, rows: Sequence[MessageRecord], *, carried: bool) -> int:
    """Roughly how many tokens a restored conversation holds (about 4 characters a token), so the
    editor's context gauge is not empty until the next model call reports the exact figure. Rows a
    compaction carried over have no text of their own: their content counts instead."""
    characters = len(system_prompt) + sum(len(row.content) + len(row.reasoning or "") for row in rows)
    if not carried:
        return characters // 4
    from acp_hermes.core.compression import estimate_tokens

    kept = [{"role": row.role, "content": row.payload} for row in rows
            if isinstance(row.display, dict) and row.display.get("carried") and row.payload]
    return characters // 4 + estimate_tokens(kept)
