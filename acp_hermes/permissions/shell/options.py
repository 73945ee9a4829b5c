"""Which options a remembered command grant covers: the allowlist machinery.

A grant such as "always allow ``git log``" names a program, not an invocation, and options can
turn a harmless program into one that runs code or writes anywhere: ``sed -n '1e …'``,
``rg --pre sh``, ``tar --checkpoint-action=exec=…``, ``make --eval``, ``git log --output=~/.bashrc``,
``find -fprint``, ``git --git-dir=evil status``, ``pytest --basetemp=~`` (pytest empties its
basetemp). So a grant covers an invocation only when every option in it is listed as harmless for
that program and subcommand (each family in ``programs`` lists its own with ``spec``). Lists of bad
things leak (an option added in the next release, an abbreviation, a spelling nobody thought of);
lists of good things hold: whatever is not listed is asked about.

An option is listed only when it neither runs a program, nor writes a file named in its value,
nor reads configuration or code from elsewhere, nor changes the directory or repository, nor
deletes; one that takes a value is listed only when that value is inert (a count, a pattern, a
glob, a format name, a test-name expression). A few values and operands are checked rather than
trusted (``Spec.checks``, ``Spec.operands``): sed scripts, make's ``VAR=value``, git's write forms of
``config``, merge strategies, reporter and formatter names.

Pure functions; no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

Style = Literal["gnu", "letters", "words", "go", "tsc"]
ValueCheck = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class Line:
    """What a scan saw: option names (short ones letter by letter), operands, and whether ``--`` came."""

    options: frozenset[str]
    operands: tuple[str, ...]
    dashdash: bool


OperandCheck = Callable[[Line], Iterable[str]]


@dataclass(frozen=True, slots=True)
class Spec:
    """The harmless options of one program or subcommand, and how its words are read.

    ``style``: ``gnu`` reads ``-abc`` as ``-a -b -c`` (where a letter takes a value, the rest of the
    word is that value: ``-n5``) and ``--name=value``; ``letters`` gives every letter of ``-abc`` its
    own meaning, only the last one may take the next word (yargs, mri, nopt: ``jest -tc x`` is
    ``-t -c x``); ``words`` takes each option word whole (find, unknown programs); ``go`` also treats
    ``--name`` as ``-name``; ``tsc`` does that and ignores case.
    """

    flags: frozenset[str] = frozenset()  # take no value (an attached ``=value`` is accepted)
    valued: frozenset[str] = frozenset()  # take an inert value, attached or as the next word
    attached: frozenset[str] = frozenset()  # short options whose optional value is attached only (-U5, -j4)
    skipped: frozenset[str] = frozenset()  # not harmless, but known to take a value: parsing stays in step
    checks: Mapping[str, ValueCheck] = field(default_factory=dict)  # take a value that is covered when it passes
    subcommands: Mapping[str, Spec] | None = None  # chosen by the first operand
    strict: bool = False  # an unknown subcommand is itself not covered
    operands: OperandCheck | None = None  # the operands (and ``--``) no grant covers
    after_dashdash: Spec | None = None  # how words after ``--`` are read (default: operands)
    style: Style = "gnu"
    numeric: bool = False  # ``-5`` is a count (head, grep, git log)
    greedy: bool = False  # a value word is taken even when it starts with ``-`` (find -size -10k)
    trailing: bool = False  # words after the first operand belong to the program run (go run)


def _key(style: Style, name: str) -> str:
    if style in ("go", "tsc"):
        name = "-" + name.lstrip("-")
    return name.lower() if style == "tsc" else name


def spec(
    flags: str = "",
    valued: str = "",
    *,
    attached: str = "",
    skipped: str = "",
    checks: Mapping[str, ValueCheck] | None = None,
    subcommands: Mapping[str, Spec] | None = None,
    strict: bool = False,
    operands: OperandCheck | None = None,
    after_dashdash: Spec | None = None,
    style: Style = "gnu",
    numeric: bool = False,
    greedy: bool = False,
    trailing: bool = False,
) -> Spec:
    """A spec from space-separated option lists; ``--help`` and ``--version`` are always harmless."""

    def keys(text: str) -> frozenset[str]:
        names = text.split()
        return frozenset(_key(style, name) for name in names) if style in ("go", "tsc") else frozenset(names)

    return Spec(
        flags=keys(flags + " --help --version"),
        valued=keys(valued),
        attached=keys(attached),
        skipped=keys(skipped),
        checks={_key(style, name): check for name, check in (checks or {}).items()},
        subcommands=subcommands,
        strict=strict,
        operands=operands,
        after_dashdash=after_dashdash,
        style=style,
        numeric=numeric,
        greedy=greedy,
        trailing=trailing,
    )


def with_kebab(text: str) -> str:
    """``--testNamePattern`` plus its ``--test-name-pattern`` spelling (yargs and cac accept both)."""
    kebab = (re.sub(r"(?<=[a-z])([A-Z])", lambda m: "-" + m[1].lower(), name) for name in text.split())
    return f"{text} {' '.join(kebab)}"


UNKNOWN = Spec(style="words")  # no harmless options: every option word is returned as written

_NEGATIVE_NUMBER = re.compile(r"-\d+(?:\.\d+)?")


def _value_like(word: str) -> bool:
    """Whether a word after a value-taking option can be its value.

    Some parsers (yargs, clap's optional values) take a following ``-x`` as the next option, so it
    is checked as one; negative numbers and ``-`` are values everywhere.
    """
    return not word.startswith("-") or word == "-" or _NEGATIVE_NUMBER.fullmatch(word) is not None


def scan(spec: Spec, args: Sequence[str], bad: list[str]) -> None:
    """Append to ``bad`` the words of ``args`` that ``spec`` does not cover."""
    options: set[str] = set()
    operands: list[str] = []
    dashdash = False
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word == "--" and spec.style != "tsc":  # tsc knows no --: it is an unknown option there
            if spec.subcommands is not None:  # before a subcommand it ends nothing worth trusting
                continue
            dashdash = True
            if spec.after_dashdash is not None:
                scan(spec.after_dashdash, args[index:], bad)
            else:
                operands.extend(args[index:])
            break
        if len(word) > 1 and word.startswith("-"):
            index = _option(spec, word, args, index, options, bad)
            continue
        if spec.subcommands is not None:
            if word.startswith("+"):  # cargo +nightly build
                continue
            sub = spec.subcommands.get(word)
            if sub is None and spec.strict:
                bad.append(word)
            scan(UNKNOWN if sub is None else sub, args[index:], bad)
            return
        operands.append(word)
        if spec.trailing:
            operands.extend(args[index:])
            break
    if spec.operands is not None:
        bad.extend(spec.operands(Line(frozenset(options), tuple(operands), dashdash)))


def _option(spec: Spec, word: str, args: Sequence[str], index: int, options: set[str], bad: list[str]) -> int:
    """Check one option word (a short cluster letter by letter); returns the index after its value."""
    if spec.style not in ("gnu", "letters") or word.startswith("--"):
        name, equals, value = word.partition("=")
        key = _key(spec.style, name)
        options.add(key)
        return _option_value(spec, key, name, value if equals else None, word, args, index, bad)
    if spec.numeric and word[1:].isdigit():
        return index
    for position in range(1, len(word)):
        key = "-" + word[position]
        options.add(key)
        if key in spec.flags:
            continue
        if key in spec.attached:
            return index
        if spec.style == "letters":
            if position == len(word) - 1:
                return _option_value(spec, key, key, None, word, args, index, bad)
            if key not in spec.valued:  # unknown, or checked: its value would not be what is checked
                bad.append(key)
                return index
            continue  # yargs, mri and nopt give a value-taking letter inside a word no value
        return _option_value(spec, key, key, word[position + 1 :] or None, word, args, index, bad)
    return index


def _option_value(
    spec: Spec, key: str, name: str, attached: str | None, word: str, args: Sequence[str], index: int, bad: list[str]
) -> int:
    """Judge option ``key`` with its attached value, or take its value from the next word when it takes one.

    A flag with a check takes an optional value, attached only, which is checked (``--rebase=…``).
    """
    check = spec.checks.get(key)
    if key in spec.flags:
        if check is not None and attached is not None and not check(attached):
            bad.append(word)
        return index
    if key not in spec.valued and key not in spec.skipped and check is None:
        bad.append(name)
        return index
    value, shown = attached, word
    if value is None and index < len(args) and (check is not None or spec.greedy or _value_like(args[index])):
        value, shown = args[index], args[index]  # a checked value is taken whatever it looks like, then judged
        index += 1
    if key in spec.skipped:
        bad.append(name)
    elif check is not None and value is not None and not check(value):
        bad.append(shown)
    return index

