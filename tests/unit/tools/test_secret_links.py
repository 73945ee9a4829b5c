"""Hard links to secrets: found by inode among the known secret locations, and only there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_hermes_tools.sandbox import HIDDEN_IN_HOME
from acp_hermes_tools.secret_links import SecretLinks
from acp_hermes_tools.sensitive_paths import sensitive_path_reason

pytestmark = pytest.mark.anyio


def secret_file(home: Path, relative: str) -> Path:
    """A file at the hidden location ``relative`` (inside it when it is a directory's name)."""
    target = home / relative
    if not Path(relative).suffix and relative not in (".netrc", ".pgpass", ".git-credentials", ".npmrc", ".pypirc",
                                                      ".gem/credentials", ".cargo/credentials"):
        target = target / "token"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"secret of {relative}\n")
    return target


@pytest.mark.parametrize("relative", HIDDEN_IN_HOME)
def test_every_hidden_location_is_sensitive_by_name(relative: str) -> None:
    home = Path("/home/dev")
    assert sensitive_path_reason(home / relative / "x", home) or sensitive_path_reason(home / relative, home)


@pytest.mark.parametrize("relative", HIDDEN_IN_HOME)
def test_a_hard_link_to_any_hidden_credential_is_found(tmp_path: Path, relative: str) -> None:
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    workspace.mkdir()
    secret = secret_file(home, relative)
    os.link(secret, workspace / "innocent.txt")
    links = SecretLinks(home, tmp_path / "hermes")
    assert links.secret_behind(workspace / "innocent.txt") == secret
    assert sensitive_path_reason(secret, home, hermes_home=tmp_path / "hermes")


async def test_keys_in_home_and_hermes_home_files_count_but_code_and_other_links_do_not(tmp_path: Path) -> None:
    home, hermes, workspace = tmp_path / "home", tmp_path / "hermes", tmp_path / "workspace"
    for directory in (home, hermes / "memories", hermes / "agent" / ".venv", workspace):
        directory.mkdir(parents=True)
    (home / "deploy.pem").write_text("key\n")
    (hermes / "memories" / "MEMORY.md").write_text("memory\n")
    (hermes / "agent" / ".venv" / "lib.py").write_text("code\n")  # a uv-style hard-linked install
    (home / "notes.txt").write_text("not secret\n")
    for source, name in ((home / "deploy.pem", "a"), (hermes / "memories" / "MEMORY.md", "b"),
                         (hermes / "agent" / ".venv" / "lib.py", "c"), (home / "notes.txt", "d")):
        os.link(source, workspace / name)
    (workspace / "single").write_text("one link\n")
    links = SecretLinks(home, hermes)
    assert links.secret_behind(workspace / "single") is None
    assert links._index is None  # a file with one link never builds the index
    found = await links.secrets_behind([workspace / name for name in ("a", "b", "c", "d", "single", "missing")])
    assert found == {workspace / "a": home / "deploy.pem", workspace / "b": hermes / "memories" / "MEMORY.md"}
    assert await links.secrets_behind([home / "deploy.pem"]) == {}  # the secret itself: asked for by name
