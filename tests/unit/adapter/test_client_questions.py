"""A tool's question as an ACP form and the editor's response as the user's answer."""

from __future__ import annotations

from typing import Any

import pytest

from acp_hermes.adapter.client import answer_form, read_answer
from acp_hermes_tools.contracts import Answer
from tests.support.schema_check import default_schema


@pytest.mark.parametrize("choices", [(), ("Postgres", "SQLite")])
def test_the_form_is_a_valid_elicitation_schema(choices: tuple[str, ...]) -> None:
    request = {"sessionId": "s", "toolCallId": "t", "mode": "form", "message": "Which?",
               "requestedSchema": answer_form(choices)}
    assert default_schema().problems("CreateElicitationRequest", request) == []


@pytest.mark.parametrize(("response", "answer"), [
    ({"action": "accept", "content": {"answer": "  own words ", "choice": "SQLite"}}, Answer("answered", "own words")),
    ({"action": "accept", "content": {"answer": " ", "choice": "SQLite"}}, Answer("answered", "SQLite")),
    ({"action": "accept", "content": {"answer": ["a", "b"]}}, Answer("answered", "a, b")),
    ({"action": "accept", "content": {"answer": 3}}, Answer("answered", "3")),
    ({"action": "accept"}, Answer("answered")),
    ({"action": "decline"}, Answer("declined")),
    ({"action": "cancel"}, Answer("dismissed")),
    ({"action": "_later"}, Answer("dismissed")),
    (None, Answer("dismissed")),
])
def test_responses_become_answers(response: Any, answer: Answer) -> None:
    assert read_answer(response) == answer
