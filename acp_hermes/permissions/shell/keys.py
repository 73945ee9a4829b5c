"""The grant keys of a command line: what "always allow" would remember for it, or None.

``grant_keys`` names what a line runs (``git status``, ``npm run build``) so the user can grant it once,
as each program's key shape says (``programs``); ``None`` means the line cannot be analysed safely
and must always be asked. Pure functions of their arguments (no I/O).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from acp_hermes.permissions.shell.arguments import BRACE_LIST, GLOB, display_name, has_flag, program_name
from acp_hermes.permissions.shell.parse import Lines, Word, feeds
from acp_hermes.permissions.shell.programs import NEVER_GRANTED, SHAPES, runner_split, unlisted_options
from acp_hermes.permissions.shell.programs.base import KeyShape
from acp_hermes.permissions.shell.programs.interpreters import (
    READERS,
    Reader,
    family,
    program_source,
    reads_program_from_stdin,
)
from acp_hermes.permissions.shell.programs.wrappers import look_through
from acp_hermes.permissions.shell.rating import written_files

_MAX_DEPTH = 10  # nested ``bash -c``/``eval`` payloads and runners, as the risk rules allow


@dataclass(frozen=True, slots=True)
class GrantKeys:
    """A line's grant keys (None: no grant may cover it) and, where it helps the user, why not."""

    keys: tuple[str, ...] | None
    why_not: str = ""


def command_keys(command: str, roots: Sequence[Path] = ()) -> tuple[str, ...] | None:
    """The grant keys of a command line, in order, or None when no grant may ever cover it (``grant_keys``).
    Keys name what runs, wherever it runs: ``roots`` change nothing."""
    return grant_keys(command).keys


def grant_keys(command: str, lines: Lines | None = None) -> GrantKeys:
    """The grant keys of a command line, in order, or None when no grant may ever cover it.

    Each simple command gives the program plus, for programs with subcommands, the action
    (``git status --short`` → ``git status``; ``make test lint`` → ``make test``, ``make lint``;
    ``python -m pytest -x`` → ``python -m pytest``; ``python tool.py`` → ``python tool.py``;
    ``uv run pytest`` → ``uv run pytest``). Wrappers (``sudo``, ``timeout``, ``xargs`` …) are
    skipped and ``bash -c '…'`` contributes the keys of its payload. A program in a system ``bin``
    directory is named by its base name; any other path stays as written, so ``./bin/git`` never
    borrows the grant of ``git``. Writing a file by redirection (or a wrapper's output option, ``time -o``)
    adds the key ``>``. Inline code is
    keyed by the exact snippet (``python -c 'print(1)'``), so a grant covers exactly what it names.

    A grant is an allowlist: an invocation is covered only when every option in it is one its
    program's grant table (``programs``) knows to be harmless for that program (so ``rg --pre sh``, ``git log
    --output=…``, ``sed -n '1e …'``, ``git -C elsewhere`` are never covered), and no environment is
    assigned on the line (``HOME=. git status`` reads ``./.gitconfig``).

    None — ask every time — for those, and for whatever changes what runs behind a familiar name:
    command and process substitution, backticks (also within ``${…}`` and arithmetic), ``eval``,
    here-documents, function definitions, ``case``, a program named by a variable or a brace list,
    unbalanced quotes, a script piped into an interpreter, a program that keeps or replays commands
    (``tmux``, ``at``), and an awk program that runs commands. ``lines``: the parses of this line's
    analysis, shared with the other rules that read it.
    """
    why: list[str] = []
    keys = _line_keys(command, 0, lines if lines is not None else Lines(), why)
    return GrantKeys(None if keys is None else tuple(dict.fromkeys(keys)), why[0] if why else "")


def _line_keys(text: str, depth: int, lines: Lines, why: list[str]) -> list[str] | None:
    if depth > _MAX_DEPTH:
        return None
    parse = lines.parse(text)
    if parse.broken or parse.dynamic:
        return None
    keys: list[str] = []
    analysed = [(command, look_through(command.words)) for command in parse.commands]
    for command, invocation in analysed:
        assigned = invocation.assigned
        if assigned:
            why.append(f"it sets {assigned[0]}, and no remembered grant covers an environment assignment")
            return None
        if "eval" in invocation.chain or invocation.too_deep or invocation.opaque:
            return None
        if reads_program_from_stdin(invocation.name, invocation.args) and any(feeds(o, command) for o, _ in analysed):
            return None
        for payload in invocation.payloads:
            inner = _line_keys(payload, depth + 1, lines, why)
            if inner is None:
                return None
            keys.extend(inner)
        if invocation.argv:
            if not _grantable_argv(invocation.argv):
                return None
            argv_keys = _argv_keys(invocation.argv, depth, why)
            if argv_keys is None:
                return None
            keys.extend(argv_keys)
        elif invocation.chain and not invocation.payloads:
            keys.append(invocation.chain[-1])  # ``sudo -s``, ``command -v x``, ``exec >log``
        if next(written_files(command), None) is not None or invocation.writes:
            keys.append(">")  # a redirection, or a wrapper's output file (``time -o out``)
    return keys


def _grantable_argv(words: Sequence[Word]) -> bool:
    """False for invocations no grant may cover although their options are harmless: awk running commands."""
    never = NEVER_GRANTED.get(program_name(words[0].text))
    return never is None or not never([word.text for word in words[1:]])


def _argv_keys(words: Sequence[Word], depth: int, why: list[str]) -> list[str] | None:
    if depth > _MAX_DEPTH:
        return None
    program = words[0]
    if program.expands or not program.text or (GLOB.search(program.text) and program.text not in ("[", "[[")):
        return None
    if BRACE_LIST.search(program.text):
        return None
    display, name = display_name(program.text), program_name(program.text)
    reader = READERS.get(family(name))
    if reader is not None:
        return _interpreter_keys(display, name, words, reader, depth, why)
    runner = runner_split(words)
    if runner is not None:
        prefix = " ".join(runner[0])
        if not runner[1]:
            return [prefix]
        inner = _argv_keys(runner[1], depth + 1, why)
        return None if inner is None else [f"{prefix} {key}" for key in inner]
    args = [word.text for word in words[1:]]
    unlisted = unlisted_options(name, args)
    if unlisted:
        why.append(f"`{unlisted[0]}` is not among the options of {name} a remembered grant may cover")
        return None
    shape = SHAPES.get(name)
    return [display] if shape is None else _subcommand_keys(display, args, shape)


def _interpreter_keys(
    display: str, name: str, words: Sequence[Word], reader: Reader, depth: int, why: list[str]
) -> list[str] | None:
    source = program_source(reader, [word.text for word in words[1:]])
    if source.kind == "stdin":
        return [display]
    if source.kind == "script":
        return [f"{display} {source.value}"]
    if family(name) == "python" and source.flag == "-m" and source.value:
        inner = _argv_keys([Word(source.value), *words[1 + source.after :]], depth + 1, why)
        return None if inner is None else [f"{display} -m {key}" for key in inner]
    in_place = " -i" if has_flag([word.text for word in words[1:]], "i") and family(name) == "perl" else ""
    return [f"{display}{in_place} {source.flag} {source.value}"]  # the exact snippet, nothing broader


def _subcommand_keys(display: str, args: Sequence[str], shape: KeyShape) -> list[str]:
    operands: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            operands.extend(args[index + 1 :])
            break
        if arg.startswith("-"):
            index += 2 if arg in shape.options and "=" not in arg else 1
            continue
        if not arg.startswith("+"):  # cargo +nightly
            operands.append(arg)
        index += 1
    if shape.targets:
        targets = [op for op in operands if "=" not in op and not op.isdigit()]
        return [f"{display} {target}" for target in targets] or [display]
    if not operands:
        return [display]
    wanted = shape.depth + (1 if operands[0] in shape.nested else 0)
    return [" ".join([display, *operands[:wanted]])]
