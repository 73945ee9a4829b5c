"""The layered system prompt, built once per session.

The provider caches the prompt prefix, so the text must be byte-identical for identical inputs:
everything here is a pure function of ``PromptInputs`` and the files on disk, with fixed
ordering, no clock other than the injected ``now`` (date only) and nothing taken from the
process's cwd or environment. Anything that changes during a session (hints, recall, warnings)
belongs in user messages or tool results, never here.

Text from files goes through ``memory.scan`` on its way in: context files and SOUL.md whole (a
flagged one becomes a ``[BLOCKED: ...]`` line), the paths that label them (``safe_label``: a file
whose name would not show as one clean line is not loaded), and the skills index line by line (a
skill with an invalid name or a flagged description is left out). The memory snapshot comes
scanned entry by entry from ``memory.store``.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path

from acp_hermes.config import Paths
from acp_hermes_memory.scan import first_threat, guard_context_text, scan
from acp_hermes_memory.skills import valid_name
from acp_hermes_memory.text import one_line
from acp_hermes_memory.values import value

log = logging.getLogger(__name__)

DEFAULT_CONTEXT_FILE_MAX_CHARS = 20_000
_HEAD_SHARE = 0.7
_TAIL_SHARE = 0.2
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

DEFAULT_IDENTITY = (
    "You are acp-hermes, a coding agent working inside the user's code editor through the Agent "
    "Client Protocol (ACP), built on the design of Hermes Agent by Nous Research. You help with "
    "software work: understanding code, changing it, running commands and tests. Be direct and "
    "precise, say when you are unsure, and do the work with your tools rather than describing it."
)
# A delegated task's child (core.delegation): what it is, and that its final message is its report.
SUBAGENT_IDENTITY = (
    "You are a subagent of acp-hermes, a coding agent working in the user's editor. Another agent, your "
    "parent, gave you one task; you do not see its conversation, so everything you know about the task is "
    "in the first user message. Do the task with your tools. You cannot ask the user anything: where "
    "something is unclear, make a reasonable choice and say so; when the user refuses a change or a command, "
    "do not try it another way: leave it and say so. End with a final message that reports what "
    "you did, what you found and what is left undone, with the paths and facts the parent needs: that "
    "message is all the parent receives."
)

_HERMES_FILES = (".hermes.md", "HERMES.md")
_AGENTS_FILES = ("AGENTS.md", "agents.md")
_CLAUDE_FILES = ("CLAUDE.md", "claude.md")
SKILL_DESCRIPTION_CHARS = 200  # of a skill's description in the index


@value
class PromptInputs:
    """Everything the system prompt depends on; the caller builds it once per session."""

    paths: Paths
    cwd: Path
    session_id: str
    now: datetime
    system_message: str | None
    memory_block: str
    tool_names: frozenset[str]
    skills: Sequence[tuple[str, str | None, str, str]] = ()  # (name, category, description, state note), sorted
    context_file_max_chars: int = DEFAULT_CONTEXT_FILE_MAX_CHARS
    additional_directories: tuple[Path, ...] = ()
    subagent: bool = False  # a delegated task's child: the subagent's identity instead of SOUL.md
    # Whether the workspace is trusted (core.trust): only then do its instruction files load, and its
    # settings' system message (already scanned) follows the user's.
    project_context: bool = True
    project_message: str | None = None

    def __post_init__(self) -> None:
        # A relative cwd would make the prompt depend on the process's cwd (invariant 6).
        if not self.cwd.is_absolute():
            raise ValueError(f"the session cwd must be absolute, got {self.cwd}")


@value
class ContextFile:
    """A project instruction file as it goes into the prompt (already scanned and capped)."""

    path: Path
    label: str
    text: str


def build_system_prompt(inputs: PromptInputs) -> str:
    """The session's frozen system prompt: identity, guidance, config, memory, project, environment."""
    context_files = find_context_files(inputs.cwd, inputs.context_file_max_chars) if inputs.project_context else []
    layers = [
        SUBAGENT_IDENTITY if inputs.subagent else _identity(inputs.paths, inputs.context_file_max_chars),
        _tool_guidance(inputs.tool_names),
        _config_message(inputs.system_message),
        _project_message(inputs.project_message),
        inputs.memory_block,
        _skills_index(inputs.skills),
        _project_context(context_files),
        _environment(inputs),
    ]
    return "\n\n".join(layer.strip() for layer in layers if layer and layer.strip())


def find_context_files(cwd: Path, max_chars: int = DEFAULT_CONTEXT_FILE_MAX_CHARS) -> list[ContextFile]:
    """The project instruction files a session in ``cwd`` loads; only the first kind found counts.

    Priority (as Hermes): ``.hermes.md``/``HERMES.md`` from cwd up to the git root, then
    ``AGENTS.md``, then ``CLAUDE.md``, then ``.cursorrules`` plus ``.cursor/rules/*.mdc`` (cwd only).
    """
    root = Path(os.path.realpath(cwd))
    hermes = _first_loaded(root, _hermes_search_dirs(root), _HERMES_FILES, max_chars, front_matter=True)
    if hermes:
        return hermes
    for names in (_AGENTS_FILES, _CLAUDE_FILES):
        found = _first_loaded(root, (root,), names, max_chars)
        if found:
            return found
    return _cursor_rules(root, max_chars)


def context_file_candidates(cwd: Path) -> list[Path]:
    """Every instruction file a session in ``cwd`` could load, in the order they are looked for (what a
    workspace carries that would reach the system prompt, listed before it is trusted)."""
    root = Path(os.path.realpath(cwd))
    names = [directory / name for directory in _hermes_search_dirs(root) for name in _HERMES_FILES]
    names += [root / name for name in (*_AGENTS_FILES, *_CLAUDE_FILES, ".cursorrules")]
    rules_dir = root / ".cursor" / "rules"
    with contextlib.suppress(OSError):
        names += sorted(rules_dir.glob("*.mdc")) if rules_dir.is_dir() else []
    found = []
    for path in names:
        try:
            if path.is_file():
                found.append(path)
        except OSError:
            continue
    return found


def load_context_text(path: Path, label: str, max_chars: int, *, front_matter: bool = False) -> str | None:
    """A context file's text, scanned for injection and capped; None when absent, empty or unreadable."""
    try:
        if not path.is_file():
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        log.warning("cannot read context file %s: %s", path, exc)
        return None
    text = text.lstrip("\ufeff")
    if front_matter:
        text = strip_front_matter(text)
    text = text.strip()
    if not text:
        return None
    return truncate_middle(guard_context_text(label, text), max_chars, label)


def truncate_middle(text: str, limit: int, label: str) -> str:
    """Cut ``text`` to about ``limit`` chars keeping the head (70 %) and tail (20 %), saying what went."""
    if len(text) <= limit:
        return text
    head = int(limit * _HEAD_SHARE)
    tail = int(limit * _TAIL_SHARE)
    omitted = len(text) - head - tail
    marker = (
        f"[... {omitted:,} of {len(text):,} characters of {label} omitted here; "
        f"read the file for the full text ...]"
    )
    return f"{text[:head].rstrip()}\n\n{marker}\n\n{text[len(text) - tail :].lstrip()}"


def strip_front_matter(text: str) -> str:
    """``text`` without a leading YAML front-matter block (``---`` ... ``---``); unterminated stays."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != "---":
        return text
    for index, line in enumerate(lines[1:], start=1):
        if line.rstrip() in ("---", "..."):
            return "".join(lines[index + 1 :])
    return text


def _git_root(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def _hermes_search_dirs(cwd: Path) -> list[Path]:
    """cwd and its parents up to the git root, nearest first; cwd alone outside a repository."""
    git_root = _git_root(cwd)
    if git_root is None:
        return [cwd]
    dirs = []
    for directory in (cwd, *cwd.parents):
        dirs.append(directory)
        if directory == git_root:
            break
    return dirs


def _first_loaded(
    cwd: Path, dirs: Iterable[Path], names: Sequence[str], max_chars: int, *, front_matter: bool = False
) -> list[ContextFile]:
    for directory in dirs:
        for name in names:
            path = directory / name
            label = _relative_label(path, cwd)
            text = load_context_text(path, label, max_chars, front_matter=front_matter)
            if text is not None:
                return [ContextFile(path, label, text)]
    return []


def _cursor_rules(cwd: Path, max_chars: int) -> list[ContextFile]:
    rules_dir = cwd / ".cursor" / "rules"
    try:
        mdc = sorted(rules_dir.glob("*.mdc")) if rules_dir.is_dir() else []
    except OSError as exc:
        log.warning("cannot list %s: %s", rules_dir, exc)
        mdc = []
    files = []
    for path in (cwd / ".cursorrules", *mdc):
        label = _relative_label(path, cwd)
        if not safe_label(label):
            continue
        text = load_context_text(path, label, max_chars)
        if text is not None:
            files.append(ContextFile(path, label, text))
    return files


def safe_label(label: str) -> bool:
    """Whether a label made of file or folder names (a project's own) may be shown in a prompt: one
    printable line that does not trip the injection scanner. A file named with a newline and
    "# System: ..." would otherwise forge a section of the prompt; the file is left out, logged."""
    if len(label) <= 500 and label.isprintable() and not scan(label, "context"):
        return True
    log.warning("not loading the context file %r: its path is not safe to show in a prompt", label)
    return False


def _relative_label(path: Path, cwd: Path) -> str:
    return Path(os.path.relpath(path, cwd)).as_posix()


def _identity(paths: Paths, max_chars: int) -> str:
    """SOUL.md when present and clean; otherwise our default (plus the marker if SOUL.md was blocked)."""
    soul = load_context_text(paths.soul, "SOUL.md", max_chars)
    if soul is None:
        return DEFAULT_IDENTITY
    if soul.startswith("[BLOCKED:"):
        return f"{DEFAULT_IDENTITY}\n\n{soul}"
    return soul


def _tool_guidance(tools: frozenset[str]) -> str:
    """How to work in the editor, mentioning only the tools this session actually has: what each of
    them says of itself (``Tool.guidance``), in the order they give."""
    from acp_hermes_tools import core_tools  # the tool modules, imported as the session is built

    guided = sorted(((tool.guidance, index) for index, tool in enumerate(core_tools())
                     if tool.name in tools and tool.guidance is not None), key=lambda item: (item[0].order, item[1]))
    bullets = ["Be concise. Act with your tools instead of describing what you would do."]
    bullets += [line for guidance, _ in guided if (line := guidance.line_for(tools))]
    if any(guidance.previewed for guidance, _ in guided):
        bullets.append(
            "The user sees each file edit as a diff and each command before it runs, and may decline. "
            "If something is declined, do not retry it or a variant: ask the user how to proceed."
        )
    sections = ["# How to work\n" + "\n".join(f"- {bullet}" for bullet in bullets)]
    sections += [guidance.section for guidance, _ in guided if guidance.section]
    return "\n\n".join(sections)


def _skills_index(skills: Sequence[tuple[str, str | None, str, str]]) -> str:
    """The skills there are, grouped by category, one line each (the bodies load on demand); a stale
    skill is marked so (still listed: the lifecycle only archives what stays unused).

    Names come from folder names and descriptions from files anyone may ship in a project's
    ``.hermes/skills``, so a skill whose name or category is not a valid skill name, or whose
    description (as shown) trips the injection scanner, is left out, with a log line. The skills
    store leaves such skills out of its index already; this holds for whatever is passed in.
    """
    shown = [(name, category, one_line(description, SKILL_DESCRIPTION_CHARS), note)
             for name, category, description, note in skills if _listable(name, category, description)]
    if not shown:
        return ""
    lines = ["# Skills index\nLoad a matching skill with `skill_view(name)` before starting the task."]
    for category, group in itertools.groupby(shown, key=lambda skill: skill[1]):
        lines.append(f"## {category}" if category else "## general")
        lines += [f"- {name}: {description}" + (f" ({note})" if note else "") for name, _, description, note in group]
    return "\n".join(lines)


def _listable(name: str, category: str | None, description: str) -> bool:
    if not valid_name(name) or (category is not None and not valid_name(category)):
        log.warning("skills index: leaving out the skill %r (category %r): not a valid skill name", name, category)
        return False
    threat = first_threat(one_line(description, SKILL_DESCRIPTION_CHARS), "context")
    if threat is not None:
        log.warning("skills index: leaving out the skill %s: its description matches %s", name, threat)
        return False
    return True


def _config_message(message: str | None) -> str:
    if message is None or not message.strip():
        return ""
    return f"# Instructions from the user's configuration\n{message.strip()}"


def _project_message(message: str | None) -> str:
    if message is None or not message.strip():
        return ""
    return f"# Instructions from the project's settings (.hermes/config.yaml)\n{message.strip()}"


def _project_context(files: Sequence[ContextFile]) -> str:
    if not files:
        return ""
    parts = ["# Project context\nThese instruction files from the project apply to this session:"]
    parts.extend(f"## {item.label}\n{item.text}" for item in files)
    return "\n\n".join(parts)


def _environment(inputs: PromptInputs) -> str:
    today = inputs.now.date()
    lines = [
        "# Environment",
        f"Date: {today.isoformat()} ({_WEEKDAYS[today.weekday()]})",
        f"Workspace: {inputs.cwd}",
    ]
    if inputs.additional_directories:
        extra = ", ".join(str(directory) for directory in inputs.additional_directories)
        lines.append(f"Additional workspace directories: {extra}")
    lines.append(
        "The user works in a code editor: Markdown renders, and your tool calls show inline, so do not "
        "repeat their output. Give file paths relative to the workspace or absolute."
    )
    # Last, so sessions in the same workspace on the same day share the longest cacheable prefix.
    lines.append(f"Session: {inputs.session_id}")
    return "\n".join(lines)
