"""The mutable classes made on the way to the first prompt are plain classes with hand-written
``__init__`` (a dataclass costs a millisecond to define): each instance still gets its own lists,
sets, dicts and locks, as ``field(default_factory=...)`` gave it, and one passed in is the one kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp_hermes.config import Paths, Settings
from acp_hermes.core.loop import TurnResult
from acp_hermes.core.review import ReviewTarget
from acp_hermes.core.runtime import Runtime
from acp_hermes.permissions.gate import SessionGrants
from acp_hermes_memory.skills.index import Snapshot
from acp_hermes_tools.checkpoints.importer import Plan, Written
from acp_hermes_tools.context import ToolContext
from acp_hermes_tools.terminal import BackgroundJob, BackgroundJobs
from tests.support.tools import make_scope

NOTHING: Any = None  # stands in for the collaborators these tests never call


def _containers(item: object, names: tuple[str, ...]) -> list[object]:
    return [getattr(item, name) for name in names]


def _own(first: object, second: object, names: tuple[str, ...]) -> None:
    for mine, theirs in zip(_containers(first, names), _containers(second, names), strict=True):
        assert mine is not theirs


def test_each_instance_gets_its_own_containers(tmp_path: Path) -> None:
    grants = ("allow_state", "reject_state", "allow_commands", "reject_commands", "readable_dirs",
              "unreadable_dirs", "allow_jobs", "reject_jobs")
    _own(SessionGrants(), SessionGrants(), grants)
    _own(Runtime(Settings(), Paths(tmp_path)), Runtime(Settings(), Paths(tmp_path)),
         ("_db_lock", "_build_lock", "_stores_lock", "_skills", "_checkpoints"))
    scope = make_scope(tmp_path)
    authorized = ("_authorized_paths", "_authorized_commands", "_authorized_state", "_authorized_reads",
                  "_authorized_external", "_authorized_jobs")
    _own(ToolContext("a", scope, NOTHING, NOTHING, NOTHING), ToolContext("b", scope, NOTHING, NOTHING, NOTHING),
         authorized)
    _own(BackgroundJobs(), BackgroundJobs(), ("jobs", "_unreported", "_reported", "_lock"))
    job = (1, "sh", tmp_path, tmp_path / "log", 0.0, NOTHING)
    _own(BackgroundJob(*job), BackgroundJob(*job), ("ended", "_decoder"))
    _own(TurnResult("end_turn"), TurnResult("end_turn"), ("usage", "tools_used"))
    _own(Plan(), Plan(), ("remove", "read", "skipped_large", "skipped_unreadable"))
    _own(Written(), Written(), ("index_info",))
    _own(Snapshot((), [], []), Snapshot((), [], []), ("parsed",))
    target = (NOTHING,) * 10
    _own(ReviewTarget(*target), ReviewTarget(*target), ("proposals",))


def test_a_container_passed_in_is_the_one_kept(tmp_path: Path) -> None:
    proposals: list[Any] = []
    assert ReviewTarget(*(NOTHING,) * 10, proposals=proposals).proposals is proposals
    allowed = {"git status"}
    assert SessionGrants(allow_commands=allowed).allow_commands is allowed
