"""The timeline's wire shapes (``adapter.timeline``): where a fork's params ask to fork, refused whole
when malformed; the fork answer's note on files; ``history_truncated`` in the drafts' schema and not
in the stable one."""

from __future__ import annotations

from typing import Any

import pytest

from acp_hermes.adapter.timeline import fork_meta, fork_point, history_truncated
from acp_hermes.core.errors import InvalidInput
from acp_hermes.core.rewind import MessagePoint
from acp_hermes.core.truncation import Truncation
from tests.support.schema_check import RELEASE_UNSTABLE_SCHEMA_PATH, default_schema, with_drafts

BASE: dict[str, Any] = {"sessionId": "s", "cwd": "/w", "mcpServers": []}


def air(**fork: Any) -> dict[str, Any]:
    return {**BASE, "_meta": {"jetbrains": {"air": {"fork": fork}}, "zed.dev/x": 1}}


def test_where_a_fork_is_asked_for() -> None:
    assert fork_point(BASE) is None
    assert fork_point({**BASE, "_meta": {"zed.dev/x": 1}}) is None
    assert fork_point({**BASE, "messageId": "m1"}) == MessagePoint("m1")
    assert fork_point(air(version=1, messageId="m2", messageFingerprint="sha256:ab", messageOccurrence=2)) == \
        MessagePoint("m2", "sha256:ab", 2)
    assert fork_point({**air(version=1, messageId="m2"), "messageId": "m1"}) == MessagePoint("m1")  # ACP's first


@pytest.mark.parametrize("params", [
    {**BASE, "messageId": ""},
    {**BASE, "messageId": 7},
    air(version=2, messageId="m"),
    air(version="1", messageId="m"),
    air(version=1),
    air(version=1, messageId="m", messageOccurrence=0),
    air(version=1, messageId="m", messageOccurrence=True),
], ids=["empty", "number", "version-2", "version-text", "no-id", "occurrence-0", "occurrence-bool"])
def test_a_malformed_fork_point_is_refused(params: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        fork_point(params)


def test_the_fork_answer_says_files_are_not_forked_only_when_a_later_turn_changed_them() -> None:
    assert fork_meta(None) == {}
    files = fork_meta(3)["_meta"]["acp-hermes"]["files"]
    assert files["forked"] is False and files["rollback"] == 3 and "`/rollback 3`" in files["message"]


def test_history_truncated_fits_the_drafts_schema_and_no_published_one() -> None:
    drafts = with_drafts(str(RELEASE_UNSTABLE_SCHEMA_PATH))
    for cut in (Truncation(4, ("m3", "a3"), "a2", 4), Truncation(2, ("m1", "a1"), None, 0)):
        update = {"sessionId": "s", "update": history_truncated(cut)}
        assert drafts.problems("SessionNotification", update) == []
        assert default_schema().problems("SessionNotification", update) != []
    assert history_truncated(Truncation(4, ("m3",), "a2", 4)) == {
        "sessionUpdate": "history_truncated", "removedMessageIds": ["m3"], "remainingMessageCount": 4,
        "lastMessageId": "a2"}
