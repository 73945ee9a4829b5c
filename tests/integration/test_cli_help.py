"""`acp-hermes --help` names every editor the package summary names."""

from __future__ import annotations

from pathlib import Path

from tests.integration.test_cli import run_cli


def test_help_names_every_editor(tmp_path: Path) -> None:
    shown = run_cli("--help", home=tmp_path / "home")
    assert shown.returncode == 0
    flat = " ".join(shown.stdout.split())  # argparse wraps the description
    assert "editors (Zed, JetBrains, Neovim, Emacs, Toad, VS Code)" in flat
