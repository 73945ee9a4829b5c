"""The cards a session makes itself: shown, ended exactly once whatever happens, stored when asked."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from acp_hermes.core.events import ToolCallFinished, ToolCallStarted
from acp_hermes.core.side_calls import BROKE_OFF, SideCall
from acp_hermes.core.transcript import ToolOutcome, Transcript, stored_messages
from acp_hermes_memory.session_db import SessionDB
from acp_hermes_tools.context import ToolContext
from acp_hermes_tools.contracts import TextDisplay, ToolEventSink
from acp_hermes_tools.local_io import LocalEditor
from tests.support.tools import EventLog, RecordingGate, make_scope

pytestmark = pytest.mark.anyio


def contexts(tmp_path: Path) -> object:
    scope = make_scope(tmp_path, session_id="s")

    def make(call_id: str, title: str, sink: ToolEventSink) -> ToolContext:
        return ToolContext(call_id=call_id, scope=scope, editor=LocalEditor(), gate=RecordingGate(), sink=sink,
                           title=title)

    return make


async def test_a_card_is_shown_then_finished_once_and_stored_when_asked(tmp_path: Path) -> None:
    log = EventLog()
    db = SessionDB(tmp_path / "state.db")
    try:
        db.create_session("s", cwd=str(tmp_path), model="m", mode="default", model_config={}, system_prompt="")
        transcript = Transcript("s", db)
        async with SideCall(log, contexts(tmp_path), "card-1", "export", "Export it", "edit",  # type: ignore[arg-type]
                            {"path": "x.md"}, store_in=transcript) as card:
            assert card.ctx.call_id == "card-1"
            await card.finish(True, (TextDisplay("done"),), "done")
        assert [type(e) for e in log.events] == [ToolCallStarted, ToolCallFinished]
        [stored] = [m for m in stored_messages(db.messages("s")) if isinstance(m, ToolOutcome)]
        assert (stored.call_id, stored.name, stored.title, stored.ok) == ("card-1", "export", "Export it", True)
        assert transcript.messages == []  # beside the conversation: the model never reads it
    finally:
        db.close()


async def test_a_card_left_by_an_error_or_a_cancel_ends_as_failed(tmp_path: Path) -> None:
    log = EventLog()
    with pytest.raises(RuntimeError):
        async with SideCall(log, contexts(tmp_path), "card-2", "rollback", "Roll back", "edit", {}):  # type: ignore[arg-type]
            raise RuntimeError("the store broke")
    with anyio.CancelScope() as scope:
        async with SideCall(log, contexts(tmp_path), "card-3", "rollback", "Roll back", "edit", {}):  # type: ignore[arg-type]
            scope.cancel()
            await anyio.lowlevel.checkpoint()  # where the cancel is delivered
    finished = [e for e in log.events if isinstance(e, ToolCallFinished)]
    assert [(e.call_id, e.status, e.display) for e in finished] == [
        ("card-2", "failed", (TextDisplay(BROKE_OFF),)), ("card-3", "failed", (TextDisplay(BROKE_OFF),))]
