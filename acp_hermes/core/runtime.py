"""The process-wide services every session shares, each built on first use.

Nothing here may be built on the way to answering ``initialize`` or ``session/new`` unless it
is cheap: the model provider, the tool registry and the memory store load when a session first
needs them; the SessionDB is opened on a thread while the server starts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from acp_hermes.config import Paths, Settings
from acp_hermes.model.pricing import cost_usd, price_of
from acp_hermes.model.types import Usage
from acp_hermes_memory.grants import GrantStore
from acp_hermes_memory.values import value

if TYPE_CHECKING:
    from concurrent.futures import Future

    from acp_hermes.core.memory_providers import MemoryProviders
    from acp_hermes.model.provider import AnthropicProvider
    from acp_hermes_memory.session_db import SessionDB
    from acp_hermes_memory.skills import SkillStore
    from acp_hermes_memory.store import MemoryStore
    from acp_hermes_memory.trust_store import TrustStore
    from acp_hermes_tools.checkpoints import CheckpointStore
    from acp_hermes_tools.registry import ToolRegistry
    from acp_hermes_tools.sandbox import SandboxStatus

log = logging.getLogger(__name__)

# How long the second step of the warm-up waits for the first model response's first output (see warm_up).
TOOL_WARM_UP_DELAY = 0.5


class Runtime:
    """What every session of the process shares, built on first use (a plain class, not a dataclass:
    defining one costs a millisecond on the way to the first prompt)."""

    __slots__ = ("_build_lock", "_checkpoints", "_db", "_db_lock", "_grants", "_memory", "_memory_providers",
                 "_provider", "_registry", "_skills", "_stores_lock", "_trust", "db_opening", "paths", "sandbox_probe",
                 "settings", "trust_everything", "warmed")

    def __init__(self, settings: Settings, paths: Paths,
                 db_opening: Future[SessionDB] | None = None,  # state.db being opened on a thread since start-up
                 sandbox_probe: Future[None] | None = None,  # the OS sandbox being tried on a thread since start-up
                 trust_everything: bool = False,  # --trust / ACP_HERMES_TRUST: every workspace trusted (headless use)
                 warmed: Callable[[], None] = lambda: None) -> None:  # the warm-up's first step is done (GC starts)
        self.settings = settings
        self.paths = paths
        self.db_opening = db_opening
        self.sandbox_probe = sandbox_probe
        self.trust_everything = trust_everything
        self.warmed = warmed
        self._provider: AnthropicProvider | None = None
        self._registry: ToolRegistry | None = None
        self._db: SessionDB | None = None
        self._db_lock = threading.Lock()
        self._build_lock = threading.Lock()  # the warm-up builds on a thread
        # Sessions are built on worker threads (core.sessions): the stores they share are made once.
        self._stores_lock = threading.Lock()
        self._memory: MemoryStore | None = None
        self._memory_providers: MemoryProviders | None = None
        self._grants: GrantStore | None = None
        self._trust: TrustStore | None = None
        # By project, and whether its own skills are in (a trusted workspace): sessions there share the index.
        self._skills: dict[tuple[Path, bool], SkillStore] = {}
        self._checkpoints: dict[Path, CheckpointStore] = {}  # by workspace: sessions there share it

    @property
    def provider(self) -> AnthropicProvider:
        with self._build_lock:
            if self._provider is None:
                from acp_hermes.model.provider import AnthropicProvider

                self._provider = AnthropicProvider(self.settings, self.paths.import_index)
            return self._provider

    @property
    def registry(self) -> ToolRegistry:
        with self._build_lock:
            if self._registry is None:
                from acp_hermes_tools import core_tools
                from acp_hermes_tools.registry import ToolRegistry

                self._registry = ToolRegistry(core_tools())
            return self._registry

    @property
    def sandbox(self) -> SandboxStatus:
        """Whether commands run in an OS sandbox here, as the settings have it. Trying bubblewrap takes
        tens of milliseconds, so it starts with the process (``sandbox_probe``); ``session/new`` needs
        the answer (whether ``bypass`` is offered) and waits for it only if it is still running."""
        from acp_hermes_tools.sandbox import sandbox_status

        return sandbox_status(self.settings.sandbox != "off", self.sandbox_probe)

    @property
    def tool_names(self) -> frozenset[str]:
        """The tools' names, from the manifest (importing the tool modules, not building the registry:
        a new session's system prompt needs them while the warm-up may hold the build lock)."""
        from acp_hermes_tools import core_tools

        return frozenset(tool.name for tool in core_tools())

    @property
    def db(self) -> SessionDB:
        """The SessionDB: the one opened since start-up, or opened now (also when that failed)."""
        with self._db_lock:
            if self._db is None:
                opening, self.db_opening = self.db_opening, None
                if opening is not None:
                    self._db = opening.result()
                else:
                    from acp_hermes_memory.session_db import SessionDB

                    self._db = SessionDB(self.paths.state_db)
            return self._db

    @property
    def memory(self) -> MemoryStore:
        with self._stores_lock:
            if self._memory is None:
                from acp_hermes_memory.store import MemoryStore

                self._memory = MemoryStore(
                    self.paths.memories, self.settings.memory_char_limit, self.settings.user_char_limit
                )
            return self._memory

    @property
    def memory_providers(self) -> MemoryProviders:
        """The built-in memory and the external provider ``memory.provider`` names (loaded once; its
        plugin's code runs here, so the first use is on a worker thread when one is configured)."""
        with self._stores_lock:
            if self._memory_providers is None:
                from acp_hermes.core.memory_providers import MemoryProviders

                self._memory_providers = MemoryProviders(self.settings.memory.providers, home=self.paths.home,
                                                         ask=self._ask_auxiliary)
            return self._memory_providers

    async def _ask_auxiliary(self, system: str, prompt: str, session_id: str) -> str:
        """The auxiliary model, for a memory provider's work on a session (charged to it when named)."""
        model = self.settings.auxiliary_model
        text, usage = await self.provider.complete(model=model, system=system, prompt=prompt, max_tokens=2048)
        if session_id:
            await anyio.to_thread.run_sync(self.record_usage, session_id, model, usage)
        return text

    def skills_for(self, cwd: Path, project: bool = True) -> SkillStore:
        """The skills a session in ``cwd`` sees: ``$HERMES_HOME/skills``, then the configured
        folders and, with ``project`` (a trusted workspace: ``core.trust``), the project's
        ``.hermes/skills`` and ``.agents/skills`` (read-only, scanned whole; the home folder wins a
        name). Changes are recorded in the skills history."""
        with self._stores_lock:
            store = self._skills.get((cwd, project))
            if store is None:
                from acp_hermes_memory.skills import SkillStore

                external = [Path(os.path.expanduser(d)) for d in self.settings.skills_external_dirs]
                paths = self.paths
                own = [cwd / ".hermes" / "skills", cwd / ".agents" / "skills"] if project else []
                store = self._skills[(cwd, project)] = SkillStore(
                    paths.skills, external, project=own, history=paths.skills_history,
                    scan_cache=paths.project_skill_scans)
            return store

    def checkpoints_for(self, workspace: Path) -> CheckpointStore:
        """The shadow store of ``workspace`` (blocking the first time: it may create it)."""
        with self._stores_lock:
            store = self._checkpoints.get(workspace)
            if store is None:
                from acp_hermes_tools.checkpoints import CheckpointStore

                limits = self.settings.checkpoints
                store = CheckpointStore.for_workspace(
                    self.paths.checkpoints, workspace, max_file_bytes=int(limits.max_file_size_mb * 1024 * 1024),
                    max_files=limits.max_files)
                store.recover()  # a restore a killed process left half done is finished before anything else
                self._checkpoints[workspace] = store
            return store

    def tend_checkpoints(self) -> None:
        """Finish the restores killed processes left half done and prune every workspace's checkpoints
        by count and age (blocking: a background thread runs it once per process, after the first
        response: ``wait_for_first_response``)."""
        self.wait_for_first_response()
        from acp_hermes_tools.checkpoints import recover_all, stores

        home, limits = self.paths.checkpoints, self.settings.checkpoints
        for directory, report in recover_all(home):
            log.info("checkpoints: finished a restore a killed process left in %s (%d file(s))", directory,
                     len(report.written) + len(report.deleted))
        for store in stores(home):
            try:
                pruned = store.prune(keep=limits.keep, max_age_seconds=limits.max_age_days * 86_400)
            except Exception:  # one broken store must not keep the others from being pruned
                log.exception("checkpoints: pruning %s failed", store)
                continue
            if pruned:
                log.info("checkpoints: pruned %d old checkpoint(s) of %s", pruned, store)

    @property
    def grants(self) -> GrantStore:
        with self._stores_lock:
            if self._grants is None:
                self._grants = GrantStore(self.paths.permissions_file)
            return self._grants

    @property
    def trust_store(self) -> TrustStore:
        """Which repositories the user trusts, shared by every process (``memory.trust_store``)."""
        with self._stores_lock:
            if self._trust is None:
                from acp_hermes_memory.trust_store import TrustStore

                self._trust = TrustStore(self.paths.trust_file)
            return self._trust

    @staticmethod
    def import_session_code() -> None:
        """Import what building a session needs beyond ``initialize`` (its sandbox, skills store and
        learning-loop counters). Blocking and idempotent: the session manager runs it on a thread
        (restoring a session, beside the read of its rows), so the event loop does not import them."""
        import acp_hermes.core.review  # noqa: F401
        import acp_hermes_memory.skills  # noqa: F401
        import acp_hermes_tools.sandbox
        import acp_hermes_tools.secret_links  # noqa: F401

    def wait_for_first_response(self) -> None:
        """Block until the first model response's first output has been handled, or
        ``TOOL_WARM_UP_DELAY`` seconds when no prompt comes. Work nobody waits for (the warm-up's
        second step, the upkeep of checkpoints and skills) waits for it, on its own thread: a prompt
        sent at once shares one GIL with it, so anything run before that first chunk is out delays it."""
        self.provider.responding.wait(TOOL_WARM_UP_DELAY)

    def warm_up(self) -> None:
        """Load what a turn needs before the first prompt asks for it. Blocking: run it in a thread
        right after a session opens; nothing of it is needed to answer ``initialize`` or ``session/new``.

        Two steps. First what the first model request needs: the model SDK and its HTTP client, the
        tools' definitions, the loop. Then what the first tool call needs: the command rules, the
        tools' schema validators (jsonschema), the sandbox check. The second waits until the first
        model response's first output has been handled (or ``TOOL_WARM_UP_DELAY`` seconds, when no
        prompt comes): a prompt sent at once shares one GIL with the warm-up, so everything this
        thread runs before that first chunk is out delays it (a tool call that comes first builds its own
        validator, as without the warm-up).
        """
        began, cpu = time.perf_counter(), time.thread_time()
        provider = self.provider
        provider.prepare()
        self.registry  # noqa: B018
        import acp_hermes.core.attachments
        import acp_hermes.core.loop

        log.debug("warm-up: model client, tools and loop ready after %.0f ms (%.0f ms CPU on this thread)",
                  (time.perf_counter() - began) * 1000, (time.thread_time() - cpu) * 1000)
        self.warmed()
        self.wait_for_first_response()
        began, cpu = time.perf_counter(), time.thread_time()
        import acp_hermes.permissions.shell.analysis  # noqa: F401
        from acp_hermes_tools.sandbox import detect

        self.registry.prepare()
        if self.settings.sandbox != "off":
            detect()  # runs bubblewrap once to see that it works: not on the event loop, not later
        provider.remember_imports()
        log.debug("warm-up: command rules, validators and sandbox check ready after %.0f ms (%.0f ms CPU)",
                  (time.perf_counter() - began) * 1000, (time.thread_time() - cpu) * 1000)

    def cost_of(self, model: str, usage: Usage) -> float:
        """What ``usage`` of ``model`` costs in dollars at its list price (0 when the price is unknown)."""
        price = price_of(model, self.settings)
        return cost_usd(usage, price, self.settings.cache_ttl) if price is not None else 0.0

    def record_usage(self, session_id: str, model: str, usage: Usage, api_calls: int = 1) -> None:
        """Add a model call's tokens and cost to the session (blocking: call it in a thread)."""
        from acp_hermes_memory.session_db import SessionNotFound

        cost = self.cost_of(model, usage)
        with contextlib.suppress(SessionNotFound):  # deleted meanwhile: nothing left to charge
            self.db.add_usage(
                session_id,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
                cost_usd=cost,
                api_calls=api_calls,
            )

    async def aclose(self) -> None:
        if self._memory_providers is not None:
            await anyio.to_thread.run_sync(self._memory_providers.shutdown)
        if self._provider is not None:
            await self._provider.aclose()
        opening, self.db_opening = self.db_opening, None
        if opening is not None and self._db is None:
            with contextlib.suppress(Exception):  # opening failed: nothing to close
                self._db = await anyio.to_thread.run_sync(opening.result)
        if self._db is not None:
            self._db.close()


@value
class SessionAuxiliary:
    """The auxiliary model as one session's tools and titles use it: every call charged to it."""

    runtime: Runtime
    session_id: str

    async def complete(self, *, system: str, prompt: str, max_tokens: int) -> str:
        model = self.runtime.settings.auxiliary_model
        text, usage = await self.runtime.provider.complete(
            model=model, system=system, prompt=prompt, max_tokens=max_tokens
        )
        await anyio.to_thread.run_sync(self.runtime.record_usage, self.session_id, model, usage)
        return text
