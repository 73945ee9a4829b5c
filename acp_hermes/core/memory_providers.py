"""The memory providers of the process: the built-in memory (MEMORY.md and USER.md, always there: its
snapshot, tool and scanning are ``store`` and the ``memory`` tool), then at most one external provider
(``memory.provider``), every call to it bounded so none can break a turn.

Providers are plain synchronous Python (as Hermes's are). Each call runs on a daemon thread of its
own with a time budget: ``prefetch`` (on the turn's path) 300 ms, the prompt block and the
session's start 300 ms, tools 30 s, the rest in the background. A call that overruns is left to
finish on its thread while the turn goes on without it; a provider whose earlier call is still
running is not called again until it returns (a hung provider holds one thread, never more). A
failure is logged, told once in each session's chat, and the turn goes on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import anyio

from acp_hermes_memory.providers import (
    MemoryProvider,
    ProviderError,
    calling_for,
    current_session_id,
    find,
)
from acp_hermes_tools.contracts import TextDisplay
from acp_hermes_tools.mcp.schema import SchemaCheck
from acp_hermes_tools.registry import Access, Presentation, Tool, ToolError, ToolResult

log = logging.getLogger(__name__)

T = TypeVar("T")
PREFETCH_SECONDS = 0.3  # on the turn's path
START_SECONDS = 0.3  # initialize and the system prompt block, as a session is built
TOOL_SECONDS = 30.0
HOOK_SECONDS = 10.0  # calls off the turn's path

Tell = Callable[[str], None]  # says something to the user of one session, now
# Asks the auxiliary model (system, prompt) for a session, charging it: the runtime's.
Ask = Callable[[str, str, str], Coroutine[Any, Any, str]]


class MemoryProviders:
    """The providers every session of the process uses."""

    def __init__(self, external: MemoryProvider | None, *, home: Path, refused: str | None = None,
                 ask: Ask | None = None) -> None:
        self.external = external
        self._home = home
        self._refused = refused  # why a provider asked for was not used (told to each session once)
        self._running: dict[str, int] = {}  # calls still running per method: a hung one is not called again
        self._started: set[str] = set()  # sessions whose initialize was called
        self._told: set[str] = set()  # sessions told of a failure
        self._told_refusal: set[str] = set()  # sessions told why the provider asked for is not used
        self._tools: list[Tool] | None = None
        self._ask = ask
        self._loop: asyncio.AbstractEventLoop | None = None  # where the auxiliary model is asked from
        self._pending: set[concurrent.futures.Future[Any]] = set()  # background calls not yet returned
        if external is not None and ask is not None:
            external.use_model(self._complete)

    @classmethod
    def configured(cls, names: list[str], home: Path, ask: Ask | None = None) -> MemoryProviders:
        """The providers ``memory.provider`` names: the first external one found and available."""
        if not names:
            return cls(None, home=home)
        refused = (f"only one external memory provider is used at a time: `{names[0]}`; "
                   f"{', '.join(f'`{n}`' for n in names[1:])} refused") if len(names) > 1 else None
        try:
            provider = find(names[0], home / "plugins").make()
        except (ProviderError, Exception) as error:  # the user's plugin code can raise anything
            return cls(None, home=home, refused=f"memory provider `{names[0]}` could not be loaded: {error}")
        if not _available(provider):
            return cls(None, home=home, refused=f"memory provider `{names[0]}` is not available here "
                                                "(is_available() said no); `acp-hermes doctor` says more")
        log.info("memory provider %s in use", provider.name)
        return cls(provider, home=home, refused=refused, ask=ask)

    # -- calls with a budget

    def _call_blocking(self, what: str, budget: float, call: Callable[[], T]) -> T | None:
        """``call`` on a thread of its own, waited for at most ``budget`` seconds (from a worker thread)."""
        future = self._submit(what, call)
        if future is None:
            return None
        try:
            return future.result(timeout=budget)
        except concurrent.futures.TimeoutError:
            self._failed(what, f"took longer than {budget:g} s")
        except Exception as error:
            self._failed(what, f"{type(error).__name__}: {error}")
        return None

    async def _call(self, what: str, budget: float, call: Callable[[], T], tell: Tell | None = None,
                    session_id: str = "") -> T | None:
        """``call`` on a thread of its own, awaited at most ``budget`` seconds; None when it failed or overran."""
        future = self._submit(what, call, session_id)
        if future is None:
            return None
        problem = None
        with anyio.move_on_after(budget):
            try:
                return await asyncio.wrap_future(future)
            except Exception as error:
                problem = f"{type(error).__name__}: {error}"
        self._failed(what, problem or f"took longer than {budget:g} s", tell, session_id)
        return None

    def _submit(self, what: str, call: Callable[[], T], session_id: str = "") -> concurrent.futures.Future[T] | None:
        if self.external is None or self._running.get(what, 0) > 0:
            return None  # none, or its last such call has not returned yet
        self._running[what] = self._running.get(what, 0) + 1
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with contextlib.suppress(RuntimeError):  # called from the event loop: the auxiliary model is asked there
            self._loop = asyncio.get_running_loop()

        def run() -> None:
            calling_for(session_id)
            try:
                if not future.set_running_or_notify_cancel():
                    return  # given up on before it began
                try:
                    result = call()
                except BaseException as error:  # the provider's code: whatever it raises is its failure
                    future.set_exception(error)
                else:
                    future.set_result(result)
            finally:
                self._running[what] -= 1

        # A daemon thread of its own: a provider that never returns holds that thread alone, and cannot
        # keep the agent from exiting.
        threading.Thread(target=run, name=f"memory-provider {what}", daemon=True).start()
        return future

    def _failed(self, what: str, problem: str, tell: Tell | None = None, session_id: str = "") -> None:
        name = self.external.name if self.external is not None else "memory provider"
        log.warning("memory provider %s: %s failed: %s", name, what, problem)
        if tell is not None and session_id not in self._told:
            self._told.add(session_id)
            tell(f"⚠️ The memory provider `{name}` failed ({what}: {problem}). The session goes on without what it "
                 "would have added; the log has each failure.")

    # -- a session's life

    def start_session(self, session_id: str, cwd: Path) -> str:
        """A session is built (blocking, on its worker thread): the provider starts it; its block for
        the frozen system prompt, scanned like any text that feeds a prompt."""
        if self.external is None:
            return ""
        provider = self.external
        self._started.add(session_id)
        self._call_blocking("initialize", START_SECONDS, lambda: provider.initialize(
            session_id, hermes_home=str(self._home), cwd=str(cwd), platform="acp"))
        block = self._call_blocking("system_prompt_block", START_SECONDS, provider.system_prompt_block)
        if not isinstance(block, str) or not block.strip():
            return ""
        from acp_hermes_memory.scan import guard_context_text

        return f"## Memory provider: {provider.name}\n\n" + guard_context_text(f"memory provider {provider.name}",
                                                                             block.strip())

    async def recall(self, session_id: str, cwd: Path, turn: int, message: str, tell: Tell) -> str:
        """What the provider recalls for the user's ``message`` (scanned), within the turn's budget."""
        if self._refused is not None and session_id not in self._told_refusal:
            self._told_refusal.add(session_id)
            tell(f"⚠️ {self._refused}.")
        provider = self.external
        if provider is None:
            return ""
        starting = session_id not in self._started  # a session loaded rather than built here
        self._started.add(session_id)
        home, where = str(self._home), str(cwd)

        def turn_start() -> str:  # one call, so the provider hears of the turn before it is asked
            if starting:
                provider.initialize(session_id, hermes_home=home, cwd=where, platform="acp")
            provider.on_turn_start(turn, message)
            return provider.prefetch(message, session_id=session_id)

        found = await self._call("prefetch", PREFETCH_SECONDS, turn_start, tell, session_id)
        if not isinstance(found, str) or not found.strip():
            return ""
        from acp_hermes_memory.scan import guard_context_text

        return guard_context_text(f"memory provider {provider.name}", found.strip())

    def turn_ended(self, session_id: str, user_text: str, answer: str) -> None:
        """Tell the provider what was said, then let it warm up the next recall (in the background)."""
        provider = self.external
        if provider is None:
            return

        def after() -> None:
            provider.sync_turn(user_text, answer, session_id=session_id)
            provider.queue_prefetch(user_text, session_id=session_id)

        self._background("sync_turn", after, session_id)

    def hook(self, session_id: str, name: str, *args: Any, **kwargs: Any) -> None:
        """One of the provider's optional hooks (``on_pre_compress``, ``on_delegation``, ``on_memory_write``,
        ``on_session_end``), called in the background for ``session_id``."""
        provider = self.external
        if provider is not None:
            method = getattr(provider, name)
            self._background(name, lambda: method(*args, **kwargs), session_id)

    def _background(self, what: str, call: Callable[[], Any], session_id: str = "") -> None:
        future = self._submit(what, call, session_id)
        if future is not None:
            self._pending.add(future)
            future.add_done_callback(lambda done: self._check(what, done))

    def _complete(self, system: str, prompt: str) -> str:
        """The provider's way to the auxiliary model (``use_model``): from its thread, on the event loop."""
        if self._ask is None or self._loop is None or self._loop.is_closed():
            raise RuntimeError("the auxiliary model cannot be reached from here")
        asked = asyncio.run_coroutine_threadsafe(self._ask(system, prompt, current_session_id()), self._loop)
        return str(asked.result(timeout=HOOK_SECONDS * 6))

    def _check(self, what: str, done: concurrent.futures.Future[Any]) -> None:
        self._pending.discard(done)
        error = None if done.cancelled() else done.exception()
        if error is not None:
            self._failed(what, f"{type(error).__name__}: {error}")

    def shutdown(self) -> None:
        """The agent exits (blocking, off the event loop, which keeps running meanwhile): what the provider
        is still doing in the background (a session's end) may finish, within a budget, then it stops."""
        concurrent.futures.wait(list(self._pending), timeout=HOOK_SECONDS * 6)
        provider = self.external
        if provider is not None:
            self._call_blocking("shutdown", START_SECONDS, provider.shutdown)

    def summary(self) -> list[str]:
        """What ``/memory`` shows of the provider (blocking, within the start budget)."""
        provider = self.external
        if provider is None:
            return [f"⚠️ {self._refused}."] if self._refused else []
        lines = self._call_blocking("summary", START_SECONDS * 3, provider.summary)
        return [f"**Memory provider `{provider.name}`**", *(lines if isinstance(lines, list) else
                                                          ["(it did not answer in time)"])]

    # -- its tools

    def tools(self) -> list[Tool]:
        """The provider's tools as registry tools: dispatched through the registry and the gate."""
        if self._tools is None:
            provider = self.external
            schemas = self._call_blocking("get_tool_schemas", START_SECONDS, provider.get_tool_schemas) \
                if provider is not None else None
            self._tools = [self._tool(schema) for schema in schemas or [] if _valid_schema(schema)]
        return self._tools

    def _tool(self, schema: dict[str, Any]) -> Tool:
        provider = self.external
        assert provider is not None
        name = str(schema["name"])
        read_only = bool(schema.get("readOnly") or (schema.get("annotations") or {}).get("readOnlyHint"))

        async def handler(arguments: dict[str, Any], ctx: Any) -> ToolResult:
            await ctx.authorize_external(f"memory provider {provider.name}", name, arguments, read_only=read_only)
            result = await self._call(f"tool {name}", TOOL_SECONDS,
                                      lambda: provider.handle_tool_call(name, dict(arguments)))
            if result is None:
                raise ToolError(f"The memory provider {provider.name} did not answer {name}; carry on without it.")
            text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
            return ToolResult(text, display=(TextDisplay(text, ""),))

        return Tool(
            name=name,
            description=f"[memory provider {provider.name}] {schema.get('description') or ''}".strip()[:2000],
            schema=schema.get("parameters") or schema.get("input_schema") or {"type": "object", "properties": {}},
            handler=handler,
            kind="read" if read_only else "other",
            access=Access.READ if read_only else Access.EXECUTE,
            present=lambda arguments, scope: Presentation(f"{name} ({provider.name})"),
            validate=SchemaCheck(schema.get("parameters") or schema.get("input_schema") or {}).problem,
        )


def _available(provider: MemoryProvider) -> bool:
    try:
        return bool(provider.is_available())
    except Exception:
        log.exception("memory provider %s: is_available failed", getattr(provider, "name", "?"))
        return False


def _valid_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and isinstance(schema.get("name"), str) and bool(schema["name"])
