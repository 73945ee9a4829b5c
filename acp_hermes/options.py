"""Session config options (mode, model, thinking) and legacy session modes, as ACP shapes.

Zed shows config options (and ignores ``modes``) once any exist, so the mode is both a
``modes`` entry and a ``category: "mode"`` option; they always agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acp_hermes.config import THOUGHT_LEVELS, Settings, ThoughtLevel
from acp_hermes.permissions import MODE_DESCRIPTIONS, Mode

MODE_OPTION = "mode"
MODEL_OPTION = "model"
THOUGHT_OPTION = "thought_level"


class InvalidOption(ValueError):
    """An unknown option id or value; the server answers invalid params."""


@dataclass
class SessionChoices:
    """The user's per-session choices, persisted with the session."""

    mode: Mode
    model: str
    thought_level: ThoughtLevel

    def as_config(self) -> dict[str, Any]:
        return {"thought_level": self.thought_level}


def _thought_description(level: ThoughtLevel, settings: Settings) -> str:
    if level == "off":
        return "No extended thinking (fastest, cheapest)."
    return f"Extended thinking, up to {settings.thinking_budgets.get(level, 0):,} tokens per model call."


def config_options(choices: SessionChoices, settings: Settings) -> list[dict[str, Any]]:
    """The complete option list, in display priority order."""
    models = list(dict.fromkeys([choices.model, *settings.model_choices]))
    return [
        {
            "id": MODE_OPTION,
            "name": "Mode",
            "description": "What the agent may do without asking.",
            "category": "mode",
            "type": "select",
            "currentValue": choices.mode.value,
            "options": [
                {"value": mode.value, "name": name, "description": description}
                for mode, (name, description) in MODE_DESCRIPTIONS.items()
            ],
        },
        {
            "id": MODEL_OPTION,
            "name": "Model",
            "category": "model",
            "type": "select",
            "currentValue": choices.model,
            "options": [{"value": model, "name": model} for model in models],
        },
        {
            "id": THOUGHT_OPTION,
            "name": "Thinking",
            "description": "Extended thinking budget per model call.",
            "category": "thought_level",
            "type": "select",
            "currentValue": choices.thought_level,
            "options": [
                {"value": level, "name": level.capitalize(), "description": _thought_description(level, settings)}
                for level in THOUGHT_LEVELS
            ],
        },
    ]


def session_modes(choices: SessionChoices) -> dict[str, Any]:
    return {
        "currentModeId": choices.mode.value,
        "availableModes": [
            {"id": mode.value, "name": name, "description": description}
            for mode, (name, description) in MODE_DESCRIPTIONS.items()
        ],
    }


def apply_choice(choices: SessionChoices, settings: Settings, option_id: str, value: Any) -> None:
    """Validate and apply one option; raises InvalidOption naming what is wrong."""
    if not isinstance(value, str):
        raise InvalidOption(f"option {option_id!r} takes a string value, not {type(value).__name__}")
    if option_id == MODE_OPTION:
        choices.mode = parse_mode(value)
    elif option_id == MODEL_OPTION:
        allowed = list(dict.fromkeys([choices.model, *settings.model_choices]))
        if value not in allowed:
            raise InvalidOption(f"unknown model {value!r}; choose one of: {', '.join(allowed)}")
        choices.model = value
    elif option_id == THOUGHT_OPTION:
        if value not in THOUGHT_LEVELS:
            raise InvalidOption(f"unknown thought level {value!r}; choose one of: {', '.join(THOUGHT_LEVELS)}")
        choices.thought_level = value  # type: ignore[assignment]
    else:
        known = ", ".join((MODE_OPTION, MODEL_OPTION, THOUGHT_OPTION))
        raise InvalidOption(f"unknown config option {option_id!r}; known options: {known}")


def parse_mode(value: str) -> Mode:
    try:
        return Mode(value)
    except ValueError:
        known = ", ".join(mode.value for mode in Mode)
        raise InvalidOption(f"unknown mode {value!r}; choose one of: {known}") from None
