"""What is known of programs, gathered from every family, as the engines look it up by name.

One module per family of programs (``git``, ``find``, ``text`` for sed/awk and the filters,
``archives``, ``packages`` for managers and runners, ``interpreters``, ``containers``, ``wrappers``,
``files``, ``system``, ``remote``, ``databases``) holds its risk checks, grant tables, grant-key shapes,
read-only verdicts and network use together (``base.Family``); here they are merged into one table
each (a program named by two families is an error), with the lists that span families: the programs
that take names as data, those harmless to run through anything, those that do real work.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from acp_hermes.permissions.shell.arguments import display_name, names, program_name, skip_options, subcommand
from acp_hermes.permissions.shell.options import UNKNOWN, Spec, scan
from acp_hermes.permissions.shell.parse import Word
from acp_hermes.permissions.shell.programs import (
    archives,
    build,
    containers,
    databases,
    files,
    find,
    git,
    packages,
    remote,
    system,
    text,
)
from acp_hermes.permissions.shell.programs.base import ANY, KeyShape, NetworkUse, ReadRule, RiskCheck
from acp_hermes.permissions.shell.programs.databases import TEXT_ONLY
from acp_hermes.permissions.shell.programs.interpreters import ENVIRONMENT_PRINTERS, READERS, family
from acp_hermes.permissions.shell.programs.packages import RUNNER_OPTIONS, RUNNER_PROGRAMS
from acp_hermes.permissions.shell.programs.remote import DOWNLOADERS
from acp_hermes.permissions.shell.programs.system import PRINTERS
from acp_hermes.permissions.shell.programs.wrappers import ELEVATORS, looked_through

_FAMILIES = tuple(module.FAMILY for module in (
    files, text, find, git, archives, build, packages, containers, remote, system, databases))
V = TypeVar("V")


def _merged(tables: Iterable[Mapping[str, V]]) -> dict[str, V]:
    merged: dict[str, V] = {}
    for table in tables:
        twice = merged.keys() & table.keys()
        if twice:
            raise ValueError(f"programs named by two families: {', '.join(sorted(twice))}")
        merged.update(table)
    return merged


CHECKS: dict[str, RiskCheck] = _merged(family.checks for family in _FAMILIES)
OPTIONS: dict[str, Spec] = _merged(family.options for family in _FAMILIES)
PREPARE: dict[str, Callable[[Sequence[str]], list[str]]] = _merged(family.prepare for family in _FAMILIES)
SHAPES: dict[str, KeyShape] = _merged(family.shapes for family in _FAMILIES)
READS: dict[str, ReadRule] = _merged(family.reads for family in _FAMILIES)
NETWORK: dict[str, NetworkUse] = _merged(family.network for family in _FAMILIES)
NEVER_GRANTED: dict[str, Callable[[list[str]], bool]] = _merged(family.never_granted for family in _FAMILIES)
NETWORK_PROGRAMS = frozenset().union(*(family.network_programs for family in _FAMILIES))
ANY_ARGUMENTS = frozenset(name for name, rule in READS.items() if rule == ANY)  # read only, whatever their words

# Programs that take program names as data (``man rm``, ``which python``, ``pgrep node``) and never
# run them: with ``has_rules`` they are the programs whose arguments the analysis understands.
_INERT = names(
    "man info tldr whatis apropos whereis which type hash help pgrep pidof ps lsof dpkg dpkg-query rpm apt-cache "
    "apt-file update-alternatives alternatives ldd strings nm objdump readelf file stat ls cat head tail wc cut "
    "tr sort uniq diff cmp comm join paste column fold nl od printf echo true false test [ [[ : basename dirname "
    "realpath readlink printenv whoami id groups uname nproc tty locale sleep tac rev seq expand unexpand md5sum "
    "sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum sum bat batcat less more most highlight "
    "pygmentize journalctl complete compgen unalias unset jq yq pv"
)
# Programs it would do no harm to run through a program acp-hermes cannot see through.
_HARMLESS = names("echo printf true false test [ [[ : ls cat head tail wc pwd sleep yes date whoami id uname "
                  "basename dirname which type")
# Names that are programs for no rule of ours but do real work when another program runs them.
_COMMON_PROGRAMS = names(
    "rmdir mkdir touch truncate unlink ln cp mv install chmod chown chgrp chattr setfacl patch tar unzip zip "
    "gzip gunzip xz unxz bzip2 zstd cpio ar sponge mount umount swapon swapoff sysctl modprobe insmod rmmod "
    "iptables nft ip useradd userdel usermod passwd chpasswd groupadd visudo apt apt-get dpkg yum dnf rpm "
    "pacman snap flatpak brew pip pip3 npm yarn pnpm cargo go gem composer make cmake ninja gcc cc clang ld"
)


def is_listed(program: str) -> bool:
    """Whether ``program`` has a grant table (an unlisted one has no harmless options)."""
    return program in OPTIONS or program in PRINTERS


def unlisted_options(program: str, args: Sequence[str]) -> tuple[str, ...]:
    """The option words of ``program args`` that no remembered grant may cover (``()``: all harmless).

    ``program`` is the lowercased base name (``git``; ``python3`` is given as-is), ``args`` the words
    after it, subcommands included (``python -m pytest`` is given as ``pytest``). Operands
    (non-option words) are free, except those a table checks: a sed script, make's ``VAR=value``,
    git's paths to ``checkout``, its ``+``/``:`` refspecs to ``push``, the write forms of
    ``git config`` and actions outside a short list (``git stash drop``, ``git bisect run``). A
    program missing from the tables has no harmless options: every option it is given is returned.

    Words come back in order, once each: an option by its name (``--pre`` for ``--pre=sh``,
    ``-i`` for the ``i`` in ``-ni``; an unknown program's ``-la`` whole, as its letters mean nothing
    here), and a value or operand that fails its check as written (``1e ls``, ``SHELL=sh``).
    """
    if program in PRINTERS:
        return ()
    prepare = PREPARE.get(program)
    bad: list[str] = []
    scan(OPTIONS.get(program, UNKNOWN), prepare(args) if prepare else args, bad)
    return tuple(dict.fromkeys(bad))


def uses_network(name: str, args: Sequence[str]) -> bool:
    """Whether ``name args`` reaches the network by its subcommand (``git push``, ``pip install``)."""
    use = NETWORK.get(name)
    return use is not None and use(args)


def has_rules(name: str) -> bool:
    """Whether the analysis knows what ``name`` does with its arguments: a rule, a grant table, a
    runner or interpreter, or a program known to take names as data."""
    return (name in CHECKS or name in SHAPES or name in RUNNER_PROGRAMS or name in _INERT
            or name in TEXT_ONLY or name in NETWORK_PROGRAMS or name in ENVIRONMENT_PRINTERS
            or name in DOWNLOADERS or family(name) in READERS or is_listed(name) or name.startswith("mkfs")
            or looked_through(name))


def worth_seeing(name: str) -> bool:
    """A program some rule judges, or one that runs code, shells and interpreters included."""
    if name in _HARMLESS:
        return False
    return (name in CHECKS or name in _COMMON_PROGRAMS or name in ELEVATORS or name in NETWORK_PROGRAMS
            or name in RUNNER_PROGRAMS or name in SHAPES or family(name) in READERS
            or name.startswith("mkfs") or looked_through(name))


def runner_split(words: Sequence[Word]) -> tuple[list[str], list[Word]] | None:
    """Split ``uv run --with x pytest -q`` into (["uv", "run"], words of ``pytest -q``)."""
    name = program_name(words[0].text)
    args = [word.text for word in words]
    if name in RUNNER_PROGRAMS:
        start = skip_options(args, "", RUNNER_PROGRAMS[name] | RUNNER_OPTIONS)
        return [display_name(words[0].text)], list(words[start:])
    shape = SHAPES.get(name)
    if shape is None or not shape.runs:
        return None
    sub, _ = subcommand(args[1:], shape.options)
    if sub not in shape.runs:
        return None
    position = args.index(sub, 1)
    start = position + skip_options(args[position:], "", RUNNER_OPTIONS)
    return [display_name(words[0].text), sub], list(words[start:])
