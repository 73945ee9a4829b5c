"""What a family of programs tells the analysis: the shape every module in ``programs`` fills in.

A family holds, per program name, its risk check (what it deletes, writes, runs or reaches), its
grant table (which options a remembered grant may cover), how its grant key is formed from its
subcommands, when it only reads, and which of its subcommands use the network. ``programs``
gathers every family's entries into the tables the engines read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from acp_hermes.permissions.shell.arguments import has_flag, names, subcommand
from acp_hermes.permissions.shell.options import Spec
from acp_hermes.permissions.shell.rating import Call

RiskCheck = Callable[[Call], None]
# When a program only reads: with any words (``ANY``), with options its grant table lists as harmless
# (``OPTIONS``), or as a rule of its own says given its arguments.
ANY: Final = "any"
OPTIONS: Final = "options"
ReadRule = Literal["any", "options"] | Callable[[list[str]], bool]
NetworkUse = Callable[[Sequence[str]], bool]  # given the program's arguments


@dataclass(frozen=True)
class KeyShape:
    """How a program's grant key is formed from its first operands."""

    depth: int = 1  # operands that name the action (aws s3 ls: 2)
    nested: frozenset[str] = frozenset()  # subcommands followed by one more name (npm run build)
    runs: frozenset[str] = frozenset()  # subcommands that run another program (uv run pytest)
    options: frozenset[str] = frozenset()  # options that take a separate value
    targets: bool = False  # make-like: every operand is a target of its own


def key_shape(depth: int = 1, nested: str = "", runs: str = "", options: str = "", targets: bool = False) -> KeyShape:
    return KeyShape(depth, names(nested), names(runs), names(options), targets)


SIMPLE = key_shape()  # the program and its first operand (``pip install``)


def network_subcommands(subcommands: str, value_options: frozenset[str] = frozenset(),
                        offline: tuple[str, ...] = ()) -> NetworkUse:
    """A program that reaches the network in these subcommands, unless given one of the ``offline`` flags."""
    wanted = names(subcommands)

    def uses(args: Sequence[str]) -> bool:
        sub, rest = subcommand(args, value_options)
        if offline and has_flag(rest, "", *offline):
            return False
        return sub in wanted

    return uses


@dataclass(frozen=True)
class Family:
    """What one family of programs tells the analysis, per program name."""

    checks: Mapping[str, RiskCheck] = field(default_factory=dict)
    options: Mapping[str, Spec] = field(default_factory=dict)  # the options a remembered grant may cover
    prepare: Mapping[str, Callable[[Sequence[str]], list[str]]] = field(default_factory=dict)  # words, as scanned
    shapes: Mapping[str, KeyShape] = field(default_factory=dict)
    reads: Mapping[str, ReadRule] = field(default_factory=dict)
    network: Mapping[str, NetworkUse] = field(default_factory=dict)
    network_programs: frozenset[str] = frozenset()  # programs that need the network whatever they are told
    # Invocations no grant may cover although their options are harmless (an awk program that runs commands).
    never_granted: Mapping[str, Callable[[list[str]], bool]] = field(default_factory=dict)
