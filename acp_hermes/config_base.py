"""Where acp-hermes keeps its files, and the configuration that can be read without pydantic.

Importing pydantic and building the settings' models costs more than half of what an editor waits
for before its new thread opens (~140 ms of ~220 ms on a 2-core machine). Everything here is plain
Python, so start-up reads it on the way to answering ``initialize`` and ``session/new``: where the
files are, and — when the environment and a config file of only the keys ``setup`` writes set them —
the few settings that answer reads (``EarlySettings``). ``config`` validates everything else, and builds
its ``Settings`` without validation where ``plain_settings`` is sure of them.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from acp_hermes.permissions.modes import Mode
from acp_hermes_memory.values import value

log = logging.getLogger(__name__)

DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_AUXILIARY_MODEL = "claude-haiku-5-5"
ThoughtLevel = Literal["off", "low", "medium", "high"]
THOUGHT_LEVELS: tuple[ThoughtLevel, ...] = ("off", "low", "medium", "high")
DEFAULT_THINKING_BUDGETS: dict[ThoughtLevel, int] = {"low": 2_048, "medium": 8_192, "high": 32_000}

ENV_API_KEY = "ANTHROPIC_API_KEY"
ENV_BASE_URL = "ANTHROPIC_BASE_URL"
ENV_MODEL = "HERMES_MODEL"
ENV_HOME = "HERMES_HOME"
ENV_LOG_LEVEL = "ACP_HERMES_LOG_LEVEL"
ENV_TRUST = "ACP_HERMES_TRUST"  # "1": trust every workspace this process serves (headless use, like --trust)


class ConfigError(Exception):
    """The configuration cannot be used; the message names the file and the key."""


@value
class Paths:
    """Where every file lives, derived from ``HERMES_HOME``."""

    home: Path

    @property
    def own(self) -> Path:
        return self.home / "acp-hermes"

    @property
    def config_file(self) -> Path:
        return self.own / "config.yaml"

    @property
    def permissions_file(self) -> Path:
        return self.own / "permissions.yaml"

    @property
    def trust_file(self) -> Path:
        """Which repositories the user trusts (or not), and their approved MCP servers (``memory.trust_store``)."""
        return self.own / "trust.json"

    @property
    def logs(self) -> Path:
        return self.own / "logs"

    @property
    def state_db(self) -> Path:
        return self.own / "state.db"

    @property
    def quarantine(self) -> Path:
        """What the sandbox moved out of a workspace: files a command created where they would run later."""
        return self.own / "quarantine"

    @property
    def checkpoints(self) -> Path:
        """The shadow git stores of workspace checkpoints (``/rollback``), one per workspace."""
        return self.own / "checkpoints"

    @property
    def skills_history(self) -> Path:
        """The ledger of every change to a skill's files (``acp-hermes skills history``)."""
        return self.own / "skills-history.jsonl"

    @property
    def skills_upkeep(self) -> Path:
        """When the skills' lifecycle last ran (at most once a day)."""
        return self.own / "skills-upkeep.json"

    @property
    def project_skill_scans(self) -> Path:
        """Verdicts of project skills' scans, by content hash (never kept in the repository)."""
        return self.own / "project-skill-scans.json"

    @property
    def import_index(self) -> Path:
        """What the model SDK's lazy import read from its packages, kept so the next start need not
        read it again (``model.lazy_packages``; rebuilt when missing)."""
        return self.own / "import-index.json"

    @property
    def memories(self) -> Path:
        return self.home / "memories"

    @property
    def soul(self) -> Path:
        return self.home / "SOUL.md"

    @property
    def skills(self) -> Path:
        return self.home / "skills"


def paths_from_env(env: Mapping[str, str] | None = None) -> Paths:
    env = os.environ if env is None else env
    home = env.get(ENV_HOME) or os.path.join(os.path.expanduser("~"), ".hermes")
    return Paths(Path(home).expanduser().resolve())


def home_problem(paths: Paths) -> str | None:
    """Why acp-hermes cannot keep its files under ``HERMES_HOME`` (one sentence), or None.

    A file where a directory belongs, or a directory this user cannot read, write and enter, fails
    every read and write beneath it (and ``Path.exists`` raises instead of answering); this names the
    folder and what to do instead, so no command and no ``session/new`` has to meet the error first.
    """
    for directory, label, purpose in (
        (paths.home, f"HERMES_HOME {paths.home}", "set HERMES_HOME to a directory (or move the file away)"),
        (paths.own, str(paths.own), "move it away (acp-hermes keeps its configuration, logs and sessions in "
                                    "that directory)"),
    ):
        try:
            found = directory.stat()
        except FileNotFoundError:
            return _uncreatable(directory, label)
        except OSError as exc:  # a parent folder this user cannot enter
            return (f"{label} cannot be reached ({exc.strerror or exc}): give this user access to its parent "
                    "folders, or set HERMES_HOME to a directory of your own")
        if not stat.S_ISDIR(found.st_mode):
            return f"{label} is a file, not a directory: {purpose}"
        if not os.access(directory, os.R_OK | os.W_OK | os.X_OK):
            fix = (f"chmod u+rwx {directory}" if found.st_uid == os.geteuid()
                   else f"it belongs to user {found.st_uid}: chown it to this user")
            return (f"{label} cannot be read and written by this user: give it back its permissions ({fix}) "
                    "or set HERMES_HOME to a directory of your own")
    return None


def _uncreatable(directory: Path, label: str) -> str | None:
    """Why a missing ``directory`` cannot be created, or None when its nearest existing parent allows it."""
    parent = next(p for p in directory.parents if os.path.lexists(p))
    if parent.is_dir() and os.access(parent, os.W_OK | os.X_OK):
        return None
    return (f"{label} does not exist and cannot be created: {parent} is not a directory this user can write; "
            "set HERMES_HOME to a directory of your own")


def read_config_file(path: Path) -> dict[str, Any]:
    """The config file as a mapping ({} when absent); YAML is imported only if there is one."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except NotADirectoryError as exc:  # HERMES_HOME (or its acp-hermes/) is a file
        blocker = next((parent for parent in path.parents if parent.exists() and not parent.is_dir()), path.parent)
        raise ConfigError(f"{blocker} is a file, not a directory: acp-hermes keeps its configuration and sessions "
                          "beneath it (set HERMES_HOME to a directory, or move the file away)") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from exc
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys to values")
    return data


_VARIABLE_NAME = re.compile(r"\$?\{?[A-Z][A-Z0-9_]*\}?")


def names_a_variable(value: object) -> bool:
    """Whether ``value``, given as an API key, is the name of a variable rather than a key
    (``ANTHROPIC_API_KEY``, ``$ANTHROPIC_API_KEY``, ``${ANTHROPIC_API_KEY}``): neither an editor's ``env``
    nor config.yaml expands variables, so such a value reaches us as written."""
    return isinstance(value, str) and _VARIABLE_NAME.fullmatch(value.strip()) is not None


def _real_key(value: str | None, warn: bool) -> str | None:
    """The environment's API key, unless it is the name of a variable rather than a key (an editor
    config that passes the literal string ``ANTHROPIC_API_KEY`` when the variable is unset): then
    the key saved by ``setup`` is used instead."""
    if value and names_a_variable(value):
        if warn:
            log.warning("ignoring %s=%r: that is a variable name, not an API key", ENV_API_KEY, value)
        return None
    return value


# The settings the environment sets over the config file, each by the variable named here.
ENVIRONMENT_SETTINGS = {"api_key": ENV_API_KEY, "base_url": ENV_BASE_URL, "model": ENV_MODEL,
                        "log_level": ENV_LOG_LEVEL}


def environment_overrides(env: Mapping[str, str], *, warn: bool = True) -> dict[str, str]:
    """What the environment sets of ``ENVIRONMENT_SETTINGS`` (an empty value sets nothing); ``warn``:
    log an API key that is a variable's name, which is ignored."""
    found = {
        "api_key": _real_key(env.get(ENV_API_KEY), warn),
        "base_url": env.get(ENV_BASE_URL),
        "model": env.get(ENV_MODEL),
        "log_level": env.get(ENV_LOG_LEVEL, "").strip() or None,
    }
    return {key: text for key, text in found.items() if text}


def trust_from_env(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``ACP_HERMES_TRUST`` asks this process to trust every workspace it serves (headless use)."""
    env = os.environ if env is None else env
    return env.get(ENV_TRUST, "").strip().lower() in ("1", "true", "yes", "on")


# -- the settings a new session's answer reads, before pydantic has loaded


class _TrustChoice(Protocol):
    @property
    def ask(self) -> bool: ...


class StartingSettings(Protocol):
    """What answering ``session/new`` reads of the settings: ``config.Settings`` has all of it, and
    ``EarlySettings`` has it without pydantic."""

    @property
    def has_api_key(self) -> bool: ...
    @property
    def model(self) -> str: ...
    @property
    def model_choices(self) -> list[str]: ...
    @property
    def thought_level(self) -> ThoughtLevel: ...
    @property
    def thinking_budgets(self) -> Mapping[ThoughtLevel, int]: ...
    @property
    def default_mode(self) -> Mode: ...
    @property
    def sandbox(self) -> Literal["auto", "off"]: ...
    @property
    def allow_unsandboxed_bypass(self) -> bool: ...
    @property
    def log_level(self) -> Literal["DEBUG", "INFO", "WARNING", "ERROR"]: ...
    @property
    def trust(self) -> _TrustChoice: ...


LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
LOG_LEVELS: tuple[LogLevel, ...] = ("DEBUG", "INFO", "WARNING", "ERROR")
# The config file's keys read without pydantic: those ``setup`` writes and the environment overrides. A
# file with any other key (or a value that is not a string) waits for ``config.load_settings``.
PLAIN_KEYS = frozenset(ENVIRONMENT_SETTINGS)


@value
class _DefaultTrust:
    ask: bool = True


@value
class EarlySettings:
    """The settings ``config.load_settings`` gives for the same environment and file, in the part
    ``session/new`` reads (``tests/unit/test_config_base.py`` holds the two equal): every key the
    file and the environment do not set is its default."""

    api_key: str | None
    model: str
    log_level: LogLevel
    thought_level: ThoughtLevel = "off"
    default_mode: Mode = Mode.DEFAULT
    sandbox: Literal["auto", "off"] = "auto"
    allow_unsandboxed_bypass: bool = False
    trust: _DefaultTrust = _DefaultTrust()

    @property
    def has_api_key(self) -> bool:
        return self.api_key is not None and bool(self.api_key.strip())

    @property
    def model_choices(self) -> list[str]:
        return [self.model]

    @property
    def thinking_budgets(self) -> Mapping[ThoughtLevel, int]:
        return DEFAULT_THINKING_BUDGETS


def early_settings(env: Mapping[str, str], paths: Paths) -> EarlySettings | None:
    """The settings a start-up answer reads, when they are sure without pydantic (``plain_settings``), or
    None (a key, a value or an error only pydantic can judge). Logs nothing: the validated load that
    follows says what it ignores."""
    try:
        values = plain_settings(read_config_file(paths.config_file), env)
    except ConfigError:
        return None
    if values is None:
        return None
    return EarlySettings(api_key=values.get("api_key"), model=values.get("model", DEFAULT_MODEL),
                         log_level=cast(LogLevel, values.get("log_level", "INFO")))  # a level _plain checked


def plain_settings(file_values: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, str] | None:
    """The settings a config file of ``file_values`` and the environment set, as ``config.Settings`` holds
    them after validation (the model name stripped, the log level upper-case), when that is sure without
    pydantic: a file of only ``PLAIN_KEYS`` with string values, and values ``config.Settings`` takes as
    they are. None otherwise. Every other setting is its default. Logs nothing."""
    if not all(key in PLAIN_KEYS and isinstance(text, str) for key, text in file_values.items()):
        return None
    if not _plain(file_values):
        return None  # the file is validated on its own first, as config.load_settings does
    values = {key: text for key, text in file_values.items() if not (key == "api_key" and names_a_variable(text))}
    values.update(environment_overrides(env, warn=False))
    if not _plain(values):
        return None
    if "model" in values:
        values["model"] = values["model"].strip()
    if "log_level" in values:
        values["log_level"] = values["log_level"].strip().upper()
    return values


def _plain(values: Mapping[str, str]) -> bool:
    """Whether ``config.Settings`` takes these string values as they are: a model name that is not blank
    (it is stripped), a known log level in any case."""
    model, level = values.get("model", DEFAULT_MODEL), values.get("log_level", "INFO")
    return bool(model.strip()) and level.strip().upper() in LOG_LEVELS
