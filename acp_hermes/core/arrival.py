"""What the server knows as it starts, before the settings' models and the ACP SDK have loaded.

An editor's new thread waits for ``initialize`` and ``session/new``; ``adapter.reception`` answers
them from this while everything else loads on a thread. It holds what a ``Runtime`` is later built
from (the paths, the database and sandbox probe begun at start-up) and the settings as far as they
are known without pydantic (``config_base.StartingSettings``), and it says what a new session starts
with — or that only the handlers can say it: a trusted project's own settings are merged by pydantic.
"""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

from acp_hermes.config_base import Paths, StartingSettings
from acp_hermes_memory.values import value

if TYPE_CHECKING:
    from acp_hermes.core.choices import SessionChoices
    from acp_hermes_memory.session_db import SessionDB


@value
class Arrival:
    paths: Paths
    settings: StartingSettings  # the user's: validated, or known to be what validation gives (config_base)
    config_error: str | None  # why the configuration cannot be used (session/new then fails, naming it)
    db_opening: Future[SessionDB] | None = None  # state.db being opened on a thread since start-up
    sandbox_probe: Future[None] | None = None  # the OS sandbox being tried on a thread since start-up
    trust_everything: bool = False  # --trust / ACP_HERMES_TRUST

    def new_session(self, workspace: Path) -> SessionChoices | None:
        """The choices a new session in ``workspace`` starts with (blocking: reads the trust file), or
        None when the workspace is trusted and has settings of its own, which only the handlers merge."""
        from acp_hermes.core.choices import allowed_here, starting_choices
        from acp_hermes.core.project_files import CONFIG_FILE
        from acp_hermes.core.trust import standing_of
        from acp_hermes_memory.trust_store import TrustStore, repository_of
        from acp_hermes_tools.sandbox import sandbox_status

        repository = repository_of(workspace, Path.home())
        entry = None if repository.home else TrustStore(self.paths.trust_file).entry(repository.root)
        standing, _ = standing_of(entry, everything=self.trust_everything, ask=self.settings.trust.ask)
        try:
            if standing == "trusted" and (workspace / CONFIG_FILE).exists():
                return None
        except OSError:  # the handler says what it could not read
            return None
        settings = self.settings
        sandbox = sandbox_status(settings.sandbox != "off", self.sandbox_probe)
        return allowed_here(starting_choices(settings), sandbox, settings.allow_unsandboxed_bypass,
                            self.paths.config_file)

