"""The tool registry: every tool is declared once and dispatched through here.

A declaration carries everything the rest of the system needs: the JSON schema the model sees
and arguments are validated against, the ACP kind and a title/locations presenter for the
editor, whether the tool reads or mutates (which decides the permission it needs) and whether
it may run concurrently with its neighbours. Dispatch never raises for a bad call: unknown
tools, invalid arguments and handler exceptions all become an error result for the model.

The registry validates arguments against the agent's own schemas; a tool whose schema comes from
outside (an MCP server's) brings its own check (``Tool.validate``, see ``tools.mcp.schema``), which
bounds what a hostile schema can cost.

A declaration also carries the tool's traits: what the rest of the agent decides by the tool, so
that nothing outside its own module names it (the system prompt's guidance, subdirectory hints, a
delegated child's toolsets, the learning loop's review and nudges, the memory flush before
compaction). The manifest (``tools.core_tools``) lists the agent's own tools; a tool from outside
(an MCP server's, a memory provider's) has the defaults.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Sequence
from enum import Enum
from typing import Any, Literal

import anyio

from acp_hermes_memory.fs import PathChanged
from acp_hermes_memory.scan import injection_warning, scan
from acp_hermes_memory.values import value
from acp_hermes_tools.context import ToolContext, ToolScope
from acp_hermes_tools.contracts import (
    Display,
    EditorRefused,
    Location,
    MemoryWritten,
    PermissionDenied,
    TextDisplay,
    ToolCallUpdated,
    ToolKind,
)
from acp_hermes_tools.toolsets import TOOLSETS

log = logging.getLogger(__name__)

MAX_RESULT_CHARS = 60_000


class Access(str, Enum):
    """What a tool does to the world, which decides the permission it needs."""

    READ = "read"  # no side effects outside the session
    EDIT = "edit"  # changes files
    EXECUTE = "execute"  # runs commands
    STATE = "state"  # changes the agent's own stores (memory, skills)

    @property
    def mutates(self) -> bool:
        return self is not Access.READ


@value
class ToolCall:
    """One call as the model produced it. ``arguments`` is None when they were not valid JSON."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str = ""


@value
class Presentation:
    title: str
    locations: tuple[Location, ...] = ()


# A plain class, not a dataclass: defining one costs about a millisecond before the first prompt.
class ToolResult:
    """What a call produced: ``text`` for the model, ``display`` for the editor.

    ``ends_turn`` hands the turn to the user: the agent says that text (a question they answer in
    their next prompt) and stops after this round of calls, without asking the model again.
    ``effects`` are what the call changed that others hear of (the session passes them on to the
    external memory provider).
    """

    __slots__ = ("display", "effects", "ends_turn", "locations", "ok", "raw_output", "text")

    def __init__(self, text: str, ok: bool = True, display: tuple[Display, ...] = (),
                 locations: tuple[Location, ...] | None = None, raw_output: Any = None, ends_turn: str | None = None,
                 effects: tuple[MemoryWritten, ...] = ()) -> None:
        self.text = text
        self.ok = ok
        self.display = display
        self.locations = locations
        self.raw_output = raw_output
        self.ends_turn = ends_turn
        self.effects = effects


class ToolError(Exception):
    """Raised by a handler for an expected failure; the message goes to the model as is."""


Handler = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult]]
Presenter = Callable[[dict[str, Any], ToolScope], Presentation]
Restorer = Callable[[ToolScope, Any], None]
ArgumentCheck = Callable[[dict[str, Any]], str | None]  # why arguments do not fit, or None
# The argument names a tool that says nothing of its own is taken to name files and folders with.
COMMON_PATH_ARGS = ("path", "file_path", "workdir")


@value
class Guidance:
    """A tool's part of the system prompt's guidance, which mentions only the tools a session has.

    ``line`` is its bullet in "How to work" (a function of the names of the session's tools when it
    depends on which others are there; None from it: no bullet); ``section`` a section of its own after
    that list. ``order`` places it among the other tools' (bullets, then sections, each by order; ties
    in the manifest's order): reading 10, finding 20, editing 30, checking 40, planning 50, asking 60,
    sections from 70. ``previewed``: the user sees each of its calls (a diff, a command) before it runs
    and may decline it; one bullet says so, and what to do then, when any tool of the session is.
    """

    order: int
    line: str | Callable[[frozenset[str]], str | None] | None = None
    section: str | None = None
    previewed: bool = False

    def line_for(self, present: frozenset[str]) -> str | None:
        """Its bullet in a session whose tools are ``present`` (names), or None."""
        return self.line(present) if callable(self.line) else self.line


@value
class Tool:
    """A tool's declaration: what the model sees, how a call runs and shows, and its traits.

    The traits (after ``validate``) are what the rest of the agent decides by the tool, never by its
    name: ``guidance`` (its part of the system prompt); ``toolsets`` (the ``tools.toolsets`` that give
    it to a delegated child) and ``delegable`` (False: a child never has it, whatever its toolsets);
    ``reviewed`` (the learning loop's background review may use it); ``flushed`` (the memory flush
    before a compaction may use it); ``saves`` (what it keeps for later sessions: using it of the
    agent's own accord puts off the learning loop's review of that kind); ``path_args`` (the arguments
    that name a file or folder: a subdirectory's hints are found through them) and ``command_arg`` (an
    argument that is a shell command line, whose path-like words count too); ``claude_names`` (what Claude
    Code calls the same tool: a user's hook matchers written for it match this tool too).
    """

    name: str
    description: str
    schema: dict[str, Any]
    handler: Handler
    kind: ToolKind
    access: Access
    parallel_safe: bool = False
    present: Presenter | None = None
    restore: Restorer | None = None  # puts back the session state a stored call left
    trusted_output: bool = False  # its result only echoes the agent's own state: not scanned
    validate: ArgumentCheck | None = None  # a schema from outside: its own bounded check, not the registry's
    guidance: Guidance | None = None
    toolsets: tuple[str, ...] = ()
    delegable: bool = True
    reviewed: bool = False
    flushed: bool = False
    saves: Literal["notes", "skills"] | None = None
    path_args: tuple[str, ...] = COMMON_PATH_ARGS
    command_arg: str | None = None
    claude_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [name for name in self.toolsets if name not in TOOLSETS]
        if unknown:
            raise ValueError(f"tool {self.name!r}: unknown toolsets {unknown}; known: {', '.join(TOOLSETS)}")
        if self.toolsets and not self.delegable:
            raise ValueError(f"tool {self.name!r} is in toolsets {list(self.toolsets)} but never delegated")

    def presentation(self, args: dict[str, Any], scope: ToolScope) -> Presentation:
        if self.present is None:
            return Presentation(self.name)
        try:
            return self.present(args, scope)
        except Exception:  # a presenter must never break a turn
            log.exception("presenter for %s failed", self.name)
            return Presentation(self.name)


async def _flag_injection(tool_name: str, text: str) -> str:
    """``text`` with a warning to the model in front when it carries prompt-injection patterns.

    Tool output is data from files, commands and the network: it reaches the model, so text in it
    that reads like instructions to the agent is pointed out rather than passed on silently.
    """
    findings = await anyio.to_thread.run_sync(scan, text, "context")
    if not findings:
        return text
    ids = [finding.pattern_id for finding in findings]
    log.warning("%s output carries injection patterns: %s", tool_name, ", ".join(ids))
    return f"{injection_warning(f'{tool_name} output', ids)}\n{text}"


def cap_text(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    """Cut ``text`` to ``limit`` characters, keeping head and tail, saying what was cut."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    omitted = len(text) - head - tail
    return (
        f"{text[:head]}\n\n[... {omitted:,} characters omitted: result capped at {limit:,} characters; "
        f"narrow the request (offset/limit, a more specific pattern) to see the rest ...]\n\n{text[-tail:]}"
    )


# jsonschema's modules import one another: two threads importing it at once (the warm-up, an MCP
# schema check) can each be handed the other's half-built module ("cannot import name …"). Every
# import of it, and of ``referencing`` beneath it, holds this lock.
JSONSCHEMA_IMPORT = threading.Lock()


class ToolRegistry:
    """The tools one session can use."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._validators: dict[str, Any] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is declared twice")
        self._tools[tool.name] = tool

    def extended(self, tools: Iterable[Tool]) -> ToolRegistry:
        """This registry plus ``tools`` (a session's MCP tools), keeping the validators built so far.

        A tool whose name is already taken is left out with a warning rather than raising: these
        names come from outside, and a duplicate must not break every prompt of the session.
        """
        registry = ToolRegistry(self._tools.values())
        registry._validators = dict(self._validators)
        for tool in tools:
            if tool.name in registry._tools:
                log.warning("tool %s is declared twice; the later one is left out", tool.name)
                continue
            registry.register(tool)
        return registry

    def only(self, names: Iterable[str]) -> ToolRegistry:
        """The tools of this registry named in ``names``, in this registry's order (a subagent's
        restricted set), keeping their validators."""
        wanted = set(names)
        registry = ToolRegistry(tool for name, tool in self._tools.items() if name in wanted)
        registry._validators = {name: check for name, check in self._validators.items() if name in wanted}
        return registry

    def where(self, test: Callable[[Tool], bool]) -> ToolRegistry:
        """The tools of this registry whose traits pass ``test``, in this registry's order (the review's
        tools, the flush's), keeping their validators."""
        return self.only(name for name, tool in self._tools.items() if test(tool))

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def definitions(self) -> list[dict[str, Any]]:
        """Tool declarations in the Anthropic Messages API format, in a stable order."""
        return [
            {"name": t.name, "description": t.description, "input_schema": t.schema}
            for t in self._tools.values()
        ]

    def presentation(self, call: ToolCall, scope: ToolScope) -> tuple[Presentation, ToolKind]:
        tool = self._tools.get(call.name)
        if tool is None:
            return Presentation(call.name), "other"
        return tool.presentation(call.arguments or {}, scope), tool.kind

    def batches(self, calls: Sequence[ToolCall]) -> list[list[ToolCall]]:
        """Group consecutive read-only, parallel-safe calls; everything else runs alone, in order."""
        groups: list[list[ToolCall]] = []
        for call in calls:
            if self._concurrent(call) and groups and self._concurrent(groups[-1][-1]):
                groups[-1].append(call)
            else:
                groups.append([call])
        return groups

    def _concurrent(self, call: ToolCall) -> bool:
        tool = self._tools.get(call.name)
        return tool is not None and tool.parallel_safe and not tool.access.mutates

    def restore_state(self, scope: ToolScope, finished: Iterable[tuple[str, Any]]) -> None:
        """Give a reloaded session back its tools' state from its stored calls, oldest first:
        ``finished`` holds (tool name, raw output) of each call that completed."""
        for name, raw_output in finished:
            tool = self._tools.get(name)
            if tool is not None and tool.restore is not None:
                tool.restore(scope, raw_output)

    def prepare(self) -> None:
        """Build every tool's argument validator now (importing jsonschema takes ~90 ms)."""
        for tool in self._tools.values():
            if tool.validate is None:
                self._validator(tool)

    def _validator(self, tool: Tool) -> Any:
        validator = self._validators.get(tool.name)
        if validator is None:
            with JSONSCHEMA_IMPORT:
                from jsonschema import Draft202012Validator  # deferred: ~90 ms to import

            validator = Draft202012Validator(tool.schema)
            self._validators[tool.name] = validator
        return validator

    def validation_error(self, tool: Tool, args: dict[str, Any]) -> str | None:
        """Why ``args`` do not fit ``tool``'s schema, or None when they do; never raises."""
        if tool.validate is not None:
            return tool.validate(args)
        try:
            validator = self._validator(tool)
            errors = sorted(validator.iter_errors(args), key=lambda e: list(e.absolute_path))
        except Exception as error:  # a broken schema refuses the call rather than the turn
            log.exception("the schema of %s could not be applied", tool.name)
            return f"the tool's input schema could not be applied: {type(error).__name__}: {error}"
        return describe_errors(errors)

    async def dispatch(self, call: ToolCall, ctx: ToolContext) -> ToolResult:
        """Validate and run one call. Only cancellation propagates; every failure is a result."""
        tool = self._tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self._tools))
            return ToolResult(f"Error: unknown tool {call.name!r}. Available tools: {known}.", ok=False)
        if call.arguments is None:
            return ToolResult(
                f"Error: the arguments for {call.name} are not valid JSON ({call.raw_arguments[:200]!r}). "
                "Call the tool again with a JSON object matching its schema.",
                ok=False,
            )
        problem = self.validation_error(tool, call.arguments)
        if problem is not None:
            return ToolResult(f"Error: invalid arguments for {call.name}: {problem}", ok=False)
        if not tool.access.mutates:
            await ctx.emit(ToolCallUpdated(call.id))
        result = await _run_handler(tool, call, ctx)
        secrets = ctx.services.secrets
        result.text = cap_text(_redacted(result.text, secrets))
        if secrets:  # what the editor shows (and the session stores) is redacted too
            result.display = tuple(TextDisplay(_redacted(d.text, secrets), d.fence) if isinstance(d, TextDisplay)
                                   else d for d in result.display)
        if not tool.trusted_output:
            result.text = await _flag_injection(call.name, result.text)
        return result


def describe_errors(errors: Sequence[Any]) -> str | None:
    """The first five of jsonschema's ``errors`` (sorted by the caller) as one line, or None for none."""
    if not errors:
        return None
    parts = []
    for error in errors[:5]:
        where = "/".join(str(p) for p in error.absolute_path)
        parts.append(f"{where}: {error.message}" if where else error.message)
    return "; ".join(parts)


async def _run_handler(tool: Tool, call: ToolCall, ctx: ToolContext) -> ToolResult:
    """The handler's result, or its failure as an error result."""
    assert call.arguments is not None
    try:
        return await tool.handler(call.arguments, ctx)
    except PermissionDenied as denied:  # the model reads its message; the editor shows the user's words
        return ToolResult(str(denied), ok=False, display=(TextDisplay(denied.shown, ""),))
    except (ToolError, EditorRefused) as error:
        return ToolResult(f"Error: {error}", ok=False)
    except PathChanged as changed:  # a directory became a symlink after the path was approved
        return ToolResult(f"Error: {changed}. The change was not made there; check the path.", ok=False)
    except Exception as error:  # a broken tool must not break the turn
        log.exception("tool %s failed", call.name)
        return ToolResult(f"Error: {call.name} failed: {type(error).__name__}: {error}", ok=False)


def _redacted(text: str, secrets: Sequence[str]) -> str:
    """``text`` without the session's secret values (a key printed by a command or read from a file)."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, "[redacted: secret]")
    return text
