"""The user's per-session choices: permission mode, model and extended-thinking level."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp_hermes.config_base import THOUGHT_LEVELS, StartingSettings, ThoughtLevel
from acp_hermes.core.errors import InvalidInput, ModeUnavailable
from acp_hermes.permissions.modes import MODE_DESCRIPTIONS, UNSANDBOXED_BYPASS, Mode

if TYPE_CHECKING:
    from acp_hermes.core.runtime import Runtime
    from acp_hermes_tools.sandbox import SandboxStatus

MODE_OPTION = "mode"
MODEL_OPTION = "model"
THOUGHT_OPTION = "thought_level"
OPTION_IDS = (MODE_OPTION, MODEL_OPTION, THOUGHT_OPTION)


@dataclass
class SessionChoices:
    """The user's per-session choices, persisted with the session (the last three fields are not:
    they follow from where it runs)."""

    mode: Mode
    model: str
    thought_level: ThoughtLevel
    budget: dict[str, float | None] = field(default_factory=dict)  # /budget's limits (None: none), over the config's
    unsandboxed: bool = False  # no OS sandbox holds this session's commands
    no_bypass: str = ""  # why bypass is not offered to this session ("": it is)
    start_notice: str = ""  # what the user is told once as it opens: why it did not start in bypass

    @property
    def modes(self) -> tuple[Mode, ...]:
        """The modes this session offers, in display order."""
        return tuple(mode for mode in Mode if mode is not Mode.BYPASS or not self.no_bypass)

    def describe(self, mode: Mode) -> tuple[str, str]:
        """The name and description of ``mode`` as this session has it (bypass without a sandbox says so)."""
        return UNSANDBOXED_BYPASS if mode is Mode.BYPASS and self.unsandboxed else MODE_DESCRIPTIONS[mode]

    def as_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"thought_level": self.thought_level}
        if self.budget:
            config["budget"] = dict(self.budget)
        return config


def new_session_choices(runtime: Runtime, settings: StartingSettings | None = None) -> SessionChoices:
    """What a new session starts with: known before it is built and stored, and before the ACP SDK
    is loaded (``SessionManager.new_choices``, and the adapter's reception answering ``session/new``).
    ``settings``: the new session's (a trusted project's merged over the user's: ``core.trust``)."""
    return allowed_choices(runtime, starting_choices(settings or runtime.settings))


def starting_choices(settings: StartingSettings) -> SessionChoices:
    """The mode, model and thinking level ``settings`` start a session with, before what the machine allows."""
    return SessionChoices(mode=settings.default_mode, model=settings.model, thought_level=settings.thought_level)


def allowed_choices(runtime: Runtime, choices: SessionChoices) -> SessionChoices:
    """``choices`` as this machine and the user's own config allow them: ``bypass`` only where a
    sandbox holds commands, or where ``allow_unsandboxed_bypass`` accepts every command running
    with the user's rights, unasked."""
    return allowed_here(choices, runtime.sandbox, runtime.settings.allow_unsandboxed_bypass, runtime.paths.config_file)


def allowed_here(choices: SessionChoices, sandbox: SandboxStatus, allow_unsandboxed_bypass: bool,
                 config_file: Path) -> SessionChoices:
    """``choices`` as ``sandbox`` and the user's ``allow_unsandboxed_bypass`` (in ``config_file``) allow them."""
    allowed = sandbox.available or allow_unsandboxed_bypass
    why = "" if allowed else bypass_refusal(sandbox.detail, config_file)
    return withhold_bypass(choices, why, unsandboxed=not sandbox.available)


def stored_budget(config: dict[str, Any]) -> dict[str, float | None]:
    """The ``/budget`` limits kept with a session; anything malformed is left out (the config's apply)."""
    from acp_hermes.core.budget import LIMIT_NAMES

    stored = config.get("budget")
    if not isinstance(stored, dict):
        return {}
    return {name: value for name, value in stored.items() if name in LIMIT_NAMES
            and (value is None or (isinstance(value, int | float) and not isinstance(value, bool) and value > 0))}


def models_offered(choices: SessionChoices, settings: StartingSettings) -> list[str]:
    """The session's model first, then the configured ones, without duplicates."""
    return list(dict.fromkeys([choices.model, *settings.model_choices]))


def bypass_refusal(sandbox_detail: str, config_file: Path) -> str:
    """Why ``bypass`` is not offered where no sandbox runs commands: there it would run every command
    with the user's rights, unasked, so only the user's own configuration may choose it."""
    return (f"bypass is not available without a sandbox, and commands run without one here: {sandbox_detail}. In "
            f"bypass every command would run with your rights, unasked; to allow that anyway, set "
            f"`allow_unsandboxed_bypass: true` in {config_file}.")


def withhold_bypass(choices: SessionChoices, why: str, *, unsandboxed: bool) -> SessionChoices:
    """Record whether a sandbox holds the session's commands, and that bypass is not offered (``why``;
    "" when it is). A session that was to be in bypass starts in ``default`` instead — the mode that
    asks before every edit and command — and says why once."""
    choices.unsandboxed, choices.no_bypass = unsandboxed, why
    if why and choices.mode is Mode.BYPASS:
        choices.mode = Mode.DEFAULT
        choices.start_notice = f"⚠️ This session is in `default` mode, not `bypass`: {why}"
    return choices


def apply_choice(choices: SessionChoices, settings: StartingSettings, option_id: str, value: Any) -> None:
    """Validate and apply one option; raises InvalidInput naming what is wrong."""
    if not isinstance(value, str):
        raise InvalidInput(f"option {option_id!r} takes a string value, not {type(value).__name__}")
    if option_id == MODE_OPTION:
        mode = parse_mode(value)
        if mode not in choices.modes:
            raise ModeUnavailable(choices.no_bypass)
        choices.mode = mode
    elif option_id == MODEL_OPTION:
        allowed = models_offered(choices, settings)
        if value not in allowed:
            raise InvalidInput(f"unknown model {value!r}; choose one of: {', '.join(allowed)}")
        choices.model = value
    elif option_id == THOUGHT_OPTION:
        if value not in THOUGHT_LEVELS:
            raise InvalidInput(f"unknown thought level {value!r}; choose one of: {', '.join(THOUGHT_LEVELS)}")
        choices.thought_level = value
    else:
        raise InvalidInput(f"unknown config option {option_id!r}; known options: {', '.join(OPTION_IDS)}")


def parse_mode(value: str) -> Mode:
    try:
        return Mode(value)
    except ValueError:
        known = ", ".join(mode.value for mode in Mode)
        raise InvalidInput(f"unknown mode {value!r}; choose one of: {known}") from None
