"""Settings from the environment, the config file and the defaults."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from acp_hermes import config
from acp_hermes.config import (
    TOOLSETS,
    ConfigError,
    DelegationSettings,
    Paths,
    Settings,
    constructed,
    load_settings,
)

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


# --- settings built without validation (config.constructed) --------------------------------------------

SETTINGS_MODELS = [item for item in vars(config).values()
                   if isinstance(item, type) and issubclass(item, BaseModel) and item.__module__ == config.__name__]


def _outcome(make: Any) -> object:
    try:
        return make()
    except ValidationError as exc:
        return exc.errors()


@pytest.mark.parametrize("model", SETTINGS_MODELS, ids=lambda model: model.__name__)
def test_every_settings_model_constructed_from_its_defaults_is_the_validated_one(model: type[BaseModel]) -> None:
    """A settings model added later is checked too: its defaults made without validation must be the
    validated ones (a model validator that changes them would show here), or validation runs."""
    assert model.model_config.get("defer_build") is True  # its validator is built when first used, not on import
    made, validated = _outcome(lambda: constructed(model, {})), _outcome(lambda: model.model_validate({}))
    assert made == validated
    if isinstance(made, BaseModel) and isinstance(validated, BaseModel):
        assert made.model_dump() == validated.model_dump()


def test_a_model_construction_cannot_make_is_validated() -> None:
    class Checked(BaseModel):
        model_config = ConfigDict(frozen=True, defer_build=True)

        name: str  # no default: only validation can say it is missing
        size: int = Field(default=-1, validate_default=True)

        @field_validator("size")
        @classmethod
        def _positive(cls, value: int) -> int:
            return abs(value)

    with pytest.raises(ValidationError, match="name"):
        constructed(Checked, {})
    assert constructed(Checked, {"name": "x"}).size == 1  # the default, validated


SUBPROCESS_PROBE = """
import json, sys, tempfile
import pydantic
import acp_hermes.config as config

models = [item for item in vars(config).values()
          if isinstance(item, type) and issubclass(item, pydantic.BaseModel) and item.__module__ == config.__name__]
home = tempfile.mkdtemp()
settings = config.load_settings({"HERMES_HOME": home})
if sys.argv[1] == "validate":
    config.Settings.model_validate({})
# model_rebuild() answers None for a model whose validator is already built; leaves come before the models
# holding them, so rebuilding one builds nothing of the next.
print(json.dumps({"built": [model.__name__ for model in models if model.model_rebuild() is None],
                  "models": len(models), "delegation": settings.delegation.max_depth}))
"""


@pytest.mark.parametrize("then", ["nothing", "validate"])
def test_importing_the_settings_and_loading_them_from_no_file_builds_no_validator(then: str) -> None:
    import json

    done = subprocess.run([sys.executable, "-c", SUBPROCESS_PROBE, then], capture_output=True, text=True,
                          check=True)
    report = json.loads(done.stdout)
    assert report["models"] == len(SETTINGS_MODELS) and report["delegation"] == 2
    if then == "nothing":
        assert report["built"] == []
    else:  # the probe sees a validator built when one is
        assert "Settings" in report["built"] and "DelegationSettings" in report["built"]
