"""Whether a shell command line only reads: the one kind of command that needs no checkpoint.

A checkpoint is taken before the first change of a turn (issue 18), and a command counts as a
change unless this module proves otherwise. The proof is an allowlist over what the risk rules
already see: every simple command on the line — in pipelines, lists, subshells, substitutions,
``bash -c '…'`` — runs a program its family knows only to read and print (``programs``), through
wrappers known not to write (``timeout``, ``xargs``, ``env`` …), with only the options its grant table
knows to be harmless, no assignment beyond locale and display settings, and no redirection except
to ``/dev/null`` and the like or between descriptors; and the risk rules must agree that it writes
and hides nothing. Whatever is not on the lists — an unknown program, option or wrapper, a program
named at run time, a function, a line that does not parse — makes the answer False: a needless
checkpoint costs a few milliseconds, a missing one loses the user's work.
"""

from __future__ import annotations

import posixpath

from acp_hermes.permissions.shell.arguments import BRACE_LIST, GLOB, program_name
from acp_hermes.permissions.shell.parse import Command, Lines, Word
from acp_hermes.permissions.shell.programs import READS, unlisted_options
from acp_hermes.permissions.shell.programs.base import ANY, OPTIONS
from acp_hermes.permissions.shell.programs.interpreters import prints_version
from acp_hermes.permissions.shell.programs.wrappers import Unwrapped, look_through, unwrap_for_reading
from acp_hermes.permissions.shell.rating import CommandRisk, written_files

_MAX_DEPTH = 4  # nested ``bash -c`` payloads: deeper is never needed to read
_SYSTEM_BIN_DIRS = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/opt/homebrew/bin"})


def only_reads(line: str, lines: Lines) -> bool:
    """Whether every command on ``line`` is on the read-only allowlist (the risk rules asked apart:
    ``risk_agrees``)."""
    return _line_reads_only(line, 0, lines)


def risk_agrees(risk: CommandRisk) -> bool:
    """The risk rules find nothing written, hidden or refused on the line."""
    return risk.level != "catastrophic" and not (
        risk.opaque or risk.outside_writes or risk.scratch_writes or risk.protected_writes
    )


def _line_reads_only(text: str, depth: int, lines: Lines) -> bool:
    if depth > _MAX_DEPTH:
        return False
    parse = lines.parse(text)
    if parse.broken or parse.too_deep:
        return False
    return all(_command_reads_only(command, depth, lines) for command in parse.commands)


def _command_reads_only(command: Command, depth: int, lines: Lines) -> bool:
    if command.function is not None or next(written_files(command), None) is not None:
        return False
    unwrapped = unwrap_for_reading(command.words)
    if unwrapped is None or not _agrees_with_risk_analysis(command, unwrapped):
        return False
    if unwrapped.payload is not None:
        return _line_reads_only(unwrapped.payload, depth + 1, lines)
    if not unwrapped.argv:
        return True  # a bare ``env``, ``xargs`` (echo), ``command -v x``, or only redirections
    return _program_reads_only(unwrapped.argv, from_stdin=unwrapped.xargs)


def _agrees_with_risk_analysis(command: Command, unwrapped: Unwrapped) -> bool:
    """The risk rules' ``look_through`` must find the same program or payload: one reading of the line."""
    invocation = look_through(command.words)
    if invocation.too_deep or invocation.opaque:
        return False
    if unwrapped.payload is not None:
        return not invocation.argv and invocation.payloads == ([unwrapped.payload] if unwrapped.payload.strip() else [])
    if invocation.payloads:
        return False
    if not unwrapped.argv:
        return not invocation.argv
    return bool(invocation.argv) and invocation.argv[0] is unwrapped.argv[0]


def _program_reads_only(argv: list[Word], *, from_stdin: bool) -> bool:
    program = argv[0]
    if program.expands or program.substitutions or BRACE_LIST.search(program.text):
        return False
    if (GLOB.search(program.text) and program.text not in ("[", "[[")) or not _system_program(program.text):
        return False
    name, args = program_name(program.text), [word.text for word in argv[1:]]
    rule = READS.get(name)
    if rule == ANY:
        return True
    if from_stdin:  # what xargs adds is not on the line: only a program any word leaves harmless will do
        return False
    if any(_unknown_word(word) for word in argv[1:]):
        return False
    if prints_version(name, args):
        return True
    if callable(rule):
        return rule(args)
    return rule == OPTIONS and not unlisted_options(name, args)


def _system_program(text: str) -> bool:
    """A bare name, or one in a system ``bin`` directory: ``./bin/ls`` is not ``ls``."""
    return "/" not in text or posixpath.dirname(posixpath.normpath(text)) in _SYSTEM_BIN_DIRS


def _unknown_word(word: Word) -> bool:
    """A word whose final text is not on the line: an expansion (but for ``<(…)``, a /dev/fd path), or
    a glob that could match a name starting with ``-``, a brace list (``{-o,out}`` is two words)."""
    if word.expands:
        return not word.text.startswith(("<(", ">("))
    return not word.quoted and (bool(GLOB.match(word.text)) or bool(BRACE_LIST.search(word.text)))
