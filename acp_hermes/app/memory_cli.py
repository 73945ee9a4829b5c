"""`acp-hermes memory show|edit|providers`: MEMORY.md and USER.md, the memory every session starts with, and
the external memory providers that can join them.

The files are Hermes Agent's (``$HERMES_HOME/memories``): entries separated by a line holding only
``§``, each file under a character limit. ``edit`` works on a private copy and saves it under the
store's lock, so an entry the agent writes meanwhile is never overwritten unseen; what was saved is
scanned the way the prompt builder scans it, and an entry the agent will not be shown is named.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp_hermes.app.local_settings import settings_or_defaults
from acp_hermes.config import Paths, Settings, paths_from_env
from acp_hermes.core.memory_providers import LOAD_SECONDS
from acp_hermes_memory.scan import Finding, scan
from acp_hermes_memory.store import (
    FILE_NAMES,
    TARGETS,
    MemoryStore,
    Target,
    parse_entries,
    serialize_entries,
    usage_text,
)

ROLES = {"memory": "the agent's notes", "user": "what the agent knows about you"}


@dataclass(frozen=True, slots=True)
class MemoryFile:
    """One memory file as the next session will load it."""

    target: Target
    path: Path
    exists: bool
    entries: list[str]
    limit: int
    findings: list[tuple[int, Finding]]  # (entry number from 1, what matched): hidden from the agent
    error: str | None = None  # why it cannot be read

    @property
    def used(self) -> int:
        return len(serialize_entries(self.entries))

    @property
    def over_limit(self) -> bool:
        return self.used > self.limit

    def state(self) -> str:
        """Existence and size in a few words."""
        if self.error:
            return f"cannot be read: {self.error}"
        if not self.exists:
            return "not created yet"
        count = len(self.entries)
        return f"{usage_text(self.used, self.limit)}, {count} entr{'y' if count == 1 else 'ies'}"

    def warnings(self) -> list[str]:
        """What keeps the agent from using this file as written, one sentence each."""
        name = FILE_NAMES[self.target]
        notes = [
            f"{name} entry {number} matches the threat pattern '{finding.pattern_id}' ({finding.excerpt!r}): "
            f"the agent is not shown it. Change or remove it with `acp-hermes memory edit {self.target}`."
            for number, finding in self.findings
        ]
        if self.over_limit:
            notes.append(f"{name} holds {self.used:,} characters, over its limit of {self.limit:,}: the agent cannot "
                         f"add to it until it is shorter (`acp-hermes memory edit {self.target}`).")
        return notes


def memory_store(paths: Paths, settings: Settings) -> MemoryStore:
    return MemoryStore(paths.memories, settings.memory_char_limit, settings.user_char_limit)


def inspect_memory(store: MemoryStore) -> list[MemoryFile]:
    """Both files, read and scanned (strict, as the system prompt's snapshot does)."""
    return [_inspect(store, target) for target in TARGETS]


def _inspect(store: MemoryStore, target: Target) -> MemoryFile:
    path, limit = store.path(target), store.limit(target)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return MemoryFile(target, path, False, [], limit, [])
    except OSError as exc:
        return MemoryFile(target, path, path.exists(), [], limit, [], exc.strerror or str(exc))
    entries = parse_entries(text)
    findings = [(number, found) for number, entry in enumerate(entries, 1) for found in scan(entry, "strict")]
    return MemoryFile(target, path, True, entries, limit, findings)


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """The `memory` command and its subcommands (``commands`` is the top-level subparsers object)."""
    memory = commands.add_parser("memory", parents=[common], help="show or edit MEMORY.md and USER.md")
    actions = memory.add_subparsers(dest="action", metavar="action", required=True)
    show = actions.add_parser("show", parents=[common], help="both files, with their size against the limits")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    edit = actions.add_parser("edit", parents=[common], help="open one of them in $VISUAL or $EDITOR")
    edit.add_argument("target", choices=TARGETS,
                      help="memory: MEMORY.md, the agent's notes; user: USER.md, what it knows about you")
    providers = actions.add_parser("providers", parents=[common],
                                   help="the memory providers there are, whether each works here, which is selected")
    providers.add_argument("--json", action="store_true", help="machine-readable output")


def run_memory(args: argparse.Namespace) -> int:
    paths = paths_from_env()
    settings = settings_or_defaults(paths)  # once: an invalid configuration is one note, not one per use
    store = memory_store(paths, settings)
    if args.action == "show":
        return _show(store, args.json)
    if args.action == "providers":
        return _providers(paths, settings, args.json)
    return _edit(store, args.target)


@dataclass(frozen=True, slots=True)
class ProviderState:
    """A memory provider as `memory providers` and `doctor` show it."""

    name: str
    source: str
    available: bool | None  # None: could not be loaded
    selected: bool
    detail: str = ""


def provider_states(paths: Paths, settings: Settings) -> list[ProviderState]:
    """The built-in memory, then every provider there is (built in, then each plugin folder), each
    loaded and asked ``is_available``, and a selected one that cannot be found.

    A plugin folder that fails to import is listed as one that cannot be loaded, with the reason: it
    is the user's, and left out it would look as if the folder had not been seen.
    """
    from acp_hermes_memory.providers import BUILT_IN, ProviderError, find, plugin_dirs

    chosen = settings.memory.providers
    plugins = paths.home / "plugins"
    states = [ProviderState("builtin", "built-in: MEMORY.md and USER.md", True, True, "always on")]
    names = [*sorted(BUILT_IN), *(folder.name for folder in plugin_dirs(plugins) if folder.name not in BUILT_IN)]
    for name in [*names, *(name for name in chosen if name not in names)]:
        selected = name in chosen[:1]  # a second one is refused
        source = "built-in" if name in BUILT_IN else str(plugins / name)

        def load(name: str = name, source: str = source, selected: bool = selected) -> ProviderState:
            try:
                info = find(name, plugins)
            except ProviderError as error:
                detail = str(error).removeprefix(f"{source}: ")
                return ProviderState(name, source if name in names else "not found", None, selected, detail)
            return _state(info.name, info.source, info.make, selected)

        hung = ProviderState(name, source, None, selected, f"did not load within {LOAD_SECONDS:g} s (its import or "
                                                           "is_available() has not returned)")
        states.append(_within(LOAD_SECONDS, load, hung))
    return states


def _within(seconds: float, load: Callable[[], ProviderState], hung: ProviderState) -> ProviderState:
    """``load()`` on a daemon thread, as a session loads a provider: a plugin that hangs at import or in
    ``is_available`` is reported as such instead of holding the command for ever."""
    result: list[ProviderState] = []
    thread = threading.Thread(target=lambda: result.append(load()), name="memory-provider check", daemon=True)
    thread.start()
    thread.join(seconds)
    return result[0] if result else hung


def _state(name: str, source: str, make: Any, selected: bool) -> ProviderState:
    try:
        works = bool(make().is_available())
    except Exception as error:  # the user's plugin code
        return ProviderState(name, source, None, selected, f"{type(error).__name__}: {error}")
    return ProviderState(name, source, works, selected, "" if works else "is_available() said no")


def _providers(paths: Paths, settings: Settings, as_json: bool) -> int:
    """The list; status 1 when a provider cannot be loaded, or the selected one is not available."""
    states = provider_states(paths, settings)
    failed = any(state.available is None or (state.selected and not state.available) for state in states)
    if as_json:
        print(json.dumps([_state_json(state) for state in states],
                         indent=2, ensure_ascii=False))
        return 1 if failed else 0
    chosen = settings.memory.providers
    for state in states:
        mark = "*" if state.selected else " "
        works = {True: "available", False: "not available", None: "cannot be loaded"}[state.available]
        print(f"{mark} {state.name}: {works} ({state.source}){f' — {state.detail}' if state.detail else ''}")
    if len(chosen) > 1:
        print(f"\nOnly one external provider is used at a time: {chosen[0]}; {', '.join(chosen[1:])} refused.")
    if not chosen:
        print(f"\nNo external provider selected: set `memory.provider` in config.yaml. Plugins go in "
              f"{paths.home / 'plugins'}/<name>/.")
    return 1 if failed else 0


def _state_json(state: ProviderState) -> dict[str, Any]:
    return {"name": state.name, "source": state.source, "available": state.available, "selected": state.selected,
            "detail": state.detail}


def _show(store: MemoryStore, as_json: bool) -> int:
    files = inspect_memory(store)
    if as_json:
        print(json.dumps({item.target: _as_json(item) for item in files}, indent=2, ensure_ascii=False))
        return 0
    for number, item in enumerate(files):
        if number:
            print()
        print(f"{FILE_NAMES[item.target]} ({ROLES[item.target]}): {item.state()}")
        print(f"  {item.path}")
        if item.entries:
            print()
            print("\n".join(f"    {line}" if line else "" for line in serialize_entries(item.entries).splitlines()))
        for warning in item.warnings():
            print(f"  ! {warning}")
    return 0


def _as_json(item: MemoryFile) -> dict[str, Any]:
    return {
        "file": str(item.path), "exists": item.exists, "used": item.used, "limit": item.limit,
        "entries": item.entries, "error": item.error,
        "findings": [{"entry": number, "pattern": found.pattern_id, "excerpt": found.excerpt}
                     for number, found in item.findings],
    }


def _edit(store: MemoryStore, target: Target) -> int:
    try:
        editor = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "")
    except ValueError:  # unbalanced quotes: no command to run
        editor = []
    if not editor:
        files = "\n".join(f"  {store.path(name)}" for name in TARGETS)
        print(f"acp-hermes: no editor set ($VISUAL or $EDITOR). The memory files are:\n{files}", file=sys.stderr)
        return 1
    scratch = Path(tempfile.mkdtemp(prefix="acp-hermes-memory-"))  # 0700: the copy is as private as the file
    draft = scratch / FILE_NAMES[target]
    status = _edit_copy(store, target, editor, draft)
    if status != _KEPT:
        shutil.rmtree(scratch)
    return 1 if status == _KEPT else status


_KEPT = -1  # the file changed meanwhile: the draft is kept for the user


def _edit_copy(store: MemoryStore, target: Target, editor: list[str], draft: Path) -> int:
    """Let the user edit ``draft``, a copy of the file, then save it if nobody wrote the file meanwhile."""
    from acp_hermes_memory.fs import atomic_write_text, exclusive_lock, lock_path_for

    path = store.path(target)
    original = _text_of(path)
    draft.write_text(original or "", encoding="utf-8")
    try:
        status = subprocess.call([*editor, str(draft)])
    except OSError as exc:
        print(f"acp-hermes: cannot start the editor {editor[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    if status != 0:
        print(f"acp-hermes: the editor exited with status {status}; {path.name} is unchanged.", file=sys.stderr)
        return 1
    edited = parse_entries(draft.read_text(encoding="utf-8", errors="replace"))
    if edited == parse_entries(original or ""):
        print(f"No changes to {path}.")
        return 0
    with exclusive_lock(lock_path_for(path)):
        if _text_of(path) != original:
            print(f"acp-hermes: {path} changed while you were editing (a session wrote to it). Nothing was "
                  f"saved; your version is in {draft}.", file=sys.stderr)
            return _KEPT
        atomic_write_text(path, serialize_entries(edited), private=True)  # a new file is 0600, as a session's
    saved = _inspect(store, target)
    print(f"Saved {path}: {saved.state()}.")
    for warning in saved.warnings():
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _text_of(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
