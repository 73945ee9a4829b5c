"""Shells and interpreters: where they read their program from, and what their inline code does.

``program_source`` tells whether ``python``, ``node``, ``sh`` … read their program from stdin, a
script or an option (``-c``, ``-e``, ``-m``); the risk engine looks into a shell's code as a line of
its own and rates other languages' inline code by what it calls. Also here: the programs whose output
is shell code for ``eval`` (``pyenv init``), and the version queries that only print.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from acp_hermes.permissions.shell.arguments import names

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh"})


@dataclass(frozen=True)
class Reader:
    code: str = ""  # short options whose argument is the program or a module (python -c, -m)
    values: str = ""  # short options that take a value
    long_code: frozenset[str] = frozenset()
    long_values: frozenset[str] = frozenset()
    stdin: str = ""  # short options that read the program from stdin (sh -s)


@dataclass(frozen=True)
class Source:
    """Where an interpreter's program comes from: stdin, a script, or a code/module option."""

    kind: Literal["stdin", "script", "option"]
    flag: str = ""
    value: str = ""
    after: int = 0  # index in the arguments of the first one after ``value``


READERS: dict[str, Reader] = {
    "sh": Reader(code="c", values="oO", long_values=frozenset({"--rcfile", "--init-file"}), stdin="s"),
    "python": Reader(code="cm", values="WX"),
    "perl": Reader(code="eE", values="I"),
    "ruby": Reader(code="e", values="rI"),
    "node": Reader(
        code="ep",
        values="r",
        long_code=frozenset({"--eval", "--print"}),
        long_values=frozenset({"--require", "--import", "--loader", "--experimental-loader", "--input-type"}),
    ),
    "php": Reader(code="rf", values="dc"),
    "lua": Reader(code="e", values="l"),
    "source": Reader(),
}
_PYTHON = re.compile(r"python[0-9.]*|pypy[0-9.]*|py")


def family(name: str) -> str:
    if _PYTHON.fullmatch(name):
        return "python"
    if name in SHELLS:
        return "sh"
    if name == ".":
        return "source"
    return {"nodejs": "node"}.get(name, name)


def program_source(reader: Reader, args: Sequence[str]) -> Source:
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in ("-", "/dev/stdin"):
            return Source("stdin")
        if arg == "--":
            index += 1
            break
        if arg.startswith("--"):
            name, has_value, value = arg.partition("=")
            if name in reader.long_code:
                if has_value:
                    return Source("option", name, value, index + 1)
                return Source("option", name, args[index + 1] if index + 1 < len(args) else "", index + 2)
            index += 2 if name in reader.long_values and not has_value else 1
            continue
        if len(arg) > 1 and arg[0] in "-+":
            index += 1
            for position, letter in enumerate(arg[1:], start=1):
                attached = arg[position + 1 :]
                if arg[0] == "-" and letter in reader.code:
                    if attached:
                        return Source("option", f"-{letter}", attached, index)
                    return Source("option", f"-{letter}", args[index] if index < len(args) else "", index + 1)
                if letter in reader.stdin:
                    return Source("stdin")
                if letter in reader.values:
                    if not attached:
                        index += 1
                    break
            continue
        break
    if index < len(args) and args[index] not in ("-", "/dev/stdin"):
        return Source("script", value=args[index], after=index + 1)
    return Source("stdin")


def reads_program_from_stdin(name: str, args: Sequence[str]) -> bool:
    """Whether interpreter ``name`` given ``args`` reads its program from stdin (``sh``, ``python -``)."""
    reader = READERS.get(family(name))
    return reader is not None and program_source(reader, args).kind == "stdin"


# Inline code that deletes files or starts programs, per interpreter family.
_INLINE_DANGER = {
    "python": re.compile(r"rmtree|\bos\.(?:remove|unlink|rmdir|removedirs|system|exec\w*|spawn\w*|popen|kill)\b"
                         r"|\.unlink\(|\.rmdir\(|\bsubprocess\b|\bpty\.spawn|__import__|\beval\(|\bexec\("),
    "perl": re.compile(r"\bunlink\b|\brmtree\b|\bremove_tree\b|\bsystem\b|\bexec\b|`|\bqx\b|\bopen\s*\(?[^)]*\|"),
    "ruby": re.compile(r"rm_r|rm_rf|remove_dir|File\.delete|FileUtils|\bsystem\b|\bexec\b|`|%x|\bspawn\b|Open3"),
    "node": re.compile(r"\brm(?:Sync)?\(|rmdir|unlink|child_process|\bexec(?:Sync)?\(|\bspawn(?:Sync)?\(|\beval\("),
    "php": re.compile(r"\bunlink\b|\brmdir\b|\bsystem\b|\bexec\b|shell_exec|passthru|proc_open|popen|`"),
    "lua": re.compile(r"os\.remove|os\.execute|io\.popen"),
}


def inline_danger(language: str, code: str) -> str | None:
    """Why ``code`` in ``language`` (``python -c …``) asks: it deletes files or runs programs."""
    danger = _INLINE_DANGER.get(language)
    if danger is not None and danger.search(code):
        return f"inline {language} code that deletes files or runs programs"
    return None


# Families whose input is code: a download fed to one runs it (``bash <(curl …)``).
CODE_RUNNERS = frozenset({"sh", "python", "perl", "ruby", "node", "php", "lua", "source", "eval"})
# Programs whose output is shell code meant for ``eval "$(…)"``: the one dynamic form that is routine.
ENVIRONMENT_PRINTERS = names(
    "ssh-agent pyenv rbenv nodenv goenv jenv direnv brew opam conda mamba micromamba fnm mise rtx zoxide starship "
    "keychain gpg-agent dircolors thefuck luarocks"
)
# Interpreters and tools given exactly one of these words only print their version.
VERSION_WORDS: dict[str, frozenset[str]] = {
    "python": names("--version -V -VV"),
    "node": names("--version -v"),
    "perl": names("--version -v"),
    **dict.fromkeys(names("ruby npm pip pip3 uv gcc g++ cc clang make cmake javac git"), names("--version")),
    "java": names("--version -version"),
}


def prints_version(name: str, args: Sequence[str]) -> bool:
    """``python --version``, ``git --version``: a query that only prints."""
    versions = VERSION_WORDS.get(family(name))
    return versions is not None and len(args) == 1 and args[0] in versions
