"""Settings: environment > config file > defaults.

The data home ``HERMES_HOME`` (default ``~/.hermes``) is shared with Hermes Agent; acp-hermes
keeps its own files in ``$HERMES_HOME/acp-hermes/``. The config file is YAML and validated
with pydantic, so a mistake is reported with the key that holds it. Where the files are, and what
needs no validation, is in ``config_base`` (named here too: every caller imports them from here): the
settings of no config file, or of one of ``setup``'s keys, are built without validation, and a model's
validator is built only when something is validated (``defer_build``), so start-up builds none.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from acp_hermes.config_base import (
    DEFAULT_AUXILIARY_MODEL,
    DEFAULT_THINKING_BUDGETS,
    ENVIRONMENT_SETTINGS,
    environment_overrides,
    plain_settings,
)
from acp_hermes.config_base import DEFAULT_MODEL as DEFAULT_MODEL
from acp_hermes.config_base import ENV_API_KEY as ENV_API_KEY
from acp_hermes.config_base import ENV_BASE_URL as ENV_BASE_URL
from acp_hermes.config_base import ENV_HOME as ENV_HOME
from acp_hermes.config_base import ENV_MODEL as ENV_MODEL
from acp_hermes.config_base import ENV_TRUST as ENV_TRUST
from acp_hermes.config_base import THOUGHT_LEVELS as THOUGHT_LEVELS
from acp_hermes.config_base import ConfigError as ConfigError
from acp_hermes.config_base import Paths as Paths
from acp_hermes.config_base import ThoughtLevel as ThoughtLevel
from acp_hermes.config_base import home_problem as home_problem
from acp_hermes.config_base import names_a_variable as names_a_variable
from acp_hermes.config_base import paths_from_env as paths_from_env
from acp_hermes.config_base import read_config_file as read_config_file
from acp_hermes.config_base import trust_from_env as trust_from_env
from acp_hermes.permissions.modes import Mode
from acp_hermes_memory.values import value
from acp_hermes_tools.toolsets import DEFAULT_CHILD_TOOLSETS, TOOLSETS

log = logging.getLogger(__name__)


class Price(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float | None = Field(default=None, ge=0)
    cache_write_5m: float | None = Field(default=None, ge=0)
    cache_write_1h: float | None = Field(default=None, ge=0)


class DelegationSettings(BaseModel):
    """Subagents (``delegate_task``): the config file's ``delegation:`` mapping."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    enabled: bool = True  # offer delegate_task at all
    max_concurrent: int = Field(default=3, ge=1, le=16)  # children of one batch running at once; more wait
    max_depth: int = Field(default=2, ge=1, le=5)  # sessions at depth < max_depth (top level: 0) may delegate
    max_iterations: int = Field(default=50, ge=1)  # model calls per child turn (a task may ask for fewer)
    toolsets: list[str] = Field(default_factory=lambda: list(DEFAULT_CHILD_TOOLSETS))  # a child's by default
    result_max_chars: int = Field(default=8_000, ge=500)  # how much of a child's answer its parent reads

    @field_validator("toolsets", mode="after")
    @classmethod
    def _known_toolsets(cls, value: list[str]) -> list[str]:
        """Only names of ``tools.toolsets.TOOLSETS``, each once: a typo would otherwise leave children without
        tools unnoticed."""
        unknown = [name for name in value if name not in TOOLSETS]
        if unknown:
            raise PydanticCustomError(
                "unknown_toolset",
                "unknown {toolsets} {unknown}; known: {known}",
                {"toolsets": "toolset" if len(unknown) == 1 else "toolsets", "unknown": ", ".join(unknown),
                 "known": ", ".join(TOOLSETS)},
            )
        return list(dict.fromkeys(value))


class CheckpointSettings(BaseModel):
    """Checkpoints and ``/rollback``: the config file's ``checkpoints:`` mapping."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    enabled: bool = True  # a shadow-git checkpoint of the workspace before each turn's first change
    max_file_size_mb: float = Field(default=10.0, gt=0)  # bigger files are left out of checkpoints
    max_files: int = Field(default=50_000, ge=1)  # a workspace with more files gets no checkpoints (one notice)
    keep: int = Field(default=500, ge=1)  # checkpoints kept per workspace; older ones are pruned
    max_age_days: float = Field(default=30.0, gt=0)  # checkpoints older than this are pruned


class BudgetSettings(BaseModel):
    """Spending limits: the config file's ``budget:`` mapping. None is no limit."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    session_usd: float | None = Field(default=None, gt=0)  # a session's cost, its subagents' included
    turn_usd: float | None = Field(default=None, gt=0)  # one turn's cost, its subagents' included
    session_tokens: int | None = Field(default=None, gt=0)  # a session's tokens: the limit for unpriced models


class SkillsSettings(BaseModel):
    """Skills' lifecycle and curation: the config file's ``skills:`` mapping."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    stale_after_days: int = Field(default=30, ge=1)  # a skill the agent created, unused this long, is stale
    archive_after_days: int = Field(default=90, ge=1)  # ... and this long, moved to skills/.archive/
    curator: bool = False  # a daily auxiliary-model pass proposing merges and fixes of the agent's skills

    @model_validator(mode="after")
    def _archive_after_stale(self) -> SkillsSettings:
        if self.archive_after_days < self.stale_after_days:
            raise ValueError("archive_after_days must be at least stale_after_days (a skill goes stale first)")
        return self


class MemorySettings(BaseModel):
    """External memory providers: the config file's ``memory:`` mapping."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    provider: str | list[str] | None = None  # one provider's name; a second one is refused (the first is used)

    @property
    def providers(self) -> list[str]:
        if self.provider is None:
            return []
        return [self.provider] if isinstance(self.provider, str) else list(self.provider)


class WebSettings(BaseModel):
    """The web tools the API runs itself (``web_search``, ``web_fetch``): the config file's ``web:`` mapping."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    search: bool = True  # offer the API's web search
    fetch: bool = False  # offer the API's web fetch (reads any public page the model names)
    allowed_domains: list[str] = Field(default_factory=list)  # only these domains (not with blocked_domains)
    blocked_domains: list[str] = Field(default_factory=list)  # never these domains
    max_uses: int = Field(default=5, ge=1)  # searches (and fetches) per model request

    @model_validator(mode="after")
    def _one_domain_list(self) -> WebSettings:
        if self.allowed_domains and self.blocked_domains:
            raise ValueError("give allowed_domains or blocked_domains, not both (the API takes one)")
        return self


class TrustSettings(BaseModel):
    """Workspace trust: the config file's ``trust:`` mapping (``docs/trust.md``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    ask: bool = True  # ask before a workspace's files change what the agent does; false: trust every workspace


HookEvent = Literal["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SubagentStop",
                   "PreCompact", "SessionEnd"]
HOOK_EVENTS: tuple[HookEvent, ...] = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop",
                                      "SubagentStop", "PreCompact", "SessionEnd")
DEFAULT_HOOK_TIMEOUT = 60.0


class HookCommand(BaseModel):
    """One hook: a command line the user's shell runs (Claude Code's ``{type: command, command, timeout}``)."""

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)  # Claude Code's other keys are left alone

    type: Literal["command"] = "command"
    command: str = Field(min_length=1)
    timeout: float = Field(default=DEFAULT_HOOK_TIMEOUT, gt=0)


class HookGroup(BaseModel):
    """Hooks that run when ``matcher`` (a regular expression over tool names; empty: every one) matches."""

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    matcher: str = ""
    hooks: list[HookCommand] = Field(default_factory=list)

    @field_validator("matcher", mode="before")
    @classmethod
    def _compiles(cls, value: Any) -> Any:
        """A matcher that is no regular expression is said at start-up, not skipped at the first tool call."""
        if value is None:
            return ""
        if isinstance(value, str) and value not in ("", "*"):
            try:
                re.compile(value)
            except re.error as exc:
                raise PydanticCustomError("bad_matcher", "not a regular expression ({why})", {"why": str(exc)}) from exc
        return value


HooksConfig = dict[HookEvent, list[HookGroup]]


class Settings(BaseModel):
    """Everything configurable. Field names are the config file's keys."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    api_key: SecretStr | None = None
    base_url: str | None = None
    model: str = DEFAULT_MODEL
    models: list[str] = Field(default_factory=list)
    auxiliary_model: str = DEFAULT_AUXILIARY_MODEL
    thought_level: ThoughtLevel = "off"
    thinking_budgets: dict[ThoughtLevel, int] = Field(default_factory=lambda: dict(DEFAULT_THINKING_BUDGETS))
    max_output_tokens: int = Field(default=16_384, ge=1)
    max_iterations: int = Field(default=90, ge=1)
    max_retries: int = Field(default=4, ge=0)
    retry_base_delay: float = Field(default=1.0, ge=0)
    retry_max_delay: float = Field(default=30.0, ge=0)
    request_timeout: float = Field(default=600.0, gt=0)
    cache_ttl: Literal["5m", "1h"] = "5m"
    system_message: str | None = None
    default_mode: Mode = Mode.DEFAULT
    compression: bool = True  # compact the conversation when it fills compression_threshold of the window
    compression_threshold: float = Field(default=0.5, gt=0.05, le=0.95)
    memory_flush: bool = True  # before compacting, let the model save memories in one hidden call
    learning_loop: bool = True  # background reviews that keep memory and skills current
    memory_nudge_interval: int = Field(default=10, ge=0)  # user turns between memory reviews (0: off)
    skill_nudge_interval: int = Field(default=10, ge=0)  # tool-using model calls between skill reviews (0: off)
    skills_external_dirs: list[str] = Field(default_factory=list)  # more read-only skill folders (team, shared)
    mcp_servers: dict[str, Any] = Field(default_factory=dict)  # MCP servers every session connects (tools.mcp.specs)
    sandbox: Literal["auto", "off"] = "auto"  # run commands in an OS sandbox where one is available
    # Offer bypass where no sandbox runs: every command then runs with the user's rights, unasked. Read from
    # this file only (no environment variable, no project file): the user's own, explicit choice.
    allow_unsandboxed_bypass: bool = Field(default=False, strict=True)
    sandbox_network: bool = False  # let sandboxed commands use the network without asking
    sandbox_env: list[str] = Field(default_factory=list)  # more environment variables sandboxed commands see
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    memory_char_limit: int = Field(default=2_200, ge=100)
    user_char_limit: int = Field(default=1_375, ge=100)
    context_file_max_chars: int = Field(default=20_000, ge=1_000)
    prices: dict[str, Price] = Field(default_factory=dict)
    context_windows: dict[str, int] = Field(default_factory=dict)
    delegation: DelegationSettings = Field(default_factory=DelegationSettings)  # subagents (delegate_task)
    checkpoints: CheckpointSettings = Field(default_factory=CheckpointSettings)  # /rollback's shadow git store
    budget: BudgetSettings = Field(default_factory=BudgetSettings)  # spending limits (/budget)
    web: WebSettings = Field(default_factory=WebSettings)  # the API's web search and fetch
    memory: MemorySettings = Field(default_factory=MemorySettings)  # an external memory provider
    skills: SkillsSettings = Field(default_factory=SkillsSettings)  # skills' lifecycle and curation pass
    trust: TrustSettings = Field(default_factory=TrustSettings)  # whether a workspace's files are asked about
    hooks: HooksConfig = Field(default_factory=dict)  # the user's own programs at key moments (core.hooks)

    @field_validator("sandbox", "thought_level", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any, info: ValidationInfo) -> Any:
        """YAML reads an unquoted ``off`` as false and ``on`` as true: take them as the words meant."""
        if value is False:
            return "off"
        if value is True and info.field_name == "sandbox":
            return "auto"
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _any_case(cls, value: Any) -> Any:
        """``debug`` is ``DEBUG``, as for ``--log-level`` and ``ACP_HERMES_LOG_LEVEL``."""
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("model", "auxiliary_model", mode="after")
    @classmethod
    def _named(cls, value: str, info: ValidationInfo) -> str:
        """An empty model name would reach the API as ``model: ""`` and fail every turn: refuse it here."""
        if not value.strip():
            default = DEFAULT_MODEL if info.field_name == "model" else DEFAULT_AUXILIARY_MODEL
            raise PydanticCustomError("empty_model", "a model name cannot be empty (the default is {default})",
                                      {"default": default})
        return value.strip()

    @field_validator("delegation", "checkpoints", "budget", "web", "memory", "skills", "trust", "hooks",
                     mode="before")
    @classmethod
    def _empty_section(cls, value: Any) -> Any:
        """A section with every key under it commented out is YAML's null: the defaults."""
        return {} if value is None else value

    @field_validator("thinking_budgets", mode="after")
    @classmethod
    def _budget_for_every_level(cls, value: dict[ThoughtLevel, int]) -> dict[ThoughtLevel, int]:
        """A config naming some levels changes those; the others keep their default budgets."""
        return {**DEFAULT_THINKING_BUDGETS, **value}

    @property
    def has_api_key(self) -> bool:
        return self.api_key is not None and bool(self.api_key.get_secret_value().strip())

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values tool output must never carry to the model (long enough not to match by chance)."""
        key = self.api_key.get_secret_value().strip() if self.api_key else ""
        return (key,) if len(key) >= 12 else ()

    @property
    def model_choices(self) -> list[str]:
        """The current model first, then the configured ones, without duplicates."""
        return list(dict.fromkeys([self.model, *self.models]))


def _describe(error: ValidationError, source: Path) -> str:
    problems = []
    for item in error.errors()[:5]:
        key = ".".join(str(part) for part in item["loc"]) or "(top level)"
        message = "unknown key" if item["type"] == "extra_forbidden" else item["msg"]
        problems.append(f"`{key}`: {message}")
    return f"{source}: " + "; ".join(problems)


def _describe_environment(error: ValidationError, env: Mapping[str, str]) -> str:
    """What is wrong with a value the environment set, named by its variable (``ACP_HERMES_LOG_LEVEL=loud``)."""
    problems = []
    for item in error.errors()[:5]:
        key = str(item["loc"][0]) if item["loc"] else ""
        name = ENVIRONMENT_SETTINGS.get(key)
        problems.append(f"{name}={env.get(name, '')!r}: {item['msg']}" if name else f"`{key}`: {item['msg']}")
    return "environment: " + "; ".join(problems)


def load_settings(env: Mapping[str, str] | None = None, paths: Paths | None = None) -> Settings:
    """Settings from the environment, then the config file, then the defaults: validated, or built as
    validation would build them where ``config_base.plain_settings`` is sure of them (start-up's case)."""
    env = os.environ if env is None else env
    paths = paths or paths_from_env(env)
    values = read_config_file(paths.config_file)
    plain = plain_settings(values, env)
    if plain is None:
        check_config(values, paths.config_file)
    if names_a_variable(values.get("api_key")):  # as if there were none: the editor then offers `setup`
        log.warning("ignoring api_key %r in %s: that is a variable's name, not an API key (config.yaml does not "
                    "expand variables)", values.pop("api_key"), paths.config_file)
    values.update(environment_overrides(env))
    if plain is not None:  # what validation would give (tests/unit/test_config_base.py), without its cost
        key = {"api_key": SecretStr(plain["api_key"])} if "api_key" in plain else {}
        return constructed(Settings, {**plain, **key})
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(_describe_environment(exc, env)) from exc


M = TypeVar("M", bound=BaseModel)


def constructed(model_class: type[M], values: Mapping[str, Any]) -> M:
    """``model_class`` holding ``values`` (already as validation gives them) and its defaults, made without
    validation: a model's validator is built on its first validation (``defer_build``), ~7 ms of CPU for the
    settings' models, on start-up's path. A default a model class makes is constructed the same way; a model
    whose defaults only validation gives (a field without one, a default to validate) is validated instead."""
    fields: dict[str, Any] = dict(values)
    for name, field in model_class.model_fields.items():
        if name in fields:
            continue
        if field.is_required() or field.validate_default or model_class.model_config.get("validate_default"):
            return model_class.model_validate(values)
        factory = field.default_factory
        if isinstance(factory, type) and issubclass(factory, BaseModel):
            fields[name] = constructed(factory, {})
        elif factory in (list, dict):  # pydantic would read their signatures to learn that they take no data: ~2 ms
            fields[name] = factory()
    return model_class.model_construct(set(values), **fields)


def check_config(values: Mapping[str, Any], source: Path) -> Settings:
    """``values`` (a config file's) as settings; ConfigError naming the file and the keys at fault."""
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source)) from exc


# -- a project's own settings (``.hermes/config.yaml`` in a trusted workspace)

# What a repository may set for its sessions: nothing that widens what runs unasked (the API key and
# endpoint, the sandbox, the starting mode, budgets, bypass without a sandbox, …). ``system_message``,
# ``mcp_servers`` and ``hooks`` are read by their own readers (``core.trust``, ``core.hook_config``): the first
# goes into the system prompt under the project's name, scanned; the others are programs, each approved by
# its exact command before it runs.
PROJECT_KEYS = ("model", "models", "thought_level", "system_message", "mcp_servers", "hooks", "delegation",
                "checkpoints", "web", "compression", "compression_threshold")
# The only keys of a section a project may set: the checkpoint store's limits and pruning are the user's (the
# store is shared by every workspace's pruning, and its size is the user's disk).
PROJECT_SECTION_KEYS = {"checkpoints": frozenset({"enabled"})}
_MERGED_KEYS = ("model", "models", "thought_level", "delegation", "checkpoints", "web", "compression",
                "compression_threshold")


@value
class ProjectSettings:
    """The user's settings with a project's merged over them, and what of the project's was left out."""

    settings: Settings
    ignored: tuple[str, ...] = ()  # keys a project may not set: named once to the user, never applied
    problems: tuple[str, ...] = ()  # allowed keys whose values could not be used, one line each


def merge_project_settings(user: Settings, values: Mapping[str, Any]) -> ProjectSettings:
    """``user`` with the project's allowed keys merged over it, key by key: a section's keys over the
    user's section, ``models`` added to the user's; each key checked on its own, so one bad value
    leaves out only that key. ``system_message``, ``mcp_servers`` and ``hooks`` are left to their readers."""
    ignored = [str(key) for key in values if key not in PROJECT_KEYS]
    problems: list[str] = []
    merged: dict[str, Any] = user.model_dump()
    for key in _MERGED_KEYS:
        if key not in values:
            continue
        raw = values[key]
        if key in PROJECT_SECTION_KEYS and isinstance(raw, Mapping):
            ignored += [f"{key}.{name}" for name in raw if name not in PROJECT_SECTION_KEYS[key]]
            raw = {name: item for name, item in raw.items() if name in PROJECT_SECTION_KEYS[key]}
        candidate: Any
        if isinstance(raw, Mapping) and isinstance(merged.get(key), dict):
            candidate = {**merged[key], **raw}
        elif key == "models" and isinstance(raw, list):
            candidate = list(dict.fromkeys([*merged["models"], *raw]))
        else:
            candidate = raw
        try:
            Settings.model_validate({**merged, key: candidate})
        except ValidationError as exc:
            problems.append(_describe(exc, Path(".hermes/config.yaml")).partition(": ")[2])
            continue
        merged[key] = candidate
    return ProjectSettings(Settings.model_validate(merged), tuple(ignored), tuple(problems))
