"""Start-up stays cheap (DESIGN.md invariant 8): a server that answers ``initialize`` imports
neither the model SDK nor the schema validator nor a single tool module; a turn imports only the
parts of the model SDK it uses.

The real server runs under Python's import tracing (``PYTHONPROFILEIMPORTTIME``), which writes
one line per imported module to stderr, and is asked only to initialize before stdin closes.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_hermes_memory.session_db import SessionDB
from tests.support.acp_harness import RawAgent, raw_agent, write_config
from tests.support.fake_anthropic import FakeAnthropic, text_reply, texts_of

HEAVY = ("anthropic", "jsonschema", "httpx", "mcp", "mcp_types")
TOOL_MODULES = tuple(f"acp_hermes_tools.{name}" for name in (
    "files", "terminal", "todo", "memory", "session_search", "search", "diffs", "registry"))
RULE_TABLES = ("acp_hermes.permissions.shell.analysis", "acp_hermes.permissions.shell.programs",
               "acp_hermes_tools.sensitive_paths")
# A module name as the import trace prints it, after its timings. The trace is not parsed line by line:
# the state.db thread imports at the same time, and two threads' trace lines can interleave mid-line.
_TRACED = re.compile(r"\|\s*([A-Za-z_][\w.]*)(?=\s|$)")


def imported_modules(stderr: str) -> set[str]:
    return {match.group(1) for match in _TRACED.finditer(stderr)}


@pytest.mark.anyio
async def test_initialize_imports_no_model_sdk_validator_or_tool(tmp_path: Path) -> None:
    # Quiet logs: a log line written while the interpreter traces imports could split a trace line.
    env = {"PYTHONPROFILEIMPORTTIME": "1", "ACP_HERMES_LOG_LEVEL": "WARNING"}
    async with raw_agent(tmp_path, None, env=env) as agent:
        response = await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert response["result"]["agentInfo"]["name"] == "acp-hermes"
    modules = imported_modules(agent.stderr_path.read_text(encoding="utf-8", errors="replace"))
    assert {"acp", "acp_hermes.adapter.server", "acp_hermes.core.session"} <= modules  # the tracing worked
    loaded = {m for m in modules if m.split(".")[0] in HEAVY or m in TOOL_MODULES or m in RULE_TABLES}
    assert loaded == set()


# What ``import anthropic`` would load and a turn does not use: the beta and admin API resources,
# the cloud-provider clients, the tool runners.
UNUSED_SDK_PARTS = ("anthropic.resources.beta", "anthropic.resources.organization", "anthropic.lib.vertex",
                    "anthropic.lib.bedrock", "anthropic.lib.aws", "anthropic.lib.foundry", "anthropic.lib.tools")


@pytest.mark.anyio
async def test_a_turn_loads_only_the_parts_of_the_model_sdk_it_uses(tmp_path: Path,
                                                                   fake_anthropic: FakeAnthropic) -> None:
    """The SDK is imported lazily (``model.lazy_packages``): its client and Messages code, not the
    trees its ``__init__`` files would import (~0.6 s of CPU)."""
    fake_anthropic.script(text_reply("Hello."))
    fake_anthropic.script_auxiliary(text_reply("Greeting"))
    env = {"PYTHONPROFILEIMPORTTIME": "1", "ACP_HERMES_LOG_LEVEL": "WARNING"}
    async with raw_agent(tmp_path, fake_anthropic, env=env) as agent:
        await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        created = await agent.request("session/new", {"cwd": str(tmp_path / "workspace"), "mcpServers": []})
        session_id = created["result"]["sessionId"]
        done = await agent.request("session/prompt", {"sessionId": session_id,
                                                      "prompt": [{"type": "text", "text": "Hi"}]}, timeout=60)
        assert done["result"]["stopReason"] == "end_turn"
    modules = imported_modules(agent.stderr_path.read_text(encoding="utf-8", errors="replace"))
    # The tracing worked. (It times ``import`` statements: a module the lazy hook imports with
    # ``importlib.import_module`` has no line of its own, but everything it imports does.)
    assert {"anthropic._base_client", "anthropic.resources.messages.batches"} <= modules
    assert {m for m in modules if m.startswith(UNUSED_SDK_PARTS)} == set()



# ------------------------------------------------------------------------------------------------
# The reception (adapter.reception): initialize and session/new answered before the ACP SDK loads.

TRACED_QUIETLY = {"PYTHONPROFILEIMPORTTIME": "1", "ACP_HERMES_LOG_LEVEL": "WARNING"}
API_KEY = {"ANTHROPIC_API_KEY": "sk-ant-startup-tests"}
# A notification the reception leaves to the SDK: everything after it then goes through the SDK and
# the handlers, as before the reception existed. The handlers ignore an unknown extension notification.
TO_THE_SDK = {"jsonrpc": "2.0", "method": "_acp-hermes-tests/to-the-sdk"}
_SESSION_ID = re.compile(rb'"sessionId":"[0-9a-f-]{36}"')


def _request(request_id: int, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def _one_write(*messages: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(message).encode("utf-8") + b"\n" for message in messages)


@dataclass
class Served:
    """A server's answers to some requests: the index of each answer's stdout line, in request order."""

    agent: RawAgent
    lines: list[int]

    @property
    def answers(self) -> list[bytes]:
        """The answers' bytes, each new session's id replaced by ``<id>``."""
        return [_SESSION_ID.sub(b'"sessionId":"<id>"', self.agent.stdout_lines[n]) for n in self.lines]

    def message(self, number: int) -> dict[str, Any]:
        found: dict[str, Any] = self.agent.messages[self.lines[number]]
        return found

    def imported_before(self, number: int) -> set[str]:
        """What the server had imported when it wrote this answer (judged by what it had traced on
        stderr by the time the line arrived: that can only be more)."""
        traced = self.agent.stderr_path.read_bytes()[: self.agent.stderr_sizes[self.lines[number]]]
        return imported_modules(traced.decode("utf-8", errors="replace"))

    def before_the_sdk(self, number: int) -> bool:
        """Whether the server had not imported the SDK's schema when it wrote this answer."""
        return "acp.schema" not in self.imported_before(number)


async def _answers(agent: RawAgent, ids: list[int]) -> list[int]:
    def found() -> list[int] | None:
        lines = [next((n for n, m in enumerate(agent.messages)
                       if isinstance(m, dict) and "method" not in m and m.get("id") == i), -1) for i in ids]
        return None if -1 in lines else lines

    answered: list[int] = await agent.wait_for(found, timeout=60)
    return answered


async def _serve(root: Path, messages: list[dict[str, Any]], env: dict[str, str],
                 prepare: Callable[[Path], None], home: Path) -> Served:
    """A fresh server (its log under ``root``, a fresh ``home`` made by ``prepare``) given
    ``messages`` in one write."""
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    prepare(home)
    async with raw_agent(root, None, env={**TRACED_QUIETLY, **env}, home=home) as agent:
        await agent.write(_one_write(*messages))
        lines = await _answers(agent, [message["id"] for message in messages if "id" in message])
    return Served(agent, lines)


async def _both_ways(tmp_path: Path, messages: list[dict[str, Any]], env: dict[str, str],
                     prepare: Callable[[Path], None] = lambda home: None) -> tuple[Served, Served]:
    """``messages`` answered by a fresh server, and by another given ``TO_THE_SDK`` first: there the
    handlers answer every one through the SDK (checked), as they did before the reception. Both
    have the same HERMES_HOME (made anew), so that their answers may name it."""
    home = tmp_path / "hermes-home"
    early = await _serve(tmp_path / "reception", messages, env, prepare, home)
    handlers = await _serve(tmp_path / "handlers", [TO_THE_SDK, *messages], env, prepare, home)
    assert not any(handlers.before_the_sdk(n) for n in range(len(handlers.lines)))
    return early, handlers


INITIALIZE = _request(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})


async def _new_session_both_ways(tmp_path: Path, env: dict[str, str],
                                 prepare: Callable[[Path], None]) -> tuple[Served, Served]:
    """``initialize`` and a ``session/new`` in ``tmp_path/workspace``, served both ways (``_both_ways``)
    after ``prepare`` has made the home."""
    workspace = tmp_path / "workspace"

    def both(home: Path) -> None:
        workspace.mkdir(exist_ok=True)
        prepare(home)

    messages = [INITIALIZE, _request(1, "session/new", {"cwd": str(workspace), "mcpServers": []})]
    return await _both_ways(tmp_path, messages, env, both)


@pytest.mark.anyio
async def test_session_new_is_answered_before_the_sdk_is_imported(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    new = _request(1, "session/new", {"cwd": str(workspace), "mcpServers": []})
    served = await _serve(tmp_path, [INITIALIZE, new], API_KEY, lambda home: workspace.mkdir(), tmp_path / "home")
    assert "sessionId" in served.message(1)["result"]
    assert served.before_the_sdk(0) and served.before_the_sdk(1)
    modules = imported_modules(served.agent.stderr_path.read_text(encoding="utf-8", errors="replace"))
    assert "acp.schema" in modules  # the tracing worked: the SDK loaded after, for the session


@pytest.mark.anyio
async def test_the_early_answers_are_the_bytes_the_handlers_send(tmp_path: Path) -> None:
    workspace, other = tmp_path / "workspace", tmp_path / "other"

    def folders(home: Path) -> None:
        workspace.mkdir(exist_ok=True)
        other.mkdir(exist_ok=True)

    messages = [
        _request(0, "initialize", {"protocolVersion": 1, "clientInfo": {"name": "an editor", "version": "1"},
                                   "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True},
                                                          "terminal": True, "auth": {"terminal": True},
                                                          "positionEncodings": ["utf-16"], "_meta": {"x.y/z": 1}}}),
        _request(1, "initialize", {"protocolVersion": 7, "_meta": {"zed.dev/x": True}}),
        _request(2, "session/new", {"cwd": str(workspace), "mcpServers": []}),
        # An entry the SDK cannot read is dropped by it: the session has no server, the answer is the same.
        _request(3, "session/new", {"cwd": str(workspace), "additionalDirectories": [str(other)],
                                    "mcpServers": [{"name": "half a server"}]}),
    ]
    early, handlers = await _both_ways(tmp_path, messages, API_KEY, folders)
    assert all(early.before_the_sdk(n) for n in range(4))
    assert early.answers == handlers.answers
    assert [m["id"] for m in early.message(0)["result"]["authMethods"]] == ["anthropic-api-key", "acp-hermes-setup"]


def _setups_config(home: Path) -> None:
    write_config(home, "api_key: sk-ant-saved-by-setup-0123456789\nmodel: claude-opus-9\n")


@pytest.mark.anyio
@pytest.mark.parametrize(("prepare", "env", "model"), [
    (lambda home: None, API_KEY, "claude-sonnet-5-5"),
    (_setups_config, {}, "claude-opus-9"),
    (_setups_config, {**API_KEY, "HERMES_MODEL": "claude-haiku-9"}, "claude-haiku-9"),
], ids=["no config file", "the file setup writes", "the environment over it"])
async def test_session_new_waits_for_no_settings_model(tmp_path: Path, prepare: Callable[[Path], None],
                                                       env: dict[str, str], model: str) -> None:
    """Importing pydantic and building the settings' models is most of a start: where the environment
    and a config file of setup's keys set everything, session/new is answered before either."""
    early, handlers = await _new_session_both_ways(tmp_path, env, prepare)
    assert early.answers == handlers.answers
    assert {"pydantic", "acp_hermes.config"}.isdisjoint(early.imported_before(1))
    assert early.message(1)["result"]["configOptions"][1]["currentValue"] == model


def _thinking_config(home: Path) -> None:
    write_config(home, "thought_level: high\nmodels: [claude-opus-9]\n")


def _trusted_project_model(home: Path) -> None:
    project = home.parent / "workspace" / ".hermes"
    project.mkdir(parents=True, exist_ok=True)
    (project / "config.yaml").write_text("model: claude-project-9\n", encoding="utf-8")


@pytest.mark.anyio
@pytest.mark.parametrize(("prepare", "env", "option", "value"), [
    (_thinking_config, API_KEY, 2, "high"),
    (_trusted_project_model, {**API_KEY, "ACP_HERMES_TRUST": "1"}, 1, "claude-project-9"),
], ids=["a config beyond setup's keys", "a trusted project's own model"])
async def test_settings_only_pydantic_reads_are_in_the_first_answer(
        tmp_path: Path, prepare: Callable[[Path], None], env: dict[str, str], option: int, value: str) -> None:
    early, handlers = await _new_session_both_ways(tmp_path, env, prepare)
    assert early.answers == handlers.answers
    assert early.message(1)["result"]["configOptions"][option]["currentValue"] == value


@pytest.mark.anyio
async def test_invalid_early_requests_get_exactly_the_sdks_errors(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    messages = [
        _request(0, "initialize", {"protocolVersion": 1}),
        _request(1, "initialize", {"protocolVersion": 70000}),  # out of the schema's range
        _request(2, "initialize", {"clientCapabilities": {}}),  # no version
        _request(3, "session/new", {"cwd": str(workspace)}),  # no mcpServers
        _request(4, "session/new", {"cwd": "relative/path", "mcpServers": []}),
        _request(5, "session/new", {"cwd": str(workspace / "missing"), "mcpServers": []}),
        _request(6, "session/new", {"cwd": 42, "mcpServers": []}),
        _request(7, "session/new", []),
    ]
    early, handlers = await _both_ways(tmp_path, messages, API_KEY, lambda home: workspace.mkdir(exist_ok=True))
    assert early.before_the_sdk(0) and not early.before_the_sdk(1)
    assert early.answers == handlers.answers
    codes = [early.message(n)["error"]["code"] for n in range(1, 8)]
    assert codes == [-32602, -32602, -32602, -32602, -32602, -32602, -32602]


@pytest.mark.anyio
async def test_a_burst_in_one_write_is_answered_in_order(tmp_path: Path) -> None:
    """The reception answers the first two; the third needs the SDK, so it and all after it wait for
    it, in arrival order, even those the reception could have answered."""
    workspace = tmp_path / "workspace"
    new = _request(1, "session/new", {"cwd": str(workspace), "mcpServers": []})
    messages = [INITIALIZE, new, {**new, "id": 2, "params": {"cwd": "relative", "mcpServers": []}},
                _request(3, "session/list", {}), {**new, "id": 4}, {**INITIALIZE, "id": 5}]
    served = await _serve(tmp_path, messages, API_KEY, lambda home: workspace.mkdir(exist_ok=True), tmp_path / "home")
    assert served.lines == sorted(served.lines)  # answered in the order asked
    assert [served.before_the_sdk(n) for n in range(6)] == [True, True, False, False, False, False]
    assert "sessionId" in served.message(1)["result"] and "sessionId" in served.message(4)["result"]
    assert served.message(2)["error"]["code"] == -32602 and "sessions" in served.message(3)["result"]
    assert served.message(5)["result"] == served.message(0)["result"]


@pytest.mark.anyio
async def test_prompts_sent_right_after_session_new_run_in_order(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(text_reply("First answer."), text_reply("Second answer."))
    fake_anthropic.script_auxiliary(text_reply("A title"), text_reply("A title"))
    workspace = tmp_path / "workspace"
    home = tmp_path / "hermes-home"
    async with raw_agent(tmp_path, fake_anthropic, env=TRACED_QUIETLY, home=home) as agent:
        await agent.write(_one_write(INITIALIZE, _request(1, "session/new", {"cwd": str(workspace),
                                                                              "mcpServers": []})))
        created = await _answers(agent, [1])
        session_id = agent.messages[created[0]]["result"]["sessionId"]
        prompts = [_request(n, "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})
                   for n, text in ((2, "first question"), (3, "second question"))]
        await agent.write(_one_write(*prompts))
        done = await _answers(agent, [2, 3])
        assert Served(agent, created).before_the_sdk(0)
    assert [agent.messages[n]["result"]["stopReason"] for n in done] == ["end_turn", "end_turn"]
    asked = [texts_of(body["messages"]) for body in fake_anthropic.stream_requests]
    assert len(asked) == 2 and "first question" in asked[0][-1] and "second question" in asked[1][-1]
    assert "First answer." in asked[1][-2]  # the second turn followed the first


@pytest.mark.anyio
async def test_a_prompt_long_after_session_new_is_read_where_the_reception_left_off(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    """The SDK loads while the reception waits for a message; it reads on from that same read."""
    fake_anthropic.script(text_reply("Here I am."))
    fake_anthropic.script_auxiliary(text_reply("A title"))
    workspace = tmp_path / "workspace"
    async with raw_agent(tmp_path, fake_anthropic, env=TRACED_QUIETLY) as agent:
        await agent.write(_one_write(INITIALIZE, _request(1, "session/new", {"cwd": str(workspace),
                                                                              "mcpServers": []})))
        created = await _answers(agent, [1])
        session_id = agent.messages[created[0]]["result"]["sessionId"]

        def menu_sent() -> bool:  # the session is built, so the SDK and the handlers serve
            return any(isinstance(m, dict) and m.get("method") == "session/update"
                       and m["params"]["update"]["sessionUpdate"] == "available_commands_update"
                       for m in agent.messages)

        await agent.wait_for(menu_sent, timeout=60)
        await agent.write(_one_write(_request(2, "session/prompt", {"sessionId": session_id,
                                                                    "prompt": [{"type": "text", "text": "Hi"}]})))
        done = await _answers(agent, [2])
        assert Served(agent, created).before_the_sdk(0)
    assert agent.messages[done[0]]["result"]["stopReason"] == "end_turn"


@pytest.mark.anyio
async def test_sigterm_before_the_sdk_loaded_still_stores_the_session_it_announced(tmp_path: Path) -> None:
    """A signal ends the server as a closed stdin does: a session the client was told of is stored."""
    workspace, home = tmp_path / "workspace", tmp_path / "hermes-home"
    async with raw_agent(tmp_path, None, env={**TRACED_QUIETLY, **API_KEY}, home=home) as agent:
        await agent.write(_one_write(INITIALIZE, _request(1, "session/new", {"cwd": str(workspace),
                                                                              "mcpServers": []})))
        created = await _answers(agent, [1])
        agent.process.send_signal(signal.SIGTERM)
        with anyio.fail_after(60):
            status = await agent.process.wait()
        assert Served(agent, created).before_the_sdk(0)
    assert status == 128 + signal.SIGTERM
    with SessionDB(home / "acp-hermes" / "state.db") as db:
        assert db.get_session(agent.messages[created[0]]["result"]["sessionId"]) is not None
    stderr = agent.stderr_path.read_text(encoding="utf-8", errors="replace")
    for noise in ("Traceback", "Exception ignored", "Task was destroyed", "never retrieved"):
        assert noise not in stderr, stderr


def _config_error(home: Path) -> None:
    write_config(home, "model: [an unclosed list\n")


def _damaged_database(home: Path) -> None:
    database = home / "acp-hermes" / "state.db"
    database.parent.mkdir(parents=True)
    database.write_bytes(b"this is not a database" * 100)


@pytest.mark.anyio
@pytest.mark.parametrize(("prepare", "env", "code", "words"), [
    (_config_error, API_KEY, -32603, "configuration error"),
    (lambda home: None, {}, -32000, "No Anthropic API key"),
    (_damaged_database, API_KEY, -32603, "acp-hermes doctor --repair"),
], ids=["config error", "no API key", "damaged state.db"])
async def test_session_new_that_cannot_succeed_gets_the_answer_it_always_had(
        tmp_path: Path, prepare: Callable[[Path], None], env: dict[str, str], code: int, words: str) -> None:
    early, handlers = await _new_session_both_ways(tmp_path, env, prepare)
    assert early.before_the_sdk(0)  # initialize needs none of it
    assert early.answers == handlers.answers
    error = early.message(1)["error"]
    assert error["code"] == code and words in json.dumps(error)
