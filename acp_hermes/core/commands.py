"""What a prompt is, and slash commands, answered locally without a model call.

``handle`` is the one entry point for what the user sent: it decides whether the parts are a slash
command, a skill invocation (``/<skill> request``: the skill loaded in front of the request) or a
model turn, and runs it. Each command returns a ``CommandReply``: the text to show and which session
option it changed, if any; ``handle`` ``remember``s the exchange (a reloaded session shows it again,
the model never sees it) and hands the reply back, for whoever drives the session (the ACP adapter)
to announce the change and show the text. An unknown ``/word`` is not a command: it goes to the
model as ordinary text.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Literal

import anyio

from acp_hermes.config import THOUGHT_LEVELS
from acp_hermes.core.choices import MODE_OPTION, MODEL_OPTION, THOUGHT_OPTION, models_offered
from acp_hermes.core.errors import InvalidInput
from acp_hermes.core.user_prompt import PromptPart, TextPart, command_text
from acp_hermes_memory.text import one_line
from acp_hermes_memory.values import value

if TYPE_CHECKING:
    from acp_hermes.core.loop import StopReason
    from acp_hermes.core.session import Session


@value
class CommandReply:
    text: str
    changed_option: str | None = None  # the id of the session option the command changed
    turn: tuple[PromptPart, ...] | None = None  # run this as a model turn instead of showing ``text``
    stored: bool = True  # kept for replay with its command (a steer is stored where the model read it instead)


@value
class Handled:
    """What one prompt came to. A model turn (a skill's too): its stop reason; what it said went to
    the session's event sink. A slash command: ``end_turn`` and its ``reply``, already stored for
    replay as message ``message_id``; the caller announces ``reply.changed_option`` and shows the text."""

    stop_reason: StopReason
    reply: CommandReply | None = None
    message_id: str = ""


@value
class MenuEntry:
    """One entry of the editor's ``/`` menu: a command, or a skill run as one."""

    name: str
    description: str
    hint: str | None


@value
class SlashCommand:
    name: str
    description: str
    hint: str | None  # what the argument is, for commands that take one
    run: Callable[[Session, str], Awaitable[CommandReply]]


OPTIONAL = "optional: "  # how a hint says its argument may be left out (the editor shows the hint as written)


def usage(command: SlashCommand) -> str:
    """``/steer <text>``, ``/export [file path]``: the argument in brackets when it may be left out."""
    if not command.hint:
        return f"/{command.name}"
    if command.hint.startswith(OPTIONAL):
        return f"/{command.name} [{command.hint.removeprefix(OPTIONAL)}]"
    return f"/{command.name} <{command.hint}>"


async def _help(session: Session, arg: str) -> CommandReply:
    lines = ["Commands:"]
    lines += [f"- `{usage(c)}` — {c.description}" for c in COMMANDS.values()]
    lines.append("An argument in [brackets] may be left out.")
    return CommandReply("\n".join(lines))


def _choose(session: Session, option_id: str, value: str, label: str) -> CommandReply:
    try:
        session.set_choice(option_id, value)
    except InvalidInput as exc:
        return CommandReply(f"Could not change the {label}: {exc}")
    return CommandReply(f"The {label} is now `{value}`.", changed_option=option_id)


async def _mcp(session: Session, arg: str) -> CommandReply:
    servers = session.services.mcp
    if servers is None or not servers.connections:
        return CommandReply("No MCP servers in this session. Add them in your editor's agent settings or under "
                            "`mcp_servers` in acp-hermes's config.yaml.")
    return CommandReply("MCP servers:\n" + "\n".join(servers.describe()))


async def _mode(session: Session, arg: str) -> CommandReply:
    if arg:
        return _choose(session, MODE_OPTION, arg, "mode")
    choices = session.choices
    lines = [f"Mode: `{choices.mode.value}`."]
    lines += [f"- `{mode.value}` — {choices.describe(mode)[1]}" for mode in choices.modes]
    if choices.no_bypass:
        lines.append(choices.no_bypass[:1].upper() + choices.no_bypass[1:])  # why it is not listed
    return CommandReply("\n".join(lines))


async def _model(session: Session, arg: str) -> CommandReply:
    if arg:
        return _choose(session, MODEL_OPTION, arg, "model")
    models = ", ".join(f"`{m}`" for m in models_offered(session.choices, session.services.settings))
    return CommandReply(f"Model: `{session.choices.model}`. Available: {models}.")


async def _thinking(session: Session, arg: str) -> CommandReply:
    if arg:
        return _choose(session, THOUGHT_OPTION, arg, "thinking level")
    return CommandReply(f"Thinking: `{session.choices.thought_level}` (one of {', '.join(THOUGHT_LEVELS)}).")


async def _usage(session: Session, arg: str) -> CommandReply:
    record = await anyio.to_thread.run_sync(session.services.db.get_session, session.id)
    if record is None:
        return CommandReply("No usage recorded yet.")
    return CommandReply(
        f"Model calls: {record.api_call_count}. Tokens — input {record.input_tokens:,}, output "
        f"{record.output_tokens:,}, cache read {record.cache_read_tokens:,}, cache write "
        f"{record.cache_write_tokens:,}. Estimated cost: ${record.estimated_cost_usd:.4f}.\n\n"
        + "\n".join(await _budget_lines(session))
    )


async def _budget_lines(session: Session) -> list[str]:
    from acp_hermes.model.pricing import price_of

    if not session.busy:  # between turns the meter is the SessionDB's figure (reviews and titles included)
        await session.services.refresh_spend()
    priced = price_of(session.choices.model, session.services.settings) is not None
    return ["**Budget**", *session.services.budget.describe(priced, running=session.busy)]


BUDGET_USAGE = ("`/budget` shows the spend and the limits; `/budget <usd>` sets this session's limit, `/budget turn "
                "<usd>` one turn's, `/budget tokens <n>` the session's tokens; `off` instead of an amount removes "
                "one, `/budget reset` goes back to the config's.")


async def _budget(session: Session, arg: str) -> CommandReply:
    from acp_hermes.core.budget import LIMIT_NAMES, LimitName, parse_limit

    words = arg.split()
    changed: tuple[LimitName, ...] = ()
    if words == ["reset"]:
        session.set_budget("", None, reset=True)
        changed = LIMIT_NAMES
    elif words:
        try:
            name, limit = parse_limit(words)
        except ValueError as problem:
            return CommandReply(f"Not understood: {problem}. {BUDGET_USAGE}")
        session.set_budget(name, limit)
        changed = (name,)
    lines = await _budget_lines(session)  # the meter brought up to date first: a warning reads the same figures
    budget = session.services.budget
    warnings = [warning for name in changed if (warning := budget.already_spent(name, running=session.busy))]
    return CommandReply("\n\n".join(["\n".join(lines), *warnings, BUDGET_USAGE]))


async def _steer(session: Session, arg: str) -> CommandReply:
    if not arg:
        return CommandReply("Give the words: `/steer <text>` sends them into the running turn.")
    if await session.steer([TextPart(arg)]):
        return CommandReply("↪ Sent into the running turn: the model reads it at its next step.", stored=False)
    return CommandReply("", turn=(TextPart(arg),))  # nothing runs: it is an ordinary prompt


async def _queue(session: Session, arg: str) -> CommandReply:
    if not arg:
        return CommandReply("Give the words: `/queue <text>` runs them as the next prompt once the turn ends.")
    return CommandReply("", turn=(TextPart(arg),))  # a prompt waits for the running turn anyway


async def _permissions(session: Session, arg: str) -> CommandReply:
    lines = await session.services.gate.describe()
    return CommandReply("Permissions in force:\n" + "\n".join(f"- {line}" for line in lines))


async def _compact(session: Session, arg: str) -> CommandReply:
    return CommandReply((await session.compact(arg or None)).message)


async def _search(session: Session, arg: str) -> CommandReply:
    from datetime import datetime

    from acp_hermes_memory.recall import recall

    if not arg:
        return CommandReply("Give some words to look for: `/search <words>` finds past sessions that mention them.")
    result = await recall(session.services.db, arg, current_session=session.id, limit=10)
    if not result.sessions:
        return CommandReply(f"No past session mentions “{arg}”." + (f" ({result.notice})" if result.notice else ""))
    lines = [f"Past sessions mentioning “{arg}” (load one from the editor's session list):"]
    for found in result.sessions:
        when = datetime.fromtimestamp(found.updated_at).strftime("%Y-%m-%d %H:%M")
        lines.append(f"- **{found.title or '(untitled)'}** — {when} · `{found.session_id}`")
        lines += [f"  > {excerpt.render('**', '**', _markdown_text)}" for excerpt in found.excerpts[:2]]
    return CommandReply("\n".join(lines))


_MARKDOWN_SPECIAL = str.maketrans({char: f"\\{char}" for char in "\\`*_[]<>#|~"})


def _markdown_text(text: str) -> str:
    """Stored text shown as itself in Markdown: nothing in it can start emphasis, code, a link or HTML."""
    return text.translate(_MARKDOWN_SPECIAL)


INIT_INSTRUCTION = (
    "Draft an AGENTS.md for this project: the instructions a coding agent needs before it changes "
    "anything here. Explore first (read the README, the build and test configuration, a few central "
    "modules); then write, concisely: what the project is, how to set it up, build, test and lint it "
    "(exact commands), the layout and its conventions, and what must not be done. If an AGENTS.md "
    "exists, improve it instead of starting over. Write the file with your file tools."
)


async def _init(session: Session, arg: str) -> CommandReply:
    extra = f"\n\nAlso: {arg}" if arg else ""
    return CommandReply("", turn=(TextPart(INIT_INSTRUCTION + extra),))


async def _export(session: Session, arg: str) -> CommandReply:
    from datetime import datetime

    from acp_hermes.core.export import conversation_markdown, export
    from acp_hermes.core.titles import clean_title
    from acp_hermes_tools.paths import resolve_path

    slug = "-".join(clean_title(session.title or "conversation").lower().split())[:60]
    path = resolve_path(arg or f"{slug}-{datetime.now():%Y%m%d-%H%M}.md", session.state.cwd)
    if not await anyio.to_thread.run_sync(path.parent.is_dir):  # a typo in the folder must not make new folders
        return CommandReply(f"Not exported: the folder `{path.parent}` does not exist. Create it first, "
                            "or give a path in an existing folder.")
    stored = await anyio.to_thread.run_sync(session.services.db.conversation, session.id)
    text = conversation_markdown(session.title, session.id, stored)
    return CommandReply(await export(session.services, path, text))


async def _title(session: Session, arg: str) -> CommandReply:
    from acp_hermes.core.titles import clean_title, set_title

    if not arg:
        return CommandReply(f"Title: {session.title}" if session.title else "This session has no title yet.")
    title = clean_title(arg)
    await set_title(session.state, session.services, title)
    return CommandReply(f"The title is now “{title}”.")


async def _memory(session: Session, arg: str) -> CommandReply:
    store = session.services.tools.services.memory
    if store is None:
        return CommandReply("Memory is not available in this session.")
    lines = []
    targets: tuple[tuple[Literal["memory", "user"], str], ...] = (
        ("memory", "Memory (MEMORY.md)"), ("user", "User profile (USER.md)"))
    for target, label in targets:
        entries = await anyio.to_thread.run_sync(store.entries, target)
        used, limit = await anyio.to_thread.run_sync(store.usage, target)
        lines.append(f"**{label}** — {used:,} of {limit:,} characters ({used * 100 // max(limit, 1)}%)")
        lines += [f"- {one_line(entry, 200)}" for entry in entries] or ["- (empty)"]
    lines.append("\nNew sessions see these; the running one keeps the snapshot it started with.")
    provided = await session.services.memory_provider_summary()
    if provided:
        lines += ["", *provided]
    return CommandReply("\n".join(lines))


SKILLS_USAGE = ("`/skills` lists the skills; `/skills pin NAME` keeps one from ever going stale or being archived "
                "(`unpin` undoes it); `/skills archive NAME` moves one aside; `/skills restore NAME` brings an "
                "archived one back.")


async def _skills(session: Session, arg: str) -> CommandReply:
    from acp_hermes.core.skill_upkeep import listing_lines, steer

    store = session.services.tools.services.skills
    if store is None:
        return CommandReply("Skills are not available in this session.")
    words = arg.split()
    if not words:
        lines = await anyio.to_thread.run_sync(listing_lines, store)
        if lines is None:
            return CommandReply(f"No skills yet. Ask me to save a procedure as a skill, or add one under "
                                f"`{store.root}`.")
        return CommandReply("\n".join(lines))
    if len(words) != 2 or words[0] not in ("pin", "unpin", "archive", "restore"):
        return CommandReply(f"Not understood. {SKILLS_USAGE}")
    return CommandReply(await anyio.to_thread.run_sync(steer, store, words[0], words[1], session.id))


TRUST_USAGE = "`/trust` trusts this repository (remembered); `/trust session` for this session only."


async def _trust(session: Session, arg: str) -> CommandReply:
    from acp_hermes.core.trust import REMEMBERED, decide, describe, status_of

    if arg not in ("", "session"):
        return CommandReply(f"Not understood. {TRUST_USAGE}")
    trust = session.services.trust
    status = await anyio.to_thread.run_sync(status_of, trust)
    if trust.trusted and (arg == "session" or trust.source == REMEMBERED):
        return CommandReply("\n".join(describe(status)))  # nothing to change
    was = trust.trusted
    approve = status.gated.mcp_servers if status.gated is not None else ()  # what the user can see listed
    await decide(session, "session" if arg == "session" or trust.repository.home else "always", approve=approve)
    lines = describe(await anyio.to_thread.run_sync(status_of, trust))
    if not was and status.gated is not None and not status.gated.empty:
        lines += ["Now in this session:", *status.gated.lines(), "The system prompt was built again once to take "
                  "them in."]
    return CommandReply("\n".join(lines))


async def _untrust(session: Session, arg: str) -> CommandReply:
    from acp_hermes.core.trust import decide, describe, status_of

    await decide(session, "never")
    lines = describe(await anyio.to_thread.run_sync(status_of, session.services.trust))
    if not session.services.trust.repository.home:
        lines.append("Remembered: it is not asked about again (`acp-hermes trust remove` forgets the decision).")
    return CommandReply("\n".join(lines))


async def _sandbox(session: Session, arg: str) -> CommandReply:
    sandbox = session.services.tools.sandbox
    lines = sandbox.describe() if sandbox is not None else ["no sandbox in this session"]
    return CommandReply("OS sandbox for commands:\n" + "\n".join(f"- {line}" for line in lines))


ROLLBACK_USAGE = ("`/rollback` lists the checkpoints; `/rollback <n>` restores the files the agent changed since "
                  "checkpoint n; `/rollback <n> <path>` restores one file. Add `--conversation` to also rewind the "
                  "conversation, `--include-edited` to also restore files you changed by hand.")


async def _rollback(session: Session, arg: str) -> CommandReply:
    from acp_hermes.core.rollback import list_text, rollback

    words = arg.split()
    flags = {word for word in words if word.startswith("--")}
    rest = [word for word in words if not word.startswith("--")]
    unknown = flags - {"--conversation", "--include-edited"}
    if not rest and not flags:
        return CommandReply(await list_text(session.services))
    if unknown or not rest or not rest[0].isdigit() or len(rest) > 2:
        return CommandReply(f"Not understood. {ROLLBACK_USAGE}")
    async with session.exclusive():  # after a running turn, before the next
        result = await rollback(session.state, session.services, int(rest[0]),
                                path=rest[1] if len(rest) > 1 else None, include_edited="--include-edited" in flags,
                                conversation="--conversation" in flags)
    return CommandReply(result.message)


COMMANDS: dict[str, SlashCommand] = {
    c.name: c
    for c in (
        SlashCommand("help", "List the commands.", None, _help),
        SlashCommand("mode", "Show or switch the permission mode.", "optional: default | accept-edits | plan | bypass",
                     _mode),
        SlashCommand("model", "Show or switch the model.", "optional: model name", _model),
        SlashCommand("thinking", "Show or set the extended-thinking level.", "optional: off | low | medium | high",
                     _thinking),
        SlashCommand("usage", "Tokens and cost of this session so far.", None, _usage),
        SlashCommand("budget", "Show or set this session's spending limits.", "optional: usd | turn <usd> | "
                     "tokens <n> | off | reset", _budget),
        SlashCommand("steer", "Send words into the running turn: the model reads them at its next step.", "text",
                     _steer),
        SlashCommand("queue", "Run a prompt once the running turn ends.", "text", _queue),
        SlashCommand("permissions", "The mode and the remembered permission grants.", None, _permissions),
        SlashCommand("mcp", "The MCP servers of this session: status and tools.", None, _mcp),
        SlashCommand("sandbox", "Whether commands run in an OS sandbox, and what it allows.", None, _sandbox),
        SlashCommand("trust", "Trust this repository: its instructions, skills, settings and MCP servers apply.",
                     "optional: session", _trust),
        SlashCommand("untrust", "Stop trusting this repository: nothing of its own reaches the model or runs.",
                     None, _untrust),
        SlashCommand("compact", "Summarise the older conversation to free context.",
                     "optional: what to keep in detail", _compact),
        SlashCommand("skills", "List the skills with their state and use; pin, unpin, archive or restore one.",
                     "optional: pin | unpin | archive | restore NAME", _skills),
        SlashCommand("memory", "The saved memory and user profile, with how full each is.", None, _memory),
        SlashCommand("title", "Show or set this session's title.", "optional: new title", _title),
        SlashCommand("search", "Find past sessions that mention some words.", "words to look for", _search),
        SlashCommand("export", "Save this conversation as Markdown in the workspace (asks like any edit).",
                     "optional: file path", _export),
        SlashCommand("init", "Draft an AGENTS.md for this project (the write asks like any edit).",
                     "optional: what to stress", _init),
        SlashCommand("rollback", "List checkpoints, or restore the files the agent changed since one (and the "
                     "conversation, if you choose).",
                     "optional: checkpoint number [path] [--conversation] [--include-edited]", _rollback),
    )
}


def parse(parts: Sequence[PromptPart]) -> tuple[SlashCommand, str] | None:
    text = command_text(parts)
    if text is None or not text.strip().startswith("/"):
        return None
    name, _, arg = text.strip()[1:].partition(" ")
    command = COMMANDS.get(name)
    return (command, arg.strip()) if command is not None else None


async def run_command(session: Session, parts: Sequence[PromptPart]) -> CommandReply | None:
    """The reply to a slash command, or None when the prompt is not one."""
    parsed = parse(parts)
    if parsed is None:
        return None
    command, arg = parsed
    return await command.run(session, arg)


async def handle(session: Session, parts: Sequence[PromptPart], client_message_id: str | None = None) -> Handled:
    """Run what the user sent: a slash command, a skill invocation or a model turn (queued behind a
    running turn, like any prompt). A subagent's session takes none: its parent drives it.
    ``client_message_id``: the client's id for the prompt, stored with it."""
    if session.subagent is not None:
        raise InvalidInput(f"session {session.id} is a subagent working on its parent's task; it takes no prompts")
    place = session.arrive()  # before anything awaits: its turn comes in arrival order, a later cancel ends it
    try:
        reply = await run_command(session, parts)
        if reply is not None and reply.turn is not None:  # a command that is a model turn (/init)
            parts, reply = list(reply.turn), None
        if reply is None:
            from acp_hermes.core.trust import before_turn

            await before_turn(session)  # the workspace's trust is settled before the first model request
            if place.epoch != session.cancel_epoch:  # cancelled while the question was open
                return Handled("cancelled")
            loaded = await skill_prompt(session, parts)
            if loaded is None:
                from acp_hermes.core.skill_upkeep import offer_archived

                await offer_archived(session, parts)
            parts = loaded or parts
            return Handled(await session.prompt(parts, client_message_id, place=place))
    finally:
        session.leave(place)  # a command is no turn (a turn's place went when it took the lock)
    message_id = str(uuid.uuid4())
    if reply.stored:
        session.state.transcript.client_message_id = client_message_id
        await remember(session, parts, reply, message_id)
    return Handled("end_turn", reply, message_id)


async def remember(session: Session, parts: Sequence[PromptPart], reply: CommandReply, message_id: str) -> None:
    """Store a command and the reply shown as ``message_id`` for replay, outside the model's history."""
    transcript = session.state.transcript
    await transcript.add_local_prompt(command_text(parts) or "", parts)
    await transcript.add_local_reply(reply.text, message_id=message_id)


SKILL_HINT = "what to do with this skill"


def menu(session: Session) -> list[MenuEntry]:
    """The ``/`` menu: the commands, then one entry per skill (blocking: reads the skills index)."""
    entries = [MenuEntry(c.name, c.description, c.hint) for c in COMMANDS.values()]
    store = session.services.tools.services.skills
    taken = set(COMMANDS)
    for skill in store.skills() if store is not None else ():
        if skill.name not in taken:  # a built-in command, or a name two categories share, keeps its first owner
            taken.add(skill.name)
            entries.append(MenuEntry(skill.name, f"Skill: {one_line(skill.description, 120)}", SKILL_HINT))
    return entries


async def skill_prompt(session: Session, parts: Sequence[PromptPart]) -> list[PromptPart] | None:
    """``/<skill> request`` as a prompt with that skill loaded in front, or None when it is not one."""
    from acp_hermes_memory.scan import guard_context_text  # pattern tables and the skills store: kept off start-up
    from acp_hermes_memory.skills import SkillError

    text = command_text(parts)
    store = session.services.tools.services.skills
    if text is None or store is None or not text.strip().startswith("/"):
        return None
    name, _, request = text.strip()[1:].partition(" ")
    if not name or name in COMMANDS:
        return None
    try:
        view = await anyio.to_thread.run_sync(store.view, name)
    except SkillError:
        return None  # not a skill: the word goes to the model as written
    store.record_use(view.info)
    from acp_hermes_memory.frames import framed

    body = framed("skill", guard_context_text(f"skill {name}", view.text), name=view.info.qualified_name)
    loaded = (f"[The user ran the skill `{view.info.qualified_name}`. Follow its instructions for the request "
              f"after them.]\n\n{body}\n\n{request.strip() or 'Run the skill.'}")
    return [TextPart(loaded), *parts[1:]]
