"""Reading a program's words: options, operands, subcommands and program names.

No program knowledge here: these read words the way most programs do (getopt's clusters, ``--``,
long options with ``=``), for the rules in ``programs`` and the engines that apply them.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

GLOB = re.compile(r"[*?\[]")
BRACE_LIST = re.compile(r"\{[^{}]*,[^{}]*\}")
# Where the system's own programs live: ``/usr/bin/git`` is the ``git`` a bare name finds.
SYSTEM_BIN_DIRS = frozenset({"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin",
                             "/opt/homebrew/bin", "/opt/local/bin"})


def names(text: str) -> frozenset[str]:
    """A set of names written as one space-separated string, to keep rule tables compact."""
    return frozenset(text.split())


def program_name(text: str) -> str:
    return posixpath.basename(text).lower()


def display_name(program: str) -> str:
    """``/usr/bin/git`` → ``git``; any other path stays as written, so a grant names one executable
    (``./bin/git`` or ``node_modules/.bin/git`` never borrows the grant of ``git``)."""
    if "/" not in program:
        return program
    directory = posixpath.normpath(posixpath.dirname(program))
    return posixpath.basename(program) if directory in SYSTEM_BIN_DIRS else program


def skip_options(words: Sequence[str], short_values: str, long_values: frozenset[str]) -> int:
    """Index of the first operand after ``words[0]``'s options (value-taking ones consume it)."""
    index = 1
    while index < len(words):
        word = words[index]
        if word == "--":
            return index + 1
        if word.startswith("--"):
            index += 2 if "=" not in word and word in long_values else 1
            continue
        if not word.startswith("-") or word == "-":
            break
        index += 1
        for position, flag in enumerate(word[1:], start=1):
            if flag in short_values:
                if position == len(word) - 1:
                    index += 1
                break
    return index


def option_value(args: Sequence[str], short: str, long: str) -> str | None:
    for index, arg in enumerate(args):
        if arg in (short, long):
            return args[index + 1] if index + 1 < len(args) else None
        if arg.startswith(long + "="):
            return arg[len(long) + 1 :]
    return None


def operands_of(args: Sequence[str], value_options: frozenset[str] = frozenset()) -> list[str]:
    found: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            found.extend(args[index + 1 :])
            break
        if arg.startswith("-") and arg != "-":
            index += 2 if arg in value_options else 1
            continue
        found.append(arg)
        index += 1
    return found


def has_flag(args: Sequence[str], letters: str, *long: str) -> bool:
    """Whether a short option cluster holds one of ``letters`` or a long option is present.

    A long option also counts when abbreviated: getopt_long and git accept any unambiguous
    prefix (``git reset --har`` is ``--hard``), and one that is ambiguous for the program is
    refused by it, so treating every prefix as the option errs on the careful side.
    """
    for arg in args:
        if arg == "--":
            return False
        given = arg.split("=", 1)[0]
        if given in long:  # also single-dash long options (terraform -destroy, fdisk -l)
            return True
        if arg.startswith("--") and len(arg) > 2:
            if any(option.startswith(given) for option in long):
                return True
        elif arg.startswith("-") and any(letter in arg[1:] for letter in letters):
            return True
    return False


def subcommand(args: Sequence[str], value_options: frozenset[str] = frozenset()) -> tuple[str, list[str]]:
    """The first operand after global options (``+toolchain`` skipped) and what follows it."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg.startswith("-"):
            index += 2 if arg in value_options else 1
        elif arg.startswith("+"):
            index += 1
        else:
            return arg, list(args[index + 1 :])
    return "", []
