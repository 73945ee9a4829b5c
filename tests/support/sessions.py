"""In-process sessions for unit tests: a real Runtime and SessionDB in a temp dir, the fake provider."""

from __future__ import annotations

from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from acp_hermes.config import Paths, Settings
from acp_hermes.core.runtime import Runtime
from acp_hermes.core.sessions import SessionManager, SessionWiring, Spawn
from acp_hermes.permissions.gate import PermissionQuestion
from acp_hermes_tools.local_io import LocalEditor
from tests.support.fake_provider import FakeProvider
from tests.support.tools import EventLog


class RefusingAsker:
    def __init__(self) -> None:
        self.questions: list[PermissionQuestion] = []

    async def ask(self, question: PermissionQuestion) -> str:
        self.questions.append(question)
        return "cancelled"


def no_background_work(job: Coroutine[Any, Any, None]) -> None:
    """Drop a session's background job (reviews, titles, MCP servers): in-process tests run only what they script."""
    job.close()


@dataclass
class Env:
    runtime: Runtime
    provider: FakeProvider
    cwd: Path
    log: EventLog = field(default_factory=EventLog)
    asker: RefusingAsker = field(default_factory=RefusingAsker)

    def manager(self, spawn: Spawn = no_background_work) -> SessionManager:
        """A manager with no live sessions (what a new connection to the same store gets)."""
        return SessionManager(self.runtime, SessionWiring(
            sink_for=lambda sid: self.log,  # type: ignore[arg-type,return-value]
            asker_for=lambda sid: self.asker,
            editor_for=lambda sid: LocalEditor(),
        ), spawn)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    cwd = tmp_path / "project"
    cwd.mkdir()
    provider = FakeProvider()
    # The workspace is trusted (trust.ask: false): these tests are not about trust (tests/unit/core/test_trust.py is).
    settings = Settings(sandbox="off", models=["claude-other"], trust={"ask": False})
    runtime = Runtime(settings, Paths(tmp_path / "hermes"))
    runtime._provider = provider  # type: ignore[assignment]
    yield Env(runtime, provider, cwd)
    runtime.db.close()
