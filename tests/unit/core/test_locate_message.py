"""Where a message named by its id is (``core.rewind.locate``), on a real SessionDB: in the current
segment, a model message ending with its tool results; one only an earlier, compacted segment holds is
refused as summarised; an unknown id as unknown; AIR's fingerprint finds a prompt whose id changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_hermes.core.errors import InvalidInput
from acp_hermes.core.rewind import Located, MessagePoint, fingerprint, locate
from acp_hermes_memory.session_db import CONTINUATION_SOURCE, SessionDB


def session(db: SessionDB, session_id: str, **extra: object) -> None:
    db.create_session(session_id, cwd="/w", model="m", mode="default", model_config={}, system_prompt="p",
                      **extra)  # type: ignore[arg-type]


def text(words: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": words}]


def test_a_message_is_located_in_the_current_segment_only(tmp_path: Path) -> None:
    with SessionDB(tmp_path / "state.db") as db:
        session(db, "root")
        db.append_message("root", "user", "old ask", payload=text("old ask"),
                          display={"prompt": [], "client_message_id": "old"})
        db.append_message("root", "assistant", "old answer", payload=[], display={"message_id": "a-old"})
        session(db, "seg2", parent_session_id="root", source=CONTINUATION_SOURCE)
        db.update_session("root", end_reason=CONTINUATION_SOURCE, ended_at=1.0)
        ask = db.append_message("seg2", "user", "new ask", payload=text("new ask"),
                                display={"prompt": [], "message_id": "new"})
        calls = [{"id": "c1", "name": "read_file", "arguments": "{}"}]
        call = db.append_message("seg2", "assistant", "reading", payload=[], tool_calls=calls,
                                 display={"message_id": "a-new"})
        result = db.append_message("seg2", "tool", "text", tool_call_id="c1", tool_name="read_file", display={})

        assert locate(db, "root", MessagePoint("new")) == Located("new", ask, ask, "user")
        assert locate(db, "root", MessagePoint("a-new")) == Located("a-new", call, result, "assistant")
        assert locate(db, "root", MessagePoint("gone", fingerprint("new ask"))).row == ask
        with pytest.raises(InvalidInput, match="compaction"):
            locate(db, "root", MessagePoint("a-old"))
        with pytest.raises(InvalidInput, match="not a message"):
            locate(db, "root", MessagePoint("never"))
        with pytest.raises(InvalidInput, match="compaction"):  # found by its text, yet summarised since
            locate(db, "root", MessagePoint("gone", fingerprint("old ask")))
