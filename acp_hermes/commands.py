"""Slash commands, answered locally without a model call.

Advertised with ``available_commands_update`` (Zed refuses ``/x`` input it was not told
about); an unknown ``/word`` goes to the model as ordinary text.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acp_hermes.config import THOUGHT_LEVELS
from acp_hermes.events import AgentText
from acp_hermes.options import MODE_OPTION, MODEL_OPTION, THOUGHT_OPTION, InvalidOption, config_options
from acp_hermes.permissions import MODE_DESCRIPTIONS

if TYPE_CHECKING:
    from acp_hermes.server import HermesAgent
    from acp_hermes.session import Session


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    description: str
    hint: str | None
    run: Callable[[Session, str, HermesAgent], Awaitable[str]]


async def _help(session: Session, arg: str, server: HermesAgent) -> str:
    lines = ["Commands:"]
    lines += [f"- `/{c.name}{' ' + c.hint if c.hint else ''}` — {c.description}" for c in COMMANDS.values()]
    return "\n".join(lines)


async def _choose(session: Session, server: HermesAgent, option_id: str, value: str, label: str) -> str:
    try:
        session.set_choice(option_id, value)
    except InvalidOption as exc:
        return f"Could not change the {label}: {exc}"
    options = config_options(session.choices, server.runtime.settings)
    await server.link.update(session.id, {"sessionUpdate": "config_option_update", "configOptions": options})
    if option_id == MODE_OPTION:
        await server.link.update(
            session.id, {"sessionUpdate": "current_mode_update", "currentModeId": session.choices.mode.value}
        )
    return f"The {label} is now `{value}`."


async def _mode(session: Session, arg: str, server: HermesAgent) -> str:
    if arg:
        return await _choose(session, server, MODE_OPTION, arg, "mode")
    lines = [f"Mode: `{session.choices.mode.value}`."]
    lines += [f"- `{mode.value}` — {description}" for mode, (_, description) in MODE_DESCRIPTIONS.items()]
    return "\n".join(lines)


async def _model(session: Session, arg: str, server: HermesAgent) -> str:
    if arg:
        return await _choose(session, server, MODEL_OPTION, arg, "model")
    models = ", ".join(f"`{m}`" for m in server.runtime.settings.model_choices)
    return f"Model: `{session.choices.model}`. Available: {models}."


async def _thinking(session: Session, arg: str, server: HermesAgent) -> str:
    if arg:
        return await _choose(session, server, THOUGHT_OPTION, arg, "thinking level")
    return f"Thinking: `{session.choices.thought_level}` (one of {', '.join(THOUGHT_LEVELS)})."


async def _usage(session: Session, arg: str, server: HermesAgent) -> str:
    record = server.runtime.db.get_session(session.id)
    if record is None:
        return "No usage recorded yet."
    return (
        f"Model calls: {record.api_call_count}. Tokens — input {record.input_tokens:,}, output "
        f"{record.output_tokens:,}, cache read {record.cache_read_tokens:,}, cache write "
        f"{record.cache_write_tokens:,}. Estimated cost: ${record.estimated_cost_usd:.4f}."
    )


async def _permissions(session: Session, arg: str, server: HermesAgent) -> str:
    return "Permissions in force:\n" + "\n".join(f"- {line}" for line in session.gate.describe())


COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command("help", "List the commands.", None, _help),
        Command("mode", "Show or switch the permission mode.", "default | accept-edits | plan | bypass", _mode),
        Command("model", "Show or switch the model.", "model name", _model),
        Command("thinking", "Show or set the extended-thinking level.", "off | low | medium | high", _thinking),
        Command("usage", "Tokens and cost of this session so far.", None, _usage),
        Command("permissions", "The mode and the remembered permission grants.", None, _permissions),
    )
}


def available_commands_update() -> dict[str, Any]:
    commands = []
    for command in COMMANDS.values():
        entry: dict[str, Any] = {"name": command.name, "description": command.description}
        if command.hint:
            entry["input"] = {"hint": command.hint}
        commands.append(entry)
    return {"sessionUpdate": "available_commands_update", "availableCommands": commands}


def parse(blocks: list[dict[str, Any]]) -> tuple[Command, str] | None:
    if len(blocks) != 1 or blocks[0].get("type") != "text":
        return None
    text = blocks[0].get("text", "").strip()
    if not text.startswith("/"):
        return None
    name, _, arg = text[1:].partition(" ")
    command = COMMANDS.get(name)
    return (command, arg.strip()) if command is not None else None


async def run_command(session: Session, blocks: list[dict[str, Any]], server: HermesAgent) -> str | None:
    """Handle a slash command; the stop reason, or None when the prompt is not one."""
    parsed = parse(blocks)
    if parsed is None:
        return None
    command, arg = parsed
    reply = await command.run(session, arg, server)
    await session.emit(AgentText(str(uuid.uuid4()), reply))
    return "end_turn"
