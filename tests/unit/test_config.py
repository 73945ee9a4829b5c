"""Settings from the environment, the config file and the defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_hermes.config import Paths, Settings, load_settings

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
