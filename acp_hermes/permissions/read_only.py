"""Whether a shell command line only reads: the one kind of command that needs no checkpoint.

A checkpoint is taken before the first change of a turn (issue 18), and a command counts as a
change unless this module proves otherwise. The proof is an allowlist over what the risk rules
already see (``shell_parse``, ``command_risk``, ``grant_options``): every simple command on the
line — in pipelines, lists, subshells, substitutions, ``bash -c '…'`` — runs a program known only
to read and print, through wrappers known not to write (``timeout``, ``xargs``, ``env`` …), with
only the options the grant tables know to be harmless, no assignment beyond locale and display
settings, and no redirection except to ``/dev/null`` and the like or between descriptors. Whatever
is not on the lists — an unknown program, option or wrapper, a program named at run time, a
function, a line that does not parse — makes the answer False: a needless checkpoint costs a few
milliseconds, a missing one loses the user's work.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from acp_hermes.permissions.command_risk import (
    _GIT_OPTIONS,
    _git_writes_repository,
    _operands,
    _subcommand,
    _written_files,
    assess_command,
)
from acp_hermes.permissions.grant_options import unlisted_options
from acp_hermes.permissions.shell_parse import Command, Word, family, look_through, names, parse_commands, program_name

_MAX_DEPTH = 4  # nested ``bash -c`` payloads: deeper is never needed to read
_MAX_WRAPPERS = 8

# Programs none of whose options or operands writes a file or runs a program: whatever words they
# are given (globs, expansions, ``xargs`` input) they only read and print.
_ANY_ARGUMENTS = names(
    "ls cat head tail wc grep egrep fgrep cut tr stat du df pwd cd echo true false test [ [[ : basename dirname "
    "realpath readlink which type cmp whoami id groups uname nproc arch tty printenv locale sleep tac nl rev comm "
    "join paste fold expand unexpand seq od column md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum "
    "cksum sum"
)
# Programs that only read as long as ``grant_options`` finds each option harmless (``sort`` without
# ``-o``, ``sed`` without ``-i`` and with a script that neither writes nor runs, ``find`` without
# ``-delete``/``-exec``/``-fprint``, ``tree`` without ``-o``, ``file`` without ``-C`` …); their words
# must be literal, as an expansion could turn into an option no table saw.
_HARMLESS_OPTIONS = names("sort uniq diff rg find fd fdfind tree file date jq sed printf")
# Git subcommands that read, some only in their listing forms (``command_risk`` tells those apart).
_GIT_READS = names(
    "status log diff show whatchanged shortlog rev-list rev-parse ls-files ls-tree cat-file blame grep describe "
    "merge-base show-ref ls-remote count-objects check-ignore branch tag stash remote worktree config reflog"
)
# ``git branch``/``git tag`` list when given no name, or any of these (they imply ``--list``).
_GIT_LIST_MODE = names("-l --list --contains --no-contains --merged --no-merged --points-at")
_GIT_LIST_VALUES = names("--contains --no-contains --merged --no-merged --points-at --sort --format")
_GIT_LIST_OPTIONS = _GIT_LIST_VALUES | names(
    "-a --all -r --remotes -v --verbose -l --list --show-current --column --no-column --color --no-color -i "
    "--ignore-case --abbrev --no-abbrev -q --quiet --omit-empty -n"
)
# Interpreters and tools given exactly one of these words only print their version.
_VERSION_WORDS: dict[str, frozenset[str]] = {
    "python": names("--version -V -VV"),
    "node": names("--version -v"),
    "perl": names("--version -v"),
    **dict.fromkeys(names("ruby npm pip pip3 uv gcc g++ cc clang make cmake javac git"), names("--version")),
    "java": names("--version -version"),
}
# Variables that change only how programs print, never what runs or where they read configuration.
_HARMLESS_VARIABLE = re.compile(
    r"LC_[A-Z]+|LANG|LANGUAGE|TZ|NO_COLOR|FORCE_COLOR|CLICOLOR|CLICOLOR_FORCE|COLUMNS|LINES"
)
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=", re.S)
_GLOB = re.compile(r"[*?\[]")
_BRACE_LIST = re.compile(r"\{[^{}]*,[^{}]*\}")
_SYSTEM_BIN_DIRS = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/opt/homebrew/bin"})


@dataclass(frozen=True)
class _Wrapper:
    """A program that runs the command after its options; only these options keep it from writing."""

    flags: frozenset[str] = frozenset()
    valued: frozenset[str] = frozenset()  # take an inert value, attached or as the next word
    operands: int = 0  # words before the command (timeout's duration)


# Not ``time -o`` (writes), ``nohup`` (may write nohup.out), ``sudo``, ``env -S`` (a command string) …
_WRAPPERS: dict[str, _Wrapper] = {
    "command": _Wrapper(names("-p")),
    "builtin": _Wrapper(),
    "time": _Wrapper(names("-p")),
    "nice": _Wrapper(valued=names("-n --adjustment")),
    "timeout": _Wrapper(names("--preserve-status --foreground -v --verbose"), names("-s --signal -k --kill-after"), 1),
    "stdbuf": _Wrapper(valued=names("-i -o -e --input --output --error")),
    "env": _Wrapper(names("-i --ignore-environment -0 --null"), names("-u --unset")),
    "xargs": _Wrapper(
        names("-0 --null -r --no-run-if-empty -t --verbose -x --exit -o --open-tty"),
        names("-a --arg-file -d --delimiter -E -I -L -n --max-args -P --max-procs -s --max-chars"),
    ),
}
# Shells whose ``-c`` string is read like the line itself; zsh reads ~/.zshenv even then.
_SHELLS = names("sh bash dash")
_SHELL_OPTION = re.compile(r"-[ceuxvfC]+|--norc|--noprofile")
_SHELL_SETTINGS = names("pipefail errexit nounset xtrace noglob noclobber")


@dataclass
class _Unwrapped:
    """A simple command seen through its wrappers: the program's words, or the shell code it runs."""

    argv: list[Word]
    payload: str | None = None
    xargs: bool = False  # its arguments also come from standard input


def reads_only(command: str, *, home: Path, roots: Sequence[Path], cwd: Path) -> bool:
    """True only when ``command`` provably changes no file (see the module's docstring).

    ``home``, ``roots`` and ``cwd`` are where the line runs, as for ``assess_command``: when the
    allowlist passes a line, the risk analysis must agree that it writes nothing and hides nothing.
    """
    return _reads_only(command, home, tuple(roots), cwd)


@functools.lru_cache(maxsize=256)  # an agent runs the same few looks (git status, ls) again and again
def _reads_only(command: str, home: Path, roots: tuple[Path, ...], cwd: Path) -> bool:
    if not _line_reads_only(command, 0):
        return False
    risk = assess_command(command, home=home, roots=roots, cwd=cwd)
    return risk.level != "catastrophic" and not (
        risk.opaque or risk.outside_writes or risk.scratch_writes or risk.protected_writes
    )


def _line_reads_only(text: str, depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return False
    parse = parse_commands(text)
    if parse.broken or parse.too_deep:
        return False
    return all(_command_reads_only(command, depth) for command in parse.commands)


def _command_reads_only(command: Command, depth: int) -> bool:
    if command.function is not None or next(_written_files(command), None) is not None:
        return False
    unwrapped = _unwrap(command.words)
    if unwrapped is None or not _agrees_with_risk_analysis(command, unwrapped):
        return False
    if unwrapped.payload is not None:
        return _line_reads_only(unwrapped.payload, depth + 1)
    if not unwrapped.argv:
        return True  # a bare ``env``, ``xargs`` (echo), ``command -v x``, or only redirections
    return _program_reads_only(unwrapped.argv, from_stdin=unwrapped.xargs)


def _agrees_with_risk_analysis(command: Command, unwrapped: _Unwrapped) -> bool:
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


def _unwrap(words: Sequence[Word]) -> _Unwrapped | None:
    """The program a command runs through the allowed wrappers, or None when anything on the way is
    not known to be harmless (an assignment, a wrapper or option, a word the shell splits)."""
    rest, xargs = list(words), False
    for _ in range(_MAX_WRAPPERS):
        while rest and (assignment := _ASSIGNMENT.match(rest[0].text)):
            if not _HARMLESS_VARIABLE.fullmatch(assignment.group(1)):
                return None
            rest = rest[1:]
        if not rest:
            return _Unwrapped([], xargs=xargs)
        name = program_name(rest[0].text)
        if name in _SHELLS:
            payload = _shell_payload(rest)
            return None if payload is None or xargs else _Unwrapped([], payload)
        wrapper = _WRAPPERS.get(name)
        if wrapper is None:
            return _Unwrapped(rest, xargs=xargs)
        if name == "command" and rest[1:2] and rest[1].text in ("-v", "-V"):
            return _Unwrapped([], xargs=xargs)  # only asks where a program is
        start = _after_options(wrapper, [word.text for word in rest])
        if start is None or any(word.expands for word in rest[1:start]):
            return None  # an expansion there splits into words: options, or the program itself
        rest, xargs = rest[start:], xargs or name == "xargs"
    return None


def _after_options(wrapper: _Wrapper, words: list[str]) -> int | None:
    """Index of the wrapped command in ``words`` (``words[0]`` is the wrapper), or None when an
    option is not one of the wrapper's harmless ones."""
    index = 1
    while index < len(words):
        word = words[index]
        if word == "--":
            index += 1
            break
        if not word.startswith("-") or word == "-":
            break
        index += 1
        if word.startswith("--"):
            name, has_value, _ = word.partition("=")
            if name in wrapper.valued and not has_value:
                index += 1
            elif name not in wrapper.flags and name not in wrapper.valued:
                return None
            continue
        for position, letter in enumerate(word[1:], start=1):
            option = "-" + letter
            if option in wrapper.valued:
                index += 0 if position < len(word) - 1 else 1  # the rest of the word, or the next one
                break
            if option not in wrapper.flags:
                return None
    index += wrapper.operands
    return index if index <= len(words) else None


def _shell_payload(words: Sequence[Word]) -> str | None:
    """The command string of ``bash -c '…'`` with options that change nothing else, else None
    (a script, standard input, a login or interactive shell reading its start-up files)."""
    index, has_code = 1, False
    while index < len(words):
        text = words[index].text
        if text in ("-o", "+o") and index + 1 < len(words) and words[index + 1].text in _SHELL_SETTINGS:
            index += 2
        elif _SHELL_OPTION.fullmatch(text):
            has_code = has_code or (not text.startswith("--") and "c" in text)
            index += 1
        else:
            break
    if not has_code or index >= len(words):
        return None
    return words[index].text


def _program_reads_only(argv: list[Word], *, from_stdin: bool) -> bool:
    program = argv[0]
    if program.expands or program.substitutions or _BRACE_LIST.search(program.text):
        return False
    if (_GLOB.search(program.text) and program.text not in ("[", "[[")) or not _system_program(program.text):
        return False
    name, args = program_name(program.text), [word.text for word in argv[1:]]
    if name in _ANY_ARGUMENTS:
        return True
    if from_stdin:  # what xargs adds is not on the line: only a program any word leaves harmless will do
        return False
    if any(_unknown_word(word) for word in argv[1:]):
        return False
    versions = _VERSION_WORDS.get(family(name))
    if versions is not None and len(args) == 1 and args[0] in versions:
        return True
    if name == "git":
        return _git_reads_only(args)
    return name in _HARMLESS_OPTIONS and not unlisted_options(name, args)


def _system_program(text: str) -> bool:
    """A bare name, or one in a system ``bin`` directory: ``./bin/ls`` is not ``ls``."""
    return "/" not in text or posixpath.dirname(posixpath.normpath(text)) in _SYSTEM_BIN_DIRS


def _unknown_word(word: Word) -> bool:
    """A word whose final text is not on the line: an expansion (but for ``<(…)``, a /dev/fd path), or
    a glob that could match a name starting with ``-``, a brace list (``{-o,out}`` is two words)."""
    if word.expands:
        return not word.text.startswith(("<(", ">("))
    return not word.quoted and (bool(_GLOB.match(word.text)) or bool(_BRACE_LIST.search(word.text)))


def _git_reads_only(args: list[str]) -> bool:
    sub, rest = _subcommand(args, _GIT_OPTIONS)
    if sub and sub not in _GIT_READS:
        return False
    if unlisted_options("git", args) or _git_writes_repository(sub, rest):
        return False
    return sub not in ("branch", "tag") or _git_lists(rest)


def _git_lists(rest: list[str]) -> bool:
    """``git branch``/``git tag`` only list: listing options, and a name only where they imply ``--list``."""
    options = [word.partition("=")[0] for word in rest if word.startswith("-") and word != "-"]
    for option in options:
        letters = option[1:] if not option.startswith("--") else ""
        if option not in _GIT_LIST_OPTIONS and not (
            letters and all("-" + letter in _GIT_LIST_OPTIONS or letter.isdigit() for letter in letters)
        ):
            return False
    return not _operands(rest, _GIT_LIST_VALUES) or any(option in _GIT_LIST_MODE for option in options)
