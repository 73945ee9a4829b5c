"""Session choices and slash commands as ACP shapes: config options (mode, model, thinking),
legacy session modes and the available commands.

Zed shows config options (and ignores ``modes``) once any exist, so the mode is both a
``modes`` entry and a ``category: "mode"`` option; they always agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from acp_hermes.config_base import THOUGHT_LEVELS, StartingSettings, ThoughtLevel
from acp_hermes.core.choices import MODE_OPTION, MODEL_OPTION, THOUGHT_OPTION, SessionChoices, models_offered
from acp_hermes.permissions.modes import Mode

if TYPE_CHECKING:  # the slash-command code is not needed to answer session/new
    from acp_hermes.core.commands import MenuEntry


def _thought_description(level: ThoughtLevel, settings: StartingSettings) -> str:
    if level == "off":
        return "No extended thinking (fastest, cheapest)."
    return f"Extended thinking, up to {settings.thinking_budgets.get(level, 0):,} tokens per model call."


def config_options(choices: SessionChoices, settings: StartingSettings) -> list[dict[str, Any]]:
    """The complete option list, in display priority order."""
    models = models_offered(choices, settings)
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
                for mode, (name, description) in _modes(choices)
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


def _modes(choices: SessionChoices) -> list[tuple[Mode, tuple[str, str]]]:
    """The modes the session offers (no ``bypass`` where no sandbox runs, unless the user's config allows it)."""
    return [(mode, choices.describe(mode)) for mode in choices.modes]


def session_modes(choices: SessionChoices) -> dict[str, Any]:
    return {
        "currentModeId": choices.mode.value,
        "availableModes": [
            {"id": mode.value, "name": name, "description": description}
            for mode, (name, description) in _modes(choices)
        ],
    }


def choices_state(choices: SessionChoices, settings: StartingSettings) -> dict[str, Any]:
    """A session's modes and options, as ``session/new``, ``load``, ``resume`` and ``fork`` answer them."""
    return {"modes": session_modes(choices), "configOptions": config_options(choices, settings)}


def available_commands_update(entries: Sequence[MenuEntry]) -> dict[str, Any]:
    """Every slash command, with the hint for its argument (clients refuse ``/x`` they were not told of)."""
    commands = []
    for command in entries:
        entry: dict[str, Any] = {"name": command.name, "description": command.description}
        if command.hint:
            entry["input"] = {"hint": command.hint}
        commands.append(entry)
    return {"sessionUpdate": "available_commands_update", "availableCommands": commands}
