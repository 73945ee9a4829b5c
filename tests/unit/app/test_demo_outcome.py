"""How the demo tells a model failure from an answer: the loop's failure notice ending the turn, and
the root cause of a connection that never got an answer, in a few words."""

from __future__ import annotations

import errno
import socket

import anthropic
import httpx2
import pytest

from acp_hermes.app.demo import DemoView, _status
from acp_hermes.app.setup import unreachable


def chunk(text: str) -> dict[str, object]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


def test_a_turn_ended_by_the_model_failure_notice_fails_the_demo(capsys: pytest.CaptureFixture[str]) -> None:
    view = DemoView(color=False)
    view.show(chunk("Looking."))
    view.show(chunk("\n\n⚠️ The model API returned 404: model: claude-nope (is the model name right?)\n"))
    assert view.failure == "The model API returned 404: model: claude-nope (is the model name right?)"
    assert _status(view, "end_turn") == 1
    assert capsys.readouterr().err == (
        "acp-hermes demo: the model could not answer: The model API returned 404: model: claude-nope "
        "(is the model name right?)\n"
    )


def test_a_notice_the_turn_went_on_after_is_no_failure() -> None:
    view = DemoView(color=False)
    view.show(chunk("\n\n⚠️ The model stream broke off\n"))
    view.show({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read a.py", "status": "pending"})
    assert view.failure is None and _status(view, "end_turn") == 0
    view.show(chunk("⚠️ MCP server `x` could not be connected.\n\n"))  # a session notice, not the turn's end
    assert view.failure is None and _status(view, "end_turn") == 0


def connection_error(cause: BaseException) -> anthropic.APIConnectionError:
    request = httpx2.Request("GET", "http://127.0.0.1:9/v1/models")
    try:
        try:
            raise cause
        except BaseException as inner:
            raise httpx2.ConnectError("All connection attempts failed") from inner
    except httpx2.ConnectError as outer:
        error = anthropic.APIConnectionError(request=request)
        error.__cause__ = outer
        return error


@pytest.mark.parametrize(
    ("cause", "reason"),
    [
        (ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed"), "connection refused"),
        (OSError("All connection attempts failed"), "All connection attempts failed"),
        (socket.gaierror(-2, "Name or service not known"), "host not found (Name or service not known)"),
        (OSError(errno.ENETUNREACH, "Network is unreachable"), "network is unreachable"),
    ],
)
def test_a_connection_failure_is_named_by_its_root_cause(cause: BaseException, reason: str) -> None:
    where = "http://127.0.0.1:9"
    assert unreachable(connection_error(cause), where) == f"Could not reach the model at {where}: {reason}."


def test_an_answer_is_not_a_connection_failure() -> None:
    response = httpx2.Response(401, request=httpx2.Request("GET", "http://127.0.0.1:9/v1/models"))
    assert unreachable(anthropic.AuthenticationError("no", response=response, body=None), "x") is None
