"""`acp-hermes checkpoints list|show|prune`: the checkpoint stores `/rollback` restores from.

One store per workspace under ``$HERMES_HOME/acp-hermes/checkpoints`` (``acp_hermes_tools.checkpoints``);
a session's checkpoints are its refs there, ``refs/checkpoints/<session>/<NNNN>``, with ``<NNNN>-end``
beside one whose turn ended (``acp_hermes.core.checkpoints``). ``summaries``, ``git_found`` and
``human_size`` are for ``doctor`` too.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from acp_hermes.config import Paths, paths_from_env
from acp_hermes.core.checkpoints import END, REF_ROOT
from acp_hermes_memory.text import counted

if TYPE_CHECKING:
    from acp_hermes_tools.checkpoints import CheckpointStore, Snapshot

_PROMPT_CHARS = 70


@dataclass(frozen=True, slots=True)
class StoreSummary:
    """One workspace's store as ``checkpoints list`` and ``doctor`` show it."""

    store: CheckpointStore
    checkpoints: int
    sessions: int
    newest: float | None  # when the newest checkpoint was taken
    size: int  # bytes on disk
    problem: str | None  # why the store cannot be read, or None
    interrupted_restore: bool  # a killed restore left its journal (the next server start finishes it)


def summaries(paths: Paths, *, check: bool = True) -> list[StoreSummary]:
    """Every workspace's store with its size; with ``check``, its checkpoints and what is wrong with it
    (git runs for that: without git there is only the size)."""
    from acp_hermes_tools.checkpoints import stores

    return [_summary(store, check) for store in _by_workspace(stores(paths.checkpoints))]


def _by_workspace(found: list[CheckpointStore]) -> list[CheckpointStore]:
    return sorted(found, key=lambda store: str(store.workspace))


def _summary(store: CheckpointStore, check: bool) -> StoreSummary:
    from acp_hermes_tools.checkpoints import CheckpointError
    from acp_hermes_tools.checkpoints.journal import JOURNAL_NAME

    interrupted = (store.directory / JOURNAL_NAME).exists()
    snapshots: list[Snapshot] = []
    problem = None
    if check:
        try:  # problem() stops at the journal; a store with one is broken only if it cannot be read
            problem = None if interrupted else store.problem()
            snapshots = [] if problem else _checkpoints(store)
        except CheckpointError as exc:
            problem = str(exc)
    sessions = {_session_of(snapshot) for snapshot in snapshots}
    newest = max((snapshot.created_at for snapshot in snapshots), default=None)
    return StoreSummary(store, len(snapshots), len(sessions), newest, store.size_bytes(), problem, interrupted)


def _checkpoints(store: CheckpointStore) -> list[Snapshot]:
    """The store's checkpoints, oldest first, without the ``-end`` refs (a turn's end is no checkpoint)."""
    return [snapshot for snapshot in store.snapshots(REF_ROOT) if not snapshot.ref.endswith(END)]


def _session_of(snapshot: Snapshot) -> str:
    return snapshot.ref.removeprefix(REF_ROOT).rpartition("/")[0]


def git_found() -> tuple[str, str] | None:
    """(path, version) of the git checkpoints run (``2.43.0``), or None when there is none on PATH."""
    from acp_hermes_tools.safe_git import git_command

    git = shutil.which("git")
    if git is None:
        return None
    command = git_command(git, "version")
    try:
        shown = subprocess.run(command.argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
                               env=command.env)
    except (OSError, subprocess.SubprocessError) as exc:
        return git, f"cannot be run: {exc}"
    return git, shown.stdout.strip().removeprefix("git version ") or f"exit status {shown.returncode}"


def human_size(size: int) -> str:
    """``1.2 MB``: a size on disk as people read it."""
    if size < 1024:
        return f"{size} bytes"
    value = size / 1024
    for unit in ("KB", "MB", "GB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TB"


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """The `checkpoints` command and its subcommands (``commands`` is the top-level subparsers object)."""
    checkpoints = commands.add_parser("checkpoints", parents=[common],
                                      help="list, show or prune the checkpoints /rollback restores from")
    actions = checkpoints.add_subparsers(dest="action", metavar="action", required=True)
    listing = actions.add_parser("list", parents=[common],
                                 help="every workspace's store: checkpoints, sessions, newest, size")
    show = actions.add_parser("show", parents=[common], help="one workspace's checkpoints, by session")
    show.add_argument("workspace", help="the workspace's directory (as `checkpoints list` shows it)")
    prune = actions.add_parser("prune", parents=[common],
                               help="prune every store now by checkpoints.keep and checkpoints.max_age_days")
    for parser in (listing, show, prune):
        parser.add_argument("--json", action="store_true", help="machine-readable output")


def run_checkpoints(args: argparse.Namespace) -> int:
    paths = paths_from_env()
    if args.action == "list":
        return _list(paths, args.json)
    if args.action == "show":
        return _show(paths, args.workspace, args.json)
    return _prune(paths, args.json)


def _when(timestamp: float | None) -> str | None:
    """Local time, ISO 8601 to the second (as `sessions --json` shows times); None stays None."""
    return None if timestamp is None else datetime.fromtimestamp(timestamp).astimezone().isoformat(timespec="seconds")


def _minute(timestamp: float) -> str:
    """``2025-01-02 14:03``: local time for a person."""
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")



def _list(paths: Paths, as_json: bool) -> int:
    found = summaries(paths)
    if as_json:
        print(json.dumps([_summary_json(summary) for summary in found], indent=2, ensure_ascii=False))
        return 0
    if not found:
        print(f"No checkpoints yet ({paths.checkpoints}).")
        return 0
    for summary in found:
        workspace = summary.store.workspace
        gone = "" if workspace.is_dir() else "  (the workspace is gone)"
        print(f"{workspace}{gone}")
        if summary.problem:
            print(f"  ! cannot be read: {summary.problem} ({human_size(summary.size)} in {summary.store.directory})")
            continue
        newest = f", newest {_minute(summary.newest)}" if summary.newest is not None else ""
        print(f"  {counted(summary.checkpoints, 'checkpoint')} in {counted(summary.sessions, 'session')}"
              f"{newest}, {human_size(summary.size)}")
        if summary.interrupted_restore:
            print("  ! a restore was interrupted: acp-hermes finishes it when its next session starts")
    total = sum(summary.size for summary in found)
    print(f"\n{counted(len(found), 'store')}, {human_size(total)} in {paths.checkpoints}")
    return 0


def _summary_json(summary: StoreSummary) -> dict[str, Any]:
    return {"workspace": str(summary.store.workspace), "store": str(summary.store.directory),
            "checkpoints": summary.checkpoints, "sessions": summary.sessions, "newest": _when(summary.newest),
            "size_bytes": summary.size, "problem": summary.problem,
            "interrupted_restore": summary.interrupted_restore}


def _find(paths: Paths, given: str) -> CheckpointStore | None:
    """The store of the workspace ``given`` names (any spelling of its path), or None, said on stderr."""
    from acp_hermes_tools.checkpoints import stores

    wanted = {os.path.abspath(os.path.expanduser(given)), os.path.realpath(os.path.expanduser(given))}
    for store in stores(paths.checkpoints):
        if {str(store.workspace), os.path.realpath(store.workspace)} & wanted:
            return store
    print(f"acp-hermes: no checkpoints for {given!r} (see `acp-hermes checkpoints list`)", file=sys.stderr)
    return None


def _show(paths: Paths, given: str, as_json: bool) -> int:
    from acp_hermes_tools.checkpoints import CheckpointError

    store = _find(paths, given)
    if store is None:
        return 1
    try:
        snapshots = store.snapshots(REF_ROOT)
    except CheckpointError as exc:
        print(f"acp-hermes: the checkpoints of {store.workspace} cannot be read: {exc} ({store.directory})",
              file=sys.stderr)
        return 1
    ended = {snapshot.ref.removesuffix(END) for snapshot in snapshots if snapshot.ref.endswith(END)}
    sessions: dict[str, list[dict[str, Any]]] = {}
    for snapshot in snapshots:
        if not snapshot.ref.endswith(END):
            sessions.setdefault(_session_of(snapshot), []).append(_checkpoint(snapshot, snapshot.ref in ended))
    if as_json:
        groups = [{"session": session, "checkpoints": [{**entry, "created_at": _when(entry["created_at"])}
                                                      for entry in entries]}
                  for session, entries in sessions.items()]
        print(json.dumps({"workspace": str(store.workspace), "store": str(store.directory),
                          "size_bytes": store.size_bytes(), "sessions": groups}, indent=2, ensure_ascii=False))
        return 0
    count = sum(map(len, sessions.values()))
    print(f"{store.workspace}: {counted(count, 'checkpoint')}, {human_size(store.size_bytes())} ({store.directory})")
    for session, entries in sessions.items():
        print(f"\nsession {session}")
        for entry in entries:
            prompt = entry["prompt"] or "(no prompt)"
            if len(prompt) > _PROMPT_CHARS:
                prompt = prompt[: _PROMPT_CHARS - 1].rstrip() + "…"
            print(f"  {entry['number']:>4}  {entry['kind']:<7}  {_minute(entry['created_at'])}  {prompt}")
    if sessions:
        print("\nIn that session, `/rollback <n>` puts back what the agent changed since checkpoint n.")
    return 0


def _checkpoint(snapshot: Snapshot, ended: bool) -> dict[str, Any]:
    """A checkpoint's meta (as ``core.checkpoints`` writes it), read leniently: a store outlives versions."""
    meta = snapshot.meta
    number, tail = meta.get("number"), snapshot.ref.rpartition("/")[2]
    row = meta.get("prompt_row")
    return {"number": number if isinstance(number, int) else int(tail) if tail.isdigit() else 0,
            "kind": str(meta.get("kind") or "turn"), "created_at": snapshot.created_at,
            "prompt": str(meta.get("prompt") or ""), "prompt_row": row if isinstance(row, int) else None,
            "ended": ended, "ref": snapshot.ref, "commit": snapshot.commit}


def _prune(paths: Paths, as_json: bool) -> int:
    from acp_hermes.app.local_settings import settings_or_defaults
    from acp_hermes_tools.checkpoints import CheckpointError, stores

    limits = settings_or_defaults(paths).checkpoints
    results: list[dict[str, Any]] = []
    for store in _by_workspace(stores(paths.checkpoints)):
        dropped, left, error = 0, None, None
        try:  # one broken store must not keep the others from being pruned
            before = len(_checkpoints(store))  # counted here: the store's count takes in the turns' -end refs
            store.prune(keep=limits.keep, max_age_seconds=limits.max_age_days * 86_400)
            left = len(_checkpoints(store))
            dropped = before - left
        except (CheckpointError, OSError) as exc:
            error = str(exc)
        results.append({"workspace": str(store.workspace), "store": str(store.directory), "dropped": dropped,
                        "left": left, "size_bytes": store.size_bytes(), "error": error})
    failed = [result for result in results if result["error"]]
    if as_json:
        print(json.dumps({"keep": limits.keep, "max_age_days": limits.max_age_days, "stores": results},
                         indent=2, ensure_ascii=False))
        return 1 if failed else 0
    if not results:
        print(f"No checkpoints yet ({paths.checkpoints}).")
    for result in results:
        if result["error"]:
            print(f"acp-hermes: {result['workspace']}: cannot prune: {result['error']}", file=sys.stderr)
            continue
        print(f"{result['workspace']}: dropped {result['dropped']:,}, {counted(result['left'], 'checkpoint')} left, "
              f"{human_size(result['size_bytes'])}")
    if results:
        print(f"\nKept the newest {limits.keep:,} per workspace, none older than {limits.max_age_days:g} days "
              "(checkpoints.keep, checkpoints.max_age_days).")
    return 1 if failed else 0
