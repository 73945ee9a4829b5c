"""Subdirectory hints: project instructions found as the agent moves into new directories.

The system prompt only carries the cwd's context file and is frozen for the session (its prefix is
cached), so an ``AGENTS.md`` deeper in the tree is delivered by appending it to the result of the
tool call that first touched that directory. Each directory is looked at once per session.

A hint is added after the registry scanned the tool's output, so it is scanned on its own: its text
by ``load_context_text`` (a flagged file is replaced by a ``[BLOCKED: ...]`` line), and its path,
which names folders of the project, by ``safe_label`` (a path that is not one clean printable line
loads no hint).
"""

from __future__ import annotations

import logging
import os
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

HINT_FILENAMES = ("AGENTS.md", "agents.md", "CLAUDE.md", "claude.md", ".cursorrules")
MAX_HINT_CHARS = 8_000
MAX_DIRS_PER_PATH = 5


class SubdirectoryHintTracker:
    """Per-session record of visited directories, anchored on the session's cwd (never the process's)."""

    def __init__(self, cwd: Path, additional_directories: Sequence[Path] = (), *, enabled: bool = True) -> None:
        self._cwd = _real(cwd)
        self._roots = (self._cwd, *(_real(directory) for directory in additional_directories))
        # The cwd's own context file is already in the system prompt.
        self._visited: set[Path] = {self._cwd}
        # Off while the workspace is not trusted (core.trust): nothing is read and no directory counts
        # as visited, so trusting it later delivers the hints of directories touched before.
        self.enabled = enabled

    def check_tool_call(self, tool_name: str, args: Mapping[str, Any]) -> str:
        """Text to append to this tool's result: context files from newly reached directories, or ""."""
        return self.check_paths(_candidate_paths(tool_name, args))

    def check_paths(self, paths: Iterable[str]) -> str:
        """Hints for paths touched another way (files the user attached to a prompt), or ""."""
        if not self.enabled:
            return ""
        blocks = []
        for candidate in paths:
            for directory in self._new_directories(candidate):
                block = self._hint_for(directory)
                if block:
                    blocks.append(block)
        return "\n\n" + "\n\n".join(blocks) if blocks else ""

    def _new_directories(self, raw: str) -> list[Path]:
        """Unvisited workspace directories from ``raw``'s directory upwards, outermost first; marks them."""
        path = _resolve(raw, self._cwd)
        if path is None:
            return []
        root = next((r for r in self._roots if _inside(path, r)), None)
        if root is None:
            return []
        if not path.is_dir():
            path = path.parent  # a file (or a path still to be created): its directory counts
        found = []
        for directory in (path, *path.parents)[:MAX_DIRS_PER_PATH]:
            if directory in self._visited or not _inside(directory, root):
                break
            if directory.is_dir():
                self._visited.add(directory)
                found.append(directory)
            if directory == root:
                break
        return found[::-1]

    def _hint_for(self, directory: Path) -> str:
        from acp_hermes.core.system_prompt import load_context_text, safe_label  # with the first hint

        for name in HINT_FILENAMES:
            path = directory / name
            label = self._display(path)
            text = load_context_text(path, label, MAX_HINT_CHARS)
            if text is None:
                continue
            if not safe_label(label):  # the folder names in it would reach the model unscanned
                return ""
            log.debug("subdirectory hint loaded from %s", path)
            return f"[Subdirectory context discovered: {label}]\n{text}"
        return ""

    def _display(self, path: Path) -> str:
        """Relative to the cwd when inside it, else absolute (an additional workspace directory)."""
        if self._cwd in path.parents:
            return path.relative_to(self._cwd).as_posix()
        return str(path)


def _candidate_paths(tool_name: str, args: Mapping[str, Any]) -> list[str]:
    """The paths a call names: its tool's path arguments, and the path-like words of its command line
    when it has one (``Tool.path_args``, ``Tool.command_arg``; a tool from outside: the common names)."""
    from acp_hermes_tools import declared  # a tool call's: the tools are loaded by now
    from acp_hermes_tools.registry import COMMON_PATH_ARGS

    tool = declared(tool_name)
    keys, command_arg = (COMMON_PATH_ARGS, None) if tool is None else (tool.path_args, tool.command_arg)
    candidates = [args[key] for key in keys if isinstance(args.get(key), str)]
    command = args.get(command_arg) if command_arg else None
    if isinstance(command, str):
        candidates.extend(_command_paths(command))
    return list(dict.fromkeys(c for c in candidates if c.strip() and "\0" not in c))


def _command_paths(command: str) -> Iterable[str]:
    """Tokens of a shell command that look like paths: not flags, not URLs, containing / or ."""
    try:
        tokens = shlex.split(command)
    except ValueError:
        tokens = command.split()
    for token in tokens:
        if token.startswith("-") or "://" in token or token.startswith("git@"):
            continue
        if "/" in token or "." in token:
            yield token


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _resolve(raw: str, cwd: Path) -> Path | None:
    try:
        expanded = os.path.expanduser(raw.strip())
        return _real(Path(expanded) if os.path.isabs(expanded) else cwd / expanded)
    except (OSError, ValueError):
        return None
