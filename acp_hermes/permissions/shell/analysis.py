"""The front door of shell knowledge: one command line, analysed once for all the permission path asks.

``analyse(line, where)`` gives the line's ``CommandAnalysis``: its risk (``risk``: normal, dangerous or
catastrophic, with what it writes, reaches and hides), its grant keys (``grant``: what "always" would
remember, or why nothing may), and whether it provably changes no file (``read_only``; its negation
``writes_files`` is what the checkpoint layer asks). Every text — the line and each shell payload in
it — is parsed once for all three, and each verdict is worked out on first use and kept: the gate
carries the analysis in the command's request, the policy reads the risk and the keys, the
checkpoint layer the read-only verdict, and nothing parses the line again.
"""

from __future__ import annotations

from pathlib import Path

from acp_hermes.permissions.shell.keys import GrantKeys, grant_keys
from acp_hermes.permissions.shell.parse import Lines
from acp_hermes.permissions.shell.rating import CommandRisk
from acp_hermes.permissions.shell.read_only import only_reads, risk_agrees
from acp_hermes.permissions.shell.risk import assess_command
from acp_hermes_memory.values import value


@value
class Where:
    """Where a line runs: the home ``~`` stands for, the workspace roots, the directory relative paths
    land in (the first root when None), and the agent's own home (its secrets are read only when asked)."""

    home: Path
    roots: tuple[Path, ...]
    cwd: Path | None = None
    hermes_home: Path | None = None


class CommandAnalysis:
    """What one command line runs and does (see the module's docstring); satisfies
    ``tools.contracts.CommandFacts``."""

    __slots__ = ("_grant", "_lines", "_read_only", "_risk", "line", "where")

    def __init__(self, line: str, where: Where) -> None:
        self.line = line
        self.where = where
        self._lines = Lines()  # every rule reads the same parses
        self._risk: CommandRisk | None = None
        self._grant: GrantKeys | None = None
        self._read_only: bool | None = None

    @property
    def risk(self) -> CommandRisk:
        if self._risk is None:
            where = self.where
            self._risk = assess_command(self.line, home=where.home, roots=where.roots, cwd=where.cwd,
                                        hermes_home=where.hermes_home, lines=self._lines)
        return self._risk

    @property
    def grant(self) -> GrantKeys:
        if self._grant is None:
            self._grant = grant_keys(self.line, self._lines)
        return self._grant

    @property
    def read_only(self) -> bool:
        """The line provably changes no file: no checkpoint is needed before it."""
        if self._read_only is None:
            self._read_only = only_reads(self.line, self._lines) and risk_agrees(self.risk)
        return self._read_only

    @property
    def writes_files(self) -> bool:
        return not self.read_only

    def __repr__(self) -> str:
        return f"CommandAnalysis({self.line!r}, {self.where!r})"


def analyse(line: str, where: Where) -> CommandAnalysis:
    """The analysis of ``line`` run ``where`` says; its verdicts are worked out as they are first read."""
    return CommandAnalysis(line, where)
