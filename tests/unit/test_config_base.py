"""The settings start-up reads without pydantic are the ones pydantic would give, or none at all.

``config_base.early_settings`` answers ``session/new`` before the settings' models load; a value it
got wrong would be a session that opens with another model than the user configured. So for every
pairing of a config file and an environment below, whatever it returns is compared with the
validated settings on each attribute a new session's answer reads; and the cases every user has (no
file, the file ``setup`` writes) must take the fast path at all. ``config.load_settings`` builds the
``Settings`` without validation in those same cases: for every pairing, what it gives is what
validation gives, whole.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from acp_hermes import config
from acp_hermes.config import ConfigError, Paths, Settings, load_settings
from acp_hermes.config_base import EarlySettings, StartingSettings, early_settings, plain_settings, read_config_file

ATTRIBUTES = ("has_api_key", "model", "model_choices", "thought_level", "thinking_budgets", "default_mode",
              "sandbox", "allow_unsandboxed_bypass", "log_level")
KEY = "sk-ant-api03-a-real-looking-key-0123456789"

FILES = {
    "no file": None,
    "empty file": "",
    "only comments": "# api_key: nothing yet\n",
    "what setup writes": f"api_key: {KEY}\nbase_url: https://example.invalid\nmodel: claude-opus-9\n",
    "padded model": "model: '  claude-opus-9  '\n",
    "blank model": "model: '   '\n",
    "lower-case log level": "log_level: debug\n",
    "unknown log level": "log_level: loud\n",
    "a variable's name as the key": "api_key: ${ANTHROPIC_API_KEY}\n",
    "an empty key": "api_key: ''\n",
    "a number as the model": "model: 5\n",
    "a null value": "base_url:\n",
    "a number in a string": "max_iterations: '12'\n",
    "YAML's off": "thought_level: off\n",
    "another key": "thought_level: high\n",
    "an unknown key": "colour: blue\n",
    "not a mapping": "- a\n- list\n",
    "not YAML": "model: [unclosed\n",
}
ENVIRONMENTS = {
    "nothing": {},
    "a key": {"ANTHROPIC_API_KEY": KEY},
    "a variable's name": {"ANTHROPIC_API_KEY": "$ANTHROPIC_API_KEY"},
    "a blank key": {"ANTHROPIC_API_KEY": "   "},
    "a model": {"HERMES_MODEL": "claude-haiku-9"},
    "a blank model": {"HERMES_MODEL": "  "},
    "a log level": {"ACP_HERMES_LOG_LEVEL": " warning "},
    "a wrong log level": {"ACP_HERMES_LOG_LEVEL": "chatty"},
    "a base url": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"},
}


def _paths(home: Path, text: str | None) -> Paths:
    paths = Paths(home)
    if text is not None:
        paths.own.mkdir(parents=True, exist_ok=True)
        paths.config_file.write_text(text, encoding="utf-8")
    return paths


def _view(settings: StartingSettings) -> dict[str, object]:
    view = {name: getattr(settings, name) for name in ATTRIBUTES}
    view["thinking_budgets"] = dict(settings.thinking_budgets)
    view["trust.ask"] = settings.trust.ask
    return view


def _validated(env: dict[str, str], paths: Paths, monkeypatch: pytest.MonkeyPatch) -> Settings | str:
    """``load_settings`` with every value validated (its path for anything ``plain_settings`` is unsure of),
    or the ConfigError's message."""
    with monkeypatch.context() as patched:
        patched.setattr(config, "plain_settings", lambda values, env: None)
        try:
            return load_settings(env, paths)
        except ConfigError as exc:
            return str(exc)


@pytest.mark.parametrize(("file", "environment"), list(itertools.product(FILES, ENVIRONMENTS)))
def test_what_start_up_reads_without_pydantic_is_what_pydantic_reads(tmp_path: Path, file: str, environment: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    paths, env = _paths(tmp_path, FILES[file]), ENVIRONMENTS[environment]
    early = early_settings(env, paths)
    validated = _validated(env, paths, monkeypatch)
    if isinstance(validated, str):
        assert early is None  # only pydantic may say what is wrong
    elif early is not None:
        assert _view(early) == _view(validated)


def _frozen_everywhere(settings: Settings) -> None:
    """Assigning to the settings or to any section of them is refused, as for validated settings."""
    with pytest.raises(ValidationError, match="frozen"):
        settings.model = "another"  # type: ignore[misc]
    sections = [getattr(settings, name) for name in type(settings).model_fields
                if isinstance(getattr(settings, name), BaseModel)]
    assert len(sections) == 7
    for section in sections:
        with pytest.raises(ValidationError, match="frozen"):
            setattr(section, next(iter(type(section).model_fields)), None)


@pytest.mark.parametrize(("file", "environment"), list(itertools.product(FILES, ENVIRONMENTS)))
def test_settings_built_without_validation_are_the_validated_ones(tmp_path: Path, file: str, environment: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    paths, env = _paths(tmp_path, FILES[file]), ENVIRONMENTS[environment]
    validated = _validated(env, paths, monkeypatch)
    try:
        fast = plain_settings(read_config_file(paths.config_file), env) is not None
    except ConfigError:
        fast = False
    if fast:  # then Settings is not validated at all
        monkeypatch.setattr(Settings, "model_validate", None)
    try:
        loaded: Settings | str = load_settings(env, paths)
    except ConfigError as exc:
        loaded = str(exc)
    assert loaded == validated  # the same settings, or the same error
    assert fast == (early_settings(env, paths) is not None)
    if isinstance(loaded, Settings) and isinstance(validated, Settings):
        assert loaded.model_dump() == validated.model_dump()  # every section's every value
        assert loaded.model_fields_set == validated.model_fields_set
        secrets = [settings.api_key.get_secret_value() if settings.api_key else None for settings in (loaded,
                                                                                                     validated)]
        assert secrets[0] == secrets[1]
        _frozen_everywhere(loaded)
        _frozen_everywhere(validated)


def test_the_fast_path_leaves_to_validation_what_pydantic_changes_or_refuses(tmp_path: Path) -> None:
    assert load_settings({}, _paths(tmp_path / "a", FILES["a number in a string"])).max_iterations == 12
    assert load_settings({}, _paths(tmp_path / "b", FILES["YAML's off"])).thought_level == "off"
    with pytest.raises(ConfigError, match="`colour`: unknown key"):
        load_settings({}, _paths(tmp_path / "c", FILES["an unknown key"]))
    with pytest.raises(ConfigError, match="ACP_HERMES_LOG_LEVEL='chatty'"):
        load_settings(ENVIRONMENTS["a wrong log level"], _paths(tmp_path / "d", None))


@pytest.mark.parametrize("file", ["no file", "empty file", "only comments", "what setup writes", "padded model",
                                  "lower-case log level", "a variable's name as the key"])
@pytest.mark.parametrize("environment", ["nothing", "a key", "a variable's name", "a model", "a log level"])
def test_no_file_and_setups_file_take_the_fast_path(tmp_path: Path, file: str, environment: str) -> None:
    assert isinstance(early_settings(ENVIRONMENTS[environment], _paths(tmp_path, FILES[file])), EarlySettings)


@pytest.mark.parametrize("file", ["another key", "an unknown key", "a number as the model", "a null value",
                                  "not YAML", "not a mapping", "blank model", "unknown log level",
                                  "a number in a string", "YAML's off"])
def test_anything_else_waits_for_pydantic(tmp_path: Path, file: str) -> None:
    assert early_settings({}, _paths(tmp_path, FILES[file])) is None
