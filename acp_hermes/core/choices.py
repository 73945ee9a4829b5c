"""The user's per-session choices: permission mode, model and extended-thinking level."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acp_hermes.config import THOUGHT_LEVELS, Settings, ThoughtLevel
from acp_hermes.core.errors import InvalidInput
from acp_hermes.permissions.modes import Mode

if TYPE_CHECKING:
    from acp_hermes.core.runtime import Runtime

MODE_OPTION = "mode"
MODEL_OPTION = "model"
THOUGHT_OPTION = "thought_level"
OPTION_IDS = (MODE_OPTION, MODEL_OPTION, THOUGHT_OPTION)


@dataclass
class SessionChoices:
    """The user's per-session choices, persisted with the session."""

    mode: Mode
    model: str
    thought_level: ThoughtLevel
    budget: dict[str, float | None] = field(default_factory=dict)  # /budget's limits (None: none), over the config's

    def as_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"thought_level": self.thought_level}
        if self.budget:
            config["budget"] = dict(self.budget)
        return config


def new_session_choices(runtime: Runtime) -> SessionChoices:
    """What a new session starts with: known before it is built and stored, and before the ACP SDK
    is loaded (``SessionManager.new_choices``, and the adapter's reception answering ``session/new``)."""
    settings = runtime.settings
    return SessionChoices(mode=settings.default_mode, model=settings.model, thought_level=settings.thought_level)


def stored_budget(config: dict[str, Any]) -> dict[str, float | None]:
    """The ``/budget`` limits kept with a session; anything malformed is left out (the config's apply)."""
    from acp_hermes.core.budget import LIMIT_NAMES

    stored = config.get("budget")
    if not isinstance(stored, dict):
        return {}
    return {name: value for name, value in stored.items() if name in LIMIT_NAMES
            and (value is None or (isinstance(value, int | float) and not isinstance(value, bool) and value > 0))}


def models_offered(choices: SessionChoices, settings: Settings) -> list[str]:
    """The session's model first, then the configured ones, without duplicates."""
    return list(dict.fromkeys([choices.model, *settings.model_choices]))


def apply_choice(choices: SessionChoices, settings: Settings, option_id: str, value: Any) -> None:
    """Validate and apply one option; raises InvalidInput naming what is wrong."""
    if not isinstance(value, str):
        raise InvalidInput(f"option {option_id!r} takes a string value, not {type(value).__name__}")
    if option_id == MODE_OPTION:
        choices.mode = parse_mode(value)
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
