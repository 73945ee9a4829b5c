"""Settings from the environment, the config file and the defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from acp_hermes.config import TOOLSETS, ConfigError, DelegationSettings, Paths, Settings, load_settings

SAVED = "sk-ant-api03-saved-by-setup-0123456789"


def saved_key(home: Path) -> Paths:
    paths = Paths(home)
    paths.own.mkdir(parents=True)
    paths.config_file.write_text(f"api_key: {SAVED}\n")
    return paths


@pytest.mark.parametrize("passed", ["ANTHROPIC_API_KEY", "$ANTHROPIC_API_KEY", "${ANTHROPIC_API_KEY}"])
def test_a_variable_name_passed_as_the_key_does_not_hide_the_saved_one(tmp_path: Path, passed: str) -> None:
    settings = load_settings({"ANTHROPIC_API_KEY": passed}, saved_key(tmp_path))
    assert settings.api_key is not None and settings.api_key.get_secret_value() == SAVED


def test_a_real_key_in_the_environment_wins_over_the_saved_one(tmp_path: Path) -> None:
    settings = load_settings({"ANTHROPIC_API_KEY": "sk-ant-from-the-editor-0123456789"}, saved_key(tmp_path))
    assert settings.api_key is not None and settings.api_key.get_secret_value() == "sk-ant-from-the-editor-0123456789"


def test_partial_thinking_budgets_keep_the_other_defaults() -> None:
    assert Settings(thinking_budgets={"low": 1_000}).thinking_budgets == {"low": 1_000, "medium": 8_192, "high": 32_000}


# --- delegation -------------------------------------------------------------------------------------


def config_file(home: Path, text: str) -> Paths:
    paths = Paths(home)
    paths.own.mkdir(parents=True)
    paths.config_file.write_text(text)
    return paths


def test_a_delegation_key_changes_that_one_and_keeps_the_other_defaults(tmp_path: Path) -> None:
    paths = config_file(tmp_path, "model: m-file\ndelegation: {max_concurrent: 5}\n")
    settings = load_settings({"HERMES_MODEL": "m-env"}, paths)
    assert settings.model == "m-env"  # environment overrides still apply beside a nested mapping
    assert settings.delegation == DelegationSettings(max_concurrent=5)
    assert (settings.delegation.enabled, settings.delegation.max_depth, settings.delegation.max_iterations) == (
        True, 2, 50)
    assert settings.delegation.toolsets == ["file", "terminal", "search", "todo", "skills"]
    assert settings.delegation.result_max_chars == 8_000
    assert load_settings({}, config_file(tmp_path / "empty", "delegation:\n")).delegation == DelegationSettings()
    assert Settings().delegation == DelegationSettings()


@pytest.mark.parametrize(("text", "expected"), [
    ("delegation: {max_concurent: 5}\n", "`delegation.max_concurent`: unknown key"),
    ("delegation: {toolsets: [file, browser, web]}\n",
     "`delegation.toolsets`: unknown toolsets browser, web; known: file, search, terminal, todo, skills, "
     "session_search"),
    ("delegation: {toolsets: [file, browser]}\n", "`delegation.toolsets`: unknown toolset browser; known: file"),
    ("delegation: {max_concurrent: 17}\n", "`delegation.max_concurrent`: Input should be less than or equal to 16"),
    ("delegation: {max_depth: 0}\n", "`delegation.max_depth`: Input should be greater than or equal to 1"),
    ("delegation: {result_max_chars: 100}\n", "`delegation.result_max_chars`: Input should be greater than or equal"),
    ("delegation: [file]\n", "`delegation`: Input should be a valid dictionary"),
])
def test_a_wrong_delegation_setting_names_its_key(tmp_path: Path, text: str, expected: str) -> None:
    paths = config_file(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_settings({}, paths)
    assert str(caught.value).startswith(f"{paths.config_file}: {expected}")


def test_toolsets_are_deduplicated_in_order_and_frozen() -> None:
    delegation = DelegationSettings(toolsets=["todo", "file", "todo"], enabled=False)
    assert delegation.toolsets == ["todo", "file"] and not delegation.enabled
    with pytest.raises(ValidationError):
        delegation.max_depth = 3


def test_every_toolset_holds_a_tool_and_the_defaults_are_toolsets() -> None:
    from acp_hermes_tools import core_tools

    assert {toolset for tool in core_tools() for toolset in tool.toolsets} == set(TOOLSETS)
    assert set(DelegationSettings().toolsets) <= set(TOOLSETS)


def test_configuration_page_documents_every_delegation_key() -> None:
    from tests.support import REPO_ROOT

    text = (REPO_ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    section = text.split("## Delegation", 1)[1].split("\n## ", 1)[0]
    assert [name for name in DelegationSettings.model_fields if f"| `{name}` |" not in section] == []
    assert [name for name in TOOLSETS if f"`{name}`" not in section] == []


@pytest.mark.parametrize("written", ["${ANTHROPIC_API_KEY}", "$ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY", "${MY_KEY}"])
def test_a_variable_name_written_as_the_saved_key_counts_as_no_key(tmp_path: Path, written: str) -> None:
    paths = Paths(tmp_path)
    paths.own.mkdir(parents=True)
    paths.config_file.write_text(f"api_key: '{written}'\n")
    assert load_settings({}, paths).api_key is None  # the file expands nothing: this is no key
    from_env = load_settings({"ANTHROPIC_API_KEY": "sk-ant-from-the-editor-0123456789"}, paths)
    assert from_env.api_key is not None and from_env.api_key.get_secret_value() == "sk-ant-from-the-editor-0123456789"


@pytest.mark.parametrize("written", ["debug", "Info", " warning ", "ERROR"])
def test_log_level_is_read_in_any_case(tmp_path: Path, written: str) -> None:
    paths = Paths(tmp_path)
    paths.own.mkdir(parents=True)
    paths.config_file.write_text(f"log_level: '{written}'\n")
    level = written.strip().upper()
    assert load_settings({}, paths).log_level == level
    assert load_settings({"ACP_HERMES_LOG_LEVEL": written}, Paths(tmp_path / "none")).log_level == level


@pytest.mark.parametrize(("text", "expected"), [
    ("model: ''\n", "`model`: a model name cannot be empty (the default is claude-sonnet-5-5)"),
    ("model: '  '\n", "`model`: a model name cannot be empty"),
    ("auxiliary_model: ''\n", "`auxiliary_model`: a model name cannot be empty (the default is claude-haiku-5-5)"),
])
def test_an_empty_model_name_is_refused(tmp_path: Path, text: str, expected: str) -> None:
    paths = Paths(tmp_path)
    paths.own.mkdir(parents=True)
    paths.config_file.write_text(text)
    with pytest.raises(ConfigError, match="cannot be empty") as refused:
        load_settings({}, paths)
    assert expected in str(refused.value)
    with pytest.raises(ConfigError, match=r"^environment: HERMES_MODEL=' ': a model name cannot be empty"):
        load_settings({"HERMES_MODEL": " "}, Paths(tmp_path / "none"))
