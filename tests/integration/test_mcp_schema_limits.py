"""A server's schema cannot hang the agent: argument checks of MCP tools (tools.mcp.schema) are bounded.

Regexes run on RE2 (linear); everything else a hostile schema can make expensive — a regex RE2 refuses,
an installation without RE2, a ``$ref`` graph that fans out — runs under a time limit and refuses the
call when it runs out; remote ``$ref``s are never fetched; a schema that cannot be applied refuses the
call with the reason. The hostile inputs are sized so that an unbounded check would still end (after
tens of seconds) and the assertions on the message then fail, rather than the test hanging.
"""

from __future__ import annotations

import signal
import socket
import threading
from typing import Any

import pytest
import re2

from acp_hermes_tools.mcp.schema import CHECK_LIMIT, Regexes, SchemaCheck
from acp_hermes_tools.registry import Access, Tool, ToolCall, ToolRegistry, ToolResult
from tests.support.tools import make_context

HOSTILE = "^(a+)+$"
LOOKAHEAD = "^(?=a)(a+)+$"  # RE2 refuses lookarounds
SLOW_TEXT = "a" * 30 + "!"  # ~2^30 backtracking steps in Python's re: tens of seconds unbounded
TIMED_OUT = f"took longer than {CHECK_LIMIT:g} s"


def text_schema(pattern: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"text": {"type": "string", "pattern": pattern}}, "required": ["text"]}


def test_regexes_run_on_re2_and_a_hostile_pattern_is_answered_at_once() -> None:
    check = SchemaCheck(text_schema(HOSTILE))
    assert check.problem({"text": "aaaa"}) is None
    problem = check.problem({"text": "a" * 10_000 + "!"})  # unbounded backtracking would never end
    assert problem is not None and problem.startswith("text: 'aaaa") and "does not match '^(a+)+$'" in problem
    assert TIMED_OUT not in problem


def test_re2_keeps_json_schema_semantics_where_python_re_differs() -> None:
    regexes = Regexes(re2)
    assert regexes.linear(r"^\d+$") and not regexes.search(r"^\d+$", "٣")  # ECMA-262's \d is ASCII
    assert not regexes.search("^a$", "a\n")  # $ is the very end
    assert not regexes.linear(r"(a)\1") and not regexes.linear("(?<=a)b")  # backreferences, lookarounds: re
    assert regexes.search(r"(a)\1", "xaa")


def test_pattern_properties_and_additional_properties_go_through_re2() -> None:
    schema = {"type": "object", "patternProperties": {HOSTILE: {"type": "string"}}, "additionalProperties": False}
    check = SchemaCheck(schema)
    assert check.problem({"aaa": "x"}) is None
    assert "aaa: 1 is not of type 'string'" in (check.problem({"aaa": 1}) or "")
    problem = check.problem({"a" * 10_000 + "!": "x"})
    assert problem is not None and "match none of the allowed property patterns" in problem


def test_a_pattern_re2_cannot_compile_runs_on_python_re_under_the_time_limit() -> None:
    check = SchemaCheck(text_schema(LOOKAHEAD))
    assert check.problem({"text": "aaa"}) is None
    assert "does not match" in (check.problem({"text": "b"}) or "")
    problem = check.problem({"text": SLOW_TEXT})
    assert problem is not None and TIMED_OUT in problem and "the call was refused" in problem


def test_without_re2_every_regex_runs_under_the_time_limit() -> None:
    check = SchemaCheck(text_schema(HOSTILE), use_re2=False)
    assert check.problem({"text": "aaa"}) is None
    assert "does not match" in (check.problem({"text": "ab"}) or "")
    assert TIMED_OUT in (check.problem({"text": SLOW_TEXT}) or "")
    assert check.problem({"text": "aaaa"}) is None  # a check that ran out leaves nothing behind


def test_regexes_jsonschema_evaluates_itself_are_bounded_too() -> None:
    schema = {"type": "object", "patternProperties": {HOSTILE: {"type": "string"}}, "unevaluatedProperties": False}
    assert TIMED_OUT in (SchemaCheck(schema).problem({SLOW_TEXT: "x"}) or "")


def test_references_that_fan_out_exponentially_run_out_of_time() -> None:
    depth = 40  # 2^40 evaluations of the last definition
    defs: dict[str, Any] = {f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(depth)}
    defs[f"d{depth}"] = {"type": "object"}
    assert TIMED_OUT in (SchemaCheck({"$defs": defs, "$ref": "#/$defs/d0"}).problem({}) or "")


def test_a_remote_reference_is_never_fetched() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/schema.json"
        problem = SchemaCheck({"properties": {"x": {"$ref": url}}}).problem({"x": 1})
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected
    finally:
        listener.close()
    assert problem == f"the tool's input schema could not be applied: Unresolvable: {url}"


@pytest.mark.parametrize(("schema", "reason"), [
    ({"properties": {"x": {"pattern": "["}}}, "could not be applied: unterminated character set"),
    ({"$ref": "#"}, "could not be applied: it nests or refers to itself too deeply"),
    ({"properties": {"x": {"minLength": "three"}}}, "could not be applied: "),
])
def test_a_schema_that_cannot_be_applied_refuses_the_call_with_the_reason(schema: dict[str, Any], reason: str) -> None:
    assert reason in (SchemaCheck(schema).problem({"x": "abc"}) or "")


def test_the_alarm_is_put_back_as_it_was() -> None:
    def mine(signum: int, frame: Any) -> None:
        raise AssertionError("not expected")

    previous = signal.signal(signal.SIGALRM, mine)
    try:
        SchemaCheck(text_schema(HOSTILE), use_re2=False).problem({"text": SLOW_TEXT})
        assert signal.getsignal(signal.SIGALRM) is mine
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_off_the_main_thread_only_regexes_on_re2_are_checked() -> None:
    answers: dict[str, str | None] = {}

    def check() -> None:
        answers["re2"] = SchemaCheck(text_schema(HOSTILE)).problem({"text": "a" * 10_000 + "!"})
        answers["python"] = SchemaCheck(text_schema(LOOKAHEAD)).problem({"text": SLOW_TEXT})

    thread = threading.Thread(target=check)
    thread.start()
    thread.join()
    assert "does not match" in (answers["re2"] or "")
    assert "no time limit can be set here; the call was refused" in (answers["python"] or "")


# --- the registry uses a tool's own check --------------------------------------------------------

async def _ran(arguments: dict[str, Any], ctx: Any) -> ToolResult:
    return ToolResult("ran")


def external_tool(name: str, schema: dict[str, Any]) -> Tool:
    return Tool(name=name, description="", schema=schema, handler=_ran, kind="read", access=Access.READ,
                validate=SchemaCheck(schema).problem)


@pytest.mark.anyio
async def test_dispatch_refuses_a_call_its_tool_check_refuses(tmp_path: Any) -> None:
    registry = ToolRegistry().extended([external_tool("mcp__s__t", text_schema(HOSTILE))])
    ctx = make_context(tmp_path)
    refused = await registry.dispatch(ToolCall("c1", "mcp__s__t", {"text": "a" * 10_000 + "!"}), ctx)
    assert not refused.ok and refused.text.startswith("Error: invalid arguments for mcp__s__t: text: ")
    assert (await registry.dispatch(ToolCall("c2", "mcp__s__t", {"text": "aa"}), ctx)).text == "ran"


def test_a_schema_of_our_own_that_cannot_be_applied_refuses_the_call_rather_than_raising() -> None:
    broken = Tool(name="t", description="", schema={"properties": {"x": {"pattern": "["}}}, handler=_ran, kind="read",
                  access=Access.READ)
    problem = ToolRegistry([broken]).validation_error(broken, {"x": "a"})
    assert problem is not None and problem.startswith("the tool's input schema could not be applied: error: ")


def test_a_duplicate_name_from_outside_is_left_out_rather_than_breaking_the_registry() -> None:
    first, second = external_tool("mcp__s__t", {"type": "object"}), external_tool("mcp__s__t", text_schema("x"))
    registry = ToolRegistry().extended([first, second])
    assert registry.names == ["mcp__s__t"] and registry.get("mcp__s__t") is first
