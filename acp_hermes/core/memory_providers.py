"""The memory providers of the process: the built-in memory (MEMORY.md and USER.md, always there: its
snapshot, tool and scanning are ``store`` and the ``memory`` tool), then at most one external provider
(``memory.provider``), every call to it bounded so none can break a turn.

Providers are plain synchronous Python (as Hermes's are). Each call runs on a daemon thread of its
own with a time budget: loading it (its plugin's import, making it, ``is_available``) 2 s from when it
is first needed, ``prefetch`` (on the turn's path) 300 ms, the prompt block and the session's start
(``initialize``) 300 ms, tools 30 s, the rest in the background; at the agent's exit, what is still
running in the background (a session's end) gets 3 s. A call that overruns is left to finish on its
thread while the turn goes on without it; a provider whose earlier call is still running is not
called again until it returns (a hung provider holds one thread, never more), and one still loading
is not called at all until it has loaded. A failure is logged, told once in each session's chat, and
the turn goes on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import anyio

from acp_hermes.core.events import CompactionStarting, SessionEnded, SessionEvent, TaskDelegated, TurnEnded
from acp_hermes.model.provider import messages_to_wire
from acp_hermes_memory.providers import (
    MemoryProvider,
    ProviderError,
    calling_for,
    current_session_id,
    find,
)
from acp_hermes_tools.contracts import MemoryWritten, TextDisplay
from acp_hermes_tools.mcp.schema import SchemaCheck
from acp_hermes_tools.registry import Access, Presentation, Tool, ToolError, ToolResult

log = logging.getLogger(__name__)

T = TypeVar("T")
LOAD_SECONDS = 2.0  # the plugin's import and is_available, from when the provider is first needed
PREFETCH_SECONDS = 0.3  # on the turn's path
START_SECONDS = 0.3  # initialize and the system prompt block, as a session is built
TOOL_SECONDS = 30.0
HOOK_SECONDS = 10.0  # calls off the turn's path
EXIT_SECONDS = 3.0  # at the agent's exit, for what still runs in the background (a session's end)

Tell = Callable[[str], None]  # says something to the user of one session, now
# Asks the auxiliary model (system, prompt) for a session, charging it: the runtime's.
Ask = Callable[[str, str, str], Coroutine[Any, Any, str]]


class MemoryProviders:
    """The providers every session of the process uses."""

    def __init__(self, names: list[str], *, home: Path, ask: Ask | None = None) -> None:
        """Starts loading the first provider ``names`` has, on a thread of its own (the user's plugin code
        may hang at import or in ``is_available``): whoever needs it waits for it within ``LOAD_SECONDS``."""
        self._home = home
        self._ask = ask
        self._name = names[0] if names else ""
        self._refused = (f"only one external memory provider is used at a time: `{names[0]}`; "
                         f"{', '.join(f'`{n}`' for n in names[1:])} refused") if len(names) > 1 else None
        self._running: dict[str, int] = {}  # calls still running per method: a hung one is not called again
        self._started: set[str] = set()  # sessions whose initialize was called
        self._told: set[str] = set()  # sessions told of a failure
        self._untold: dict[str, str] = {}  # a session's failure found while it was built, told at its first turn
        self._told_refusal: set[str] = set()  # sessions told why the provider asked for is not used
        self._tools: list[Tool] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # where the auxiliary model is asked from
        self._pending: set[concurrent.futures.Future[Any]] = set()  # background calls not yet returned
        self._loading: concurrent.futures.Future[MemoryProvider] | None = None
        self._load_deadline = time.monotonic() + LOAD_SECONDS
        if names:
            self._loading = concurrent.futures.Future()
            threading.Thread(target=self._load, name=f"memory-provider load {self._name}", daemon=True).start()

    def _load(self) -> None:
        """On its own daemon thread: the plugin imported, the provider made and asked whether it can work."""
        assert self._loading is not None
        if not self._loading.set_running_or_notify_cancel():
            return
        try:
            provider = find(self._name, self._home / "plugins").make()
            available = _available(provider)
            if available and self._ask is not None:
                provider.use_model(self._complete)
        except BaseException as error:  # the user's plugin code can raise anything (SystemExit too)
            self._refuse(f"memory provider `{self._name}` could not be loaded: {error}")
            return
        if not available:
            self._refuse(f"memory provider `{self._name}` is not available here (is_available() said no); "
                         "`acp-hermes doctor` says more")
            return
        self._loading.set_result(provider)
        log.info("memory provider %s in use", provider.name)

    def _refuse(self, problem: str) -> None:
        assert self._loading is not None
        log.warning("%s", problem)
        self._loading.set_exception(ProviderError(problem))

    @property
    def external(self) -> MemoryProvider | None:
        """The external provider once it has loaded (None while it loads, and when it could not)."""
        loading = self._loading
        if loading is None or not loading.done() or loading.exception() is not None:
            return None
        return loading.result()

    def _loaded(self) -> MemoryProvider | None:
        """The external provider, waited for (blocking) until the load's budget is spent."""
        if self._loading is not None and not self._loading.done():
            concurrent.futures.wait([self._loading], timeout=max(0.0, self._load_deadline - time.monotonic()))
        return self.external

    async def _loaded_soon(self) -> MemoryProvider | None:
        """The external provider, awaited until the load's budget is spent (a cancel stops the wait)."""
        if self._loading is not None and not self._loading.done():
            return await anyio.to_thread.run_sync(self._loaded, abandon_on_cancel=True)
        return self.external

    def _not_loaded(self) -> str | None:
        """Why the provider asked for is not in use (yet), or None."""
        loading = self._loading
        if loading is None:
            return None
        if not loading.done():
            return (f"memory provider `{self._name}` did not load within {LOAD_SECONDS:g} s (its import or "
                    "is_available() has not returned); the session goes on without it")
        error = loading.exception()
        return str(error) if error is not None else None

    # -- calls with a budget

    def _call_blocking(self, what: str, budget: float, call: Callable[[], T], session_id: str = "") -> T | None:
        """``call`` on a thread of its own, waited for at most ``budget`` seconds (from a worker thread)."""
        future = self._submit(what, call, session_id)
        if future is None:
            return None
        try:
            return future.result(timeout=budget)
        except concurrent.futures.TimeoutError:
            self._failed(what, f"took longer than {budget:g} s", session_id=session_id)
        except Exception as error:
            self._failed(what, f"{type(error).__name__}: {error}", session_id=session_id)
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
        if self.external is None:
            return None  # none, or not loaded (yet)
        if self._running.get(what, 0) > 0:
            self._failed(what, "its previous call has not returned", session_id=session_id)
            return None
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
        """Logged each time; told once in a session's chat (a failure while it was built, at its first turn)."""
        name = self.external.name if self.external is not None else self._name
        log.warning("memory provider %s: %s failed: %s", name, what, problem)
        if not session_id or session_id in self._told:
            return
        said = (f"⚠️ The memory provider `{name}` failed ({what}: {problem}). The session goes on without what it "
                "would have added; the log has each failure.")
        if tell is None:
            self._untold.setdefault(session_id, said)
        else:
            self._told.add(session_id)
            tell(self._untold.pop(session_id, said))

    # -- a session's life

    def start_session(self, session_id: str, cwd: Path) -> str:
        """A session is built (blocking, on its worker thread): the provider starts it; its block for
        the frozen system prompt, scanned like any text that feeds a prompt. A provider still loading
        once its budget is spent is left out (its first turn says why)."""
        provider = self._loaded()
        if provider is None:
            return ""
        self._started.add(session_id)
        self._call_blocking("initialize", START_SECONDS, lambda: provider.initialize(
            session_id, hermes_home=str(self._home), cwd=str(cwd), platform="acp"), session_id)
        block = self._call_blocking("system_prompt_block", START_SECONDS, provider.system_prompt_block, session_id)
        if not isinstance(block, str) or not block.strip():
            return ""
        from acp_hermes_memory.scan import guard_context_text

        return f"## Memory provider: {provider.name}\n\n" + guard_context_text(f"memory provider {provider.name}",
                                                                             block.strip())

    async def recall(self, session_id: str, cwd: Path, turn: int, message: str, tell: Tell) -> str:
        """What the provider recalls for the user's ``message`` (scanned), within the turn's budget."""
        provider = await self._loaded_soon()
        refused = [why for why in (self._refused, self._not_loaded()) if why]
        if refused and session_id not in self._told_refusal:
            self._told_refusal.add(session_id)
            tell("".join(f"⚠️ {why}.\n" for why in refused).rstrip("\n"))
        if session_id in self._untold and session_id not in self._told:  # it failed while the session was built
            self._told.add(session_id)
            tell(self._untold.pop(session_id))
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

    def publish(self, session_id: str, event: SessionEvent) -> None:
        """What happened in session ``session_id``, told to the provider in the background by its hook of
        Hermes's name: the one place the session's events meet those names."""
        provider = self.external
        if provider is None:
            return
        if isinstance(event, TurnEnded):  # what was said; then the next recall may warm up

            def after() -> None:
                provider.sync_turn(event.user_text, event.answer, session_id=session_id)
                provider.queue_prefetch(event.user_text, session_id=session_id)

            self._background("sync_turn", after, session_id)
        elif isinstance(event, MemoryWritten):
            self._background("on_memory_write",
                             lambda: provider.on_memory_write(event.action, event.target, event.content), session_id)
        elif isinstance(event, CompactionStarting):  # the messages in the form Hermes's hooks take: the API's
            self._background("on_pre_compress", lambda: provider.on_pre_compress(messages_to_wire(event.messages)),
                             session_id)
        elif isinstance(event, TaskDelegated):
            self._background("on_delegation", lambda: provider.on_delegation(
                event.task, event.result, child_session_id=event.child_session_id), session_id)
        elif isinstance(event, SessionEnded):
            self._background("on_session_end", lambda: provider.on_session_end(messages_to_wire(event.messages)),
                             session_id)

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
        is still doing in the background (a session's end) may finish within ``EXIT_SECONDS``, then it stops."""
        concurrent.futures.wait(list(self._pending), timeout=EXIT_SECONDS)
        provider = self.external
        if provider is not None:
            self._call_blocking("shutdown", START_SECONDS, provider.shutdown)

    def summary(self) -> list[str]:
        """What ``/memory`` shows of the provider (blocking, within the start budget)."""
        provider = self._loaded()
        if provider is None:
            return [f"⚠️ {why}." for why in (self._refused, self._not_loaded()) if why]
        lines = self._call_blocking("summary", START_SECONDS * 3, provider.summary)
        return [f"**Memory provider `{provider.name}`**", *(lines if isinstance(lines, list) else
                                                          ["(it did not answer in time)"])]

    # -- its tools

    def tools(self) -> list[Tool]:
        """The provider's tools as registry tools: dispatched through the registry and the gate (none
        while it is still loading; asked for again once it has)."""
        if self._tools is None:
            provider = self._loaded()
            if provider is None:
                return []
            schemas = self._call_blocking("get_tool_schemas", START_SECONDS, provider.get_tool_schemas)
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
