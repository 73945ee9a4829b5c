"""Config options, session modes and slash commands as ACP shapes; domain errors as JSON-RPC errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from acp_hermes.adapter.errors import AuthRequired, as_request_error, translated
from acp_hermes.adapter.options import available_commands_update, config_options, session_modes
from acp_hermes.config import THOUGHT_LEVELS, ConfigError, Settings, ThoughtLevel
from acp_hermes.core.choices import MODE_OPTION, MODEL_OPTION, THOUGHT_OPTION, SessionChoices
from acp_hermes.core.commands import COMMANDS, MenuEntry
from acp_hermes.core.errors import InvalidInput, ModeUnavailable, SessionCreationFailed, SessionNotFoundError
from acp_hermes.permissions.modes import Mode
from acp_hermes_memory.session_db import SessionDBCorrupt
from tests.support.schema_check import default_schema


def choices(mode: Mode = Mode.PLAN, model: str = "claude-x", level: ThoughtLevel = "medium") -> SessionChoices:
    return SessionChoices(mode, model, level)


def by_id(options: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {option["id"]: option for option in options}


def test_options_come_in_display_order_with_their_categories() -> None:
    options = config_options(choices(), Settings())
    assert [(o["id"], o["category"], o["type"]) for o in options] == [
        (MODE_OPTION, "mode", "select"), (MODEL_OPTION, "model", "select"),
        (THOUGHT_OPTION, "thought_level", "select"),
    ]


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("level", THOUGHT_LEVELS)
def test_each_current_value_is_one_of_its_options(mode: Mode, level: ThoughtLevel) -> None:
    options = config_options(choices(mode, "not-configured-model", level), Settings(models=["m-b"]))
    for option in options:
        assert option["currentValue"] in [o["value"] for o in option["options"]], option["id"]
    assert by_id(options)[MODE_OPTION]["currentValue"] == mode.value
    assert by_id(options)[THOUGHT_OPTION]["currentValue"] == level


def test_models_offered_put_the_session_model_first_without_duplicates() -> None:
    settings = Settings(model="m-default", models=["m-b", "m-session", "m-default"])
    model = by_id(config_options(choices(model="m-session"), settings))[MODEL_OPTION]
    assert [o["value"] for o in model["options"]] == ["m-session", "m-default", "m-b"]
    assert all(o["name"] == o["value"] for o in model["options"])


def test_thinking_descriptions_state_the_budget() -> None:
    settings = Settings(thinking_budgets={"low": 1_000, "high": 50_000})
    thought = by_id(config_options(choices(), settings))[THOUGHT_OPTION]
    described = {o["value"]: (o["name"], o["description"]) for o in thought["options"]}
    assert list(described) == list(THOUGHT_LEVELS)
    assert described["off"] == ("Off", "No extended thinking (fastest, cheapest).")
    assert described["low"] == ("Low", "Extended thinking, up to 1,000 tokens per model call.")
    assert described["high"] == ("High", "Extended thinking, up to 50,000 tokens per model call.")


def test_an_unconfigured_thinking_level_is_not_advertised_with_a_zero_budget() -> None:
    thought = by_id(config_options(choices(), Settings(thinking_budgets={"low": 1_000})))[THOUGHT_OPTION]
    medium = next(o for o in thought["options"] if o["value"] == "medium")
    assert medium["description"] == "Extended thinking, up to 8,192 tokens per model call."  # the default


@pytest.mark.parametrize("mode", list(Mode))
def test_legacy_modes_agree_with_the_mode_option(mode: Mode) -> None:
    modes = session_modes(choices(mode))
    option = by_id(config_options(choices(mode), Settings()))[MODE_OPTION]
    assert modes["currentModeId"] == option["currentValue"] == mode.value
    assert [(m["id"], m["name"], m["description"]) for m in modes["availableModes"]] == [
        (o["value"], o["name"], o["description"]) for o in option["options"]
    ]
    assert {m["id"] for m in modes["availableModes"]} == {m.value for m in Mode}


def test_where_bypass_is_not_offered_neither_list_names_it() -> None:
    withheld = SessionChoices(Mode.DEFAULT, "m", "off", unsandboxed=True, no_bypass="bypass is not available: …")
    offered = [m["id"] for m in session_modes(withheld)["availableModes"]]
    option = by_id(config_options(withheld, Settings()))[MODE_OPTION]
    assert offered == [o["value"] for o in option["options"]] == ["default", "accept-edits", "plan"]
    answer = {"sessionId": "s1", "modes": session_modes(withheld), "configOptions": [option]}
    assert default_schema().problems("NewSessionResponse", answer) == []


def test_bypass_without_a_sandbox_says_what_it_means_in_the_picker() -> None:
    allowed = SessionChoices(Mode.BYPASS, "m", "off", unsandboxed=True)
    bypass = next(m for m in session_modes(allowed)["availableModes"] if m["id"] == "bypass")
    assert bypass["name"] == "Bypass (no sandbox)"
    assert "every command runs with your rights, unasked" in bypass["description"]
    sandboxed = next(m for m in session_modes(choices(Mode.BYPASS))["availableModes"] if m["id"] == "bypass")
    assert sandboxed["name"] == "Bypass"


MENU = [MenuEntry(c.name, c.description, c.hint) for c in COMMANDS.values()]
SKILL = MenuEntry("deploy-docs", "Skill: publish the docs site", "what to do with this skill")


def test_available_commands_name_every_command_with_its_hint() -> None:
    update = available_commands_update([*MENU, SKILL])
    assert update["sessionUpdate"] == "available_commands_update"
    listed = {c["name"]: c for c in update["availableCommands"]}
    assert list(listed) == [*COMMANDS, "deploy-docs"]
    assert listed["deploy-docs"]["input"] == {"hint": "what to do with this skill"}
    assert "input" not in listed["help"]
    assert listed["mode"]["input"] == {"hint": COMMANDS["mode"].hint}
    for name, command in COMMANDS.items():
        assert listed[name]["description"] == command.description
        assert ("input" in listed[name]) is bool(command.hint)


@pytest.mark.parametrize("mode", list(Mode))
def test_option_shapes_are_valid_against_the_acp_schema(mode: Mode) -> None:
    schema = default_schema()
    options = config_options(choices(mode, "m-x", "high"), Settings(models=["m-y"]))
    assert schema.problems("SetSessionConfigOptionResponse", {"configOptions": options}) == []
    new_session = {"sessionId": "s1", "modes": session_modes(choices(mode)), "configOptions": options}
    assert schema.problems("NewSessionResponse", new_session) == []
    for update in (
        available_commands_update([*MENU, SKILL]),
        {"sessionUpdate": "config_option_update", "configOptions": options},
        {"sessionUpdate": "current_mode_update", "currentModeId": mode.value},
    ):
        assert schema.problems("SessionNotification", {"sessionId": "s1", "update": update}) == [], update


# -- errors ---------------------------------------------------------------------------------------


class NarrowerInvalid(InvalidInput):
    pass


ERRORS: list[tuple[Exception, int, str, dict[str, Any]]] = [
    (SessionNotFoundError("s9"), -32002, "Resource not found", {"sessionId": "s9", "details": "no session 's9'"}),
    (SessionCreationFailed("s1", "disk full"), -32603, "session s1 could not be created: disk full",
     {"sessionId": "s1", "details": "disk full"}),
    (InvalidInput("cwd: must be absolute"), -32602, "Invalid params", {"details": "cwd: must be absolute"}),
    (NarrowerInvalid("subclass"), -32602, "Invalid params", {"details": "subclass"}),
    (ModeUnavailable("bypass is not available: no sandbox"), -32602, "bypass is not available: no sandbox",
     {"details": "bypass is not available: no sandbox"}),  # the reason is the message editors show
    (ConfigError("config.yaml: bad key"), -32603, "acp-hermes configuration error: config.yaml: bad key",
     {"details": "acp-hermes configuration error: config.yaml: bad key"}),
    (AuthRequired("no API key", [{"id": "k", "name": "Key"}]), -32000, "Authentication required",
     {"details": "no API key", "authMethods": [{"id": "k", "name": "Key"}]}),
]


@pytest.mark.parametrize(("error", "code", "message", "data"), ERRORS, ids=lambda v: type(v).__name__)
def test_domain_errors_map_to_json_rpc(error: Exception, code: int, message: str, data: dict[str, Any]) -> None:
    translated_error = as_request_error(error)
    assert translated_error is not None
    assert (translated_error.code, str(translated_error), translated_error.data) == (code, message, data)
    assert default_schema().problems("Error", translated_error.to_error_obj()) == []


def test_a_damaged_database_names_the_file_and_the_repair() -> None:
    error = as_request_error(SessionDBCorrupt(Path("/h/state.db"), "file is not a database"))
    assert error is not None
    assert error.code == -32603
    assert "/h/state.db" in str(error)
    assert "file is not a database" in str(error)
    assert "acp-hermes doctor --repair" in str(error)
    assert error.data == {"details": str(error), "path": "/h/state.db"}


@pytest.mark.parametrize("error", [ValueError("x"), LookupError("x"), RuntimeError("x"), KeyError("x")])
def test_unknown_errors_are_left_to_the_sdk(error: Exception) -> None:
    assert as_request_error(error) is None


class Handlers:
    @translated
    async def ok(self, value: int, *, scale: int = 1) -> dict[str, int]:
        """Doubles."""
        return {"value": value * scale}

    @translated
    async def fail(self, error: Exception) -> None:
        raise error


@pytest.mark.anyio
async def test_translated_returns_what_the_handler_returns() -> None:
    assert await Handlers().ok(3, scale=2) == {"value": 6}
    assert Handlers.ok.__name__ == "ok"
    assert Handlers.ok.__doc__ == "Doubles."


@pytest.mark.parametrize(("error", "code", "message", "data"), ERRORS, ids=lambda v: type(v).__name__)
@pytest.mark.anyio
async def test_translated_raises_the_json_rpc_form(error: Exception, code: int, message: str,
                                                   data: dict[str, Any]) -> None:
    with pytest.raises(RequestError) as caught:
        await Handlers().fail(error)
    assert (caught.value.code, str(caught.value), caught.value.data) == (code, message, data)
    assert caught.value.__suppress_context__  # the domain error is not chained into the log


@pytest.mark.parametrize("error", [RequestError.invalid_params({"x": 1}), KeyError("k"), ValueError("v")])
@pytest.mark.anyio
async def test_translated_lets_other_errors_through_unchanged(error: Exception) -> None:
    with pytest.raises(type(error)) as caught:
        await Handlers().fail(error)
    assert caught.value is error
