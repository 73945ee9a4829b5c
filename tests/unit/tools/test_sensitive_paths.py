"""Which paths always need the user's approval to write: table-driven over real paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_hermes_tools.sensitive_paths import sensitive_path_reason

HOME = Path("/home/dev")
SENSITIVE = [
    "/work/proj/.git/config",
    "/work/proj/.git/hooks/pre-commit",
    "/work/proj/sub/.git",
    "/home/dev/.ssh/config",
    "/work/proj/.ssh/id_rsa.pub",
    "/home/dev/.gnupg/pubring.kbx",
    "/home/dev/.aws/credentials",
    "/home/dev/.kube/config",
    "/home/dev/.docker/config.json",
    "/work/proj/.env",
    "/work/proj/.env.local",
    "/work/proj/.env.production",
    "/work/proj/.envrc",
    "/work/proj/config/.ENV",
    "/work/proj/id_rsa",
    "/work/proj/keys/id_ed25519",
    "/work/proj/certs/server.pem",
    "/work/proj/certs/server.key",
    "/work/proj/certs/client.p12",
    "/work/proj/certs/client.pfx",
    "/home/dev/.netrc",
    "/work/proj/.npmrc",
    "/home/dev/.pypirc",
    "/home/dev/.pgpass",
    "/home/dev/.git-credentials",
    "/srv/authorized_keys",
    "/home/dev/.bashrc",
    "/home/dev/.zshrc",
    "/home/dev/.profile",
    "/home/dev/.bash_profile",
    "/home/dev/.config/fish/config.fish",
    "/etc/hosts",
    "/home/dev/.hermes/.env",
    "/home/dev/.hermes/config.yaml",
    "/home/dev/.hermes/acp-hermes/permissions.yaml",
    "/home/dev/.hermes/memories/MEMORY.md",
]
NOT_SENSITIVE = [
    "/work/proj/src/app.py",
    "/work/proj/.gitignore",
    "/work/proj/.github/workflows/ci.yml",
    "/work/proj/.env.example",
    "/work/proj/.env.sample",
    "/work/proj/.environment.md",
    "/work/proj/.docker/Dockerfile",
    "/work/proj/aws/notes.md",
    "/work/proj/.bashrc",
    "/work/proj/docs/keys.md",
    "/work/proj/README.md",
    "/home/dev/notes.txt",
]


@pytest.mark.parametrize("path", SENSITIVE)
def test_sensitive_paths(path: str) -> None:
    assert sensitive_path_reason(Path(path), HOME, hermes_home=HOME / ".hermes")


@pytest.mark.parametrize("path", NOT_SENSITIVE)
def test_ordinary_paths(path: str) -> None:
    assert sensitive_path_reason(Path(path), HOME, hermes_home=HOME / ".hermes") is None


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/p/.git/config", "inside a .git directory (hooks run code)"),
        ("/p/.env", "environment file (may hold secrets)"),
        ("/p/id_rsa", "private key or certificate"),
        ("/home/dev/.zshrc", "shell profile"),
    ],
)
def test_sensitive_path_reasons_say_why(path: str, reason: str) -> None:
    assert sensitive_path_reason(Path(path), HOME) == reason


def test_hermes_env_is_sensitive_without_knowing_hermes_home() -> None:
    assert sensitive_path_reason(HOME / ".hermes" / ".env", HOME) == "environment file (may hold secrets)"
