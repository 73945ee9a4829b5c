"""``adapter.launchers``: the script an editor's terminal runs in place of the wrapped command line,
and the command line it shows beside it (real files, real /bin/sh)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from acp_hermes.adapter.launchers import SHELL, LaunchScripts, shown


def run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, timeout=30, check=False)


def test_a_script_runs_exactly_its_command_line_and_never_its_arguments(tmp_path: Path) -> None:
    scripts = LaunchScripts(tmp_path / "home" / "terminals")
    odd = os.fsdecode(b"caf\xe9 \xff")  # a name that is not UTF-8
    argv = [sys.executable, "-c", "import sys; print(repr(sys.argv[1:]))", "two words", "it's", "$HOME", "a\nb", odd]
    script = scripts.write(argv, sandboxed=True)
    done = run(SHELL, str(script), "touch pwned; echo shown-only", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode("utf-8", "surrogateescape").strip() == repr(argv[3:])
    assert not (tmp_path / "pwned").exists()  # what is shown beside it is never run


def test_scripts_are_private_and_say_whether_they_are_sandboxed(tmp_path: Path) -> None:
    scripts = LaunchScripts(tmp_path / "home" / "terminals")
    confined, plain = scripts.write(["true"], sandboxed=True), scripts.write(["true"], sandboxed=False)
    assert confined.name.startswith("sandboxed-") and plain.name.startswith("run-") and confined != plain
    assert stat.S_IMODE(scripts.directory.stat().st_mode) == 0o700
    assert {stat.S_IMODE(path.stat().st_mode) for path in (confined, plain)} == {0o600}
    LaunchScripts.remove(confined)
    LaunchScripts.remove(confined)  # already gone: nothing to do
    assert sorted(scripts.directory.iterdir()) == [plain]


@pytest.mark.parametrize("command", ["pytest -q", "make test V=1", "ls -la src/app.py", "git log --oneline -5"])
def test_plain_words_are_shown_as_written(command: str) -> None:
    assert shown(command) == command


HOSTILE = ["cd a && touch pwned", "true; touch pwned", "x $(touch pwned)", "x `touch pwned`", "x\ntouch pwned",
           "x | touch pwned", "'; touch pwned; '", "x > pwned", "touch pwned &", "x # comment", "(touch pwned)",
           "é; touch pwned"]


@pytest.mark.parametrize("command", HOSTILE)
def test_anything_else_is_shown_quoted_so_an_unquoting_editor_cannot_run_it(tmp_path: Path, command: str) -> None:
    """An editor that joins the arguments into a shell line unquoted (Zed did) passes words, never code."""
    assert shown(command) != command
    done = run(SHELL, "-c", f"printf '<%s>' {shown(command)}", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.decode() == f"<{command}>"
    assert list(tmp_path.iterdir()) == []
