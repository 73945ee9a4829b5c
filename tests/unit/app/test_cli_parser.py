"""The command line's flags: global ones are accepted before the command and after it."""

from __future__ import annotations

import pytest

from acp_hermes.app.cli import build_parser


@pytest.mark.parametrize(
    ("argv", "level"),
    [
        (["demo", "--log-level", "debug"], "DEBUG"),
        (["--log-level", "info", "demo"], "INFO"),
        (["doctor", "--log-level", "WARNING", "--repair"], "WARNING"),
        (["serve", "--log-level", "error"], "ERROR"),
        (["demo"], None),
    ],
)
def test_log_level_before_or_after_the_command(argv: list[str], level: str | None) -> None:
    assert build_parser().parse_args(argv).log_level == level


def test_an_unknown_level_is_refused() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["demo", "--log-level", "loud"])
