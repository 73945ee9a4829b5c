"""Assertions about tool calls as the editor saw them on the wire, shared by the integration tests.

``check_tool_calls`` is the one generic check every tool test ends with: each call is announced
once as ``pending``, moves forward only (pending → in_progress → completed/failed), ends with
exactly one final status, keeps one toolCallId across its permission request and updates, and
every path the agent put in an ACP message is absolute.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tests.support.acp_harness import AgentProcess, EditorClient, PermissionPolicy
from tests.support.fake_anthropic import FakeAnthropic

FINAL = ("completed", "failed")
_RANK = {"pending": 0, "in_progress": 1, "completed": 2, "failed": 2}
_PATH_METHODS = ("fs/read_text_file", "fs/write_text_file")


@dataclass(frozen=True)
class CallView:
    """One tool call as the editor saw it."""

    id: str
    announced: dict[str, Any]  # the ``tool_call`` update
    updates: list[dict[str, Any]]  # every ``tool_call_update``, in order
    permission_requests: list[dict[str, Any]]  # ``session/request_permission`` params naming this call

    @property
    def statuses(self) -> list[str]:
        return [self.announced["status"], *(u["status"] for u in self.updates if "status" in u)]

    @property
    def final(self) -> dict[str, Any]:
        return self.updates[-1]

    @property
    def status(self) -> str:
        return str(self.final["status"])

    def content(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Content items of the final update (optionally only ``diff``/``terminal``/``content``)."""
        items = self.final.get("content") or []
        return [item for item in items if kind is None or item["type"] == kind]

    def text(self) -> str:
        """All text content of the final update, joined."""
        return "\n".join(item["content"]["text"] for item in self.content("content"))


def _paths_in_update(update: dict[str, Any]) -> Iterable[str]:
    for location in update.get("locations") or []:
        yield location["path"]
    for item in update.get("content") or []:
        if item.get("type") == "diff":
            yield item["path"]


def check_tool_calls(agent: AgentProcess, session_id: str) -> dict[str, CallView]:
    """Assert the lifecycle invariants of every tool call of ``session_id``; return them by id."""
    positions: dict[str, dict[str, int]] = {}
    calls: dict[str, CallView] = {}
    for index, message in enumerate(agent.sent()):
        params = message.get("params") or {}
        if params.get("sessionId") != session_id:
            continue
        method = message.get("method")
        if method == "session/update":
            update = params["update"]
            kind = update["sessionUpdate"]
            if kind not in ("tool_call", "tool_call_update"):
                continue
            call_id = update["toolCallId"]
            for path in _paths_in_update(update):
                assert os.path.isabs(path), f"relative path {path!r} in {update}"
            if kind == "tool_call":
                assert call_id not in calls, f"tool call {call_id} announced twice"
                assert update["status"] == "pending", f"tool call {call_id} announced as {update['status']}"
                assert "rawInput" in update and update.get("kind"), f"tool call {call_id} lacks kind/rawInput"
                calls[call_id] = CallView(call_id, update, [], [])
                positions[call_id] = {"announced": index}
                continue
            assert call_id in calls, f"update for unannounced tool call {call_id}: {update}"
            view = calls[call_id]
            assert not view.updates or view.updates[-1].get("status") not in FINAL, (
                f"update after the final status of {call_id}: {update}"
            )
            view.updates.append(update)
            if update.get("status") in FINAL:
                positions[call_id]["final"] = index
        elif method == "session/request_permission":
            tool_call = params["toolCall"]
            call_id = tool_call["toolCallId"]
            assert call_id in calls, f"permission request for unknown tool call {call_id}"
            assert "final" not in positions[call_id], f"permission asked after {call_id} had finished"
            for item in tool_call.get("content") or []:
                if item.get("type") == "diff":
                    assert os.path.isabs(item["path"]), f"relative diff path in permission request: {item}"
            calls[call_id].permission_requests.append(params)
        elif method in _PATH_METHODS:
            assert os.path.isabs(params["path"]), f"{method} with a relative path: {params}"
        elif method == "terminal/create":
            assert os.path.isabs(params["cwd"]), f"terminal/create with a relative cwd: {params}"
    for call_id, view in calls.items():
        assert view.updates and view.status in FINAL, f"tool call {call_id} never reached a final status"
        ranks = [_RANK[status] for status in view.statuses]
        assert ranks == sorted(ranks), f"tool call {call_id} went backwards: {view.statuses}"
        assert sum(status in FINAL for status in view.statuses) == 1, f"{call_id}: {view.statuses}"
    return calls


def tool_result(fake: FakeAnthropic, call_id: str) -> tuple[str, bool]:
    """What the model was told about ``call_id``: the tool_result text and whether it is an error."""
    for body in reversed(fake.requests):
        if not isinstance(body, dict):
            continue  # a request cut off as the server shut down (e.g. the title request)
        for message in body.get("messages", []):
            if message["role"] != "user" or not isinstance(message["content"], list):
                continue
            for block in message["content"]:
                if block.get("type") == "tool_result" and block.get("tool_use_id") == call_id:
                    return _block_text(block.get("content")), bool(block.get("is_error"))
    raise AssertionError(f"the model never received a result for {call_id}")


def tool_result_order(fake: FakeAnthropic, request_index: int) -> list[str]:
    """The tool_use_ids of the tool_result blocks in the last message of request ``request_index``."""
    last = fake.requests[request_index]["messages"][-1]
    return [block["tool_use_id"] for block in last["content"] if block.get("type") == "tool_result"]


def _block_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def by_call(answers: dict[str, str | None], default: str | None = "allow_once") -> PermissionPolicy:
    """Answer each request by its toolCallId: an option kind, or None to cancel the request."""

    def policy(tool_call: dict[str, Any], options: list[dict[str, Any]]) -> str | None:
        kind = answers.get(tool_call["toolCallId"], default)
        return None if kind is None else next(o["optionId"] for o in options if o["kind"] == kind)

    return policy


def asked_ids(client: EditorClient) -> list[str]:
    return [request["toolCall"]["toolCallId"] for request in client.permission_requests]
