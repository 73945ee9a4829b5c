"""Which file paths hold secrets or run code: reading or writing them always needs the user's approval.

Pure functions of their arguments (no I/O). The permission policy asks by them; the search tool
leaves such files out of what it reports.
"""

from __future__ import annotations

from pathlib import Path

PROFILE_NAMES = frozenset({
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
    ".zshrc", ".zprofile", ".zshenv", ".zlogin", ".zlogout",
})

_VCS_AND_SSH_DIRS = {".git": "inside a .git directory (hooks run code)", ".ssh": "inside an SSH directory"}
_HOME_CREDENTIAL_DIRS = {
    ".gnupg": "the GnuPG keyring",
    ".aws": "AWS credentials",
    ".kube": "Kubernetes credentials",
    ".docker": "Docker credentials",
    ".azure": "Azure credentials",
}
_CREDENTIAL_FILES = frozenset({".netrc", ".npmrc", ".pypirc", ".pgpass", ".git-credentials"})
_PRIVATE_KEY_NAMES = frozenset({"id_rsa", "id_ed25519", "id_ecdsa", "id_dsa", "id_ed25519_sk", "id_ecdsa_sk"})
_PRIVATE_KEY_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk")
_ENV_TEMPLATES = frozenset({".env.example", ".env.sample", ".env.template", ".env.dist"})


def sensitive_path_reason(path: Path, home: Path, *, hermes_home: Path | None = None) -> str | None:
    """Why reading or writing ``path`` (absolute) always needs the user's approval, or None.

    Covers any ``.git`` or ``.ssh`` directory, credential directories in ``home`` (``.aws``,
    ``.kube``, ``.docker``, ``.gnupg``, ``.azure``; a project's own ``.docker/`` is fine),
    credential files and private keys, environment files (``.env``, ``.env.*`` and direnv's
    ``.envrc``, but not committed templates like ``.env.example``), shell profiles and the git
    configuration in ``home``,
    ``/etc`` and everything under ``hermes_home`` (the agent's configuration, memory, secrets).
    """
    parts = [part.lower() for part in path.parts]
    name = parts[-1] if parts else ""
    for part in parts:
        if part in _VCS_AND_SSH_DIRS:
            return _VCS_AND_SSH_DIRS[part]
    for directory, reason in _HOME_CREDENTIAL_DIRS.items():
        if path == home / directory or home / directory in path.parents:
            return reason
    if hermes_home is not None and (path == hermes_home or hermes_home in path.parents):
        return "the agent's own configuration and memory ($HERMES_HOME)"
    if name in (".env", ".envrc") or (name.startswith(".env.") and name not in _ENV_TEMPLATES):
        return "environment file (may hold secrets)"
    if name in _PRIVATE_KEY_NAMES or name.endswith(_PRIVATE_KEY_SUFFIXES):
        return "private key or certificate"
    if name in _CREDENTIAL_FILES:
        return "credentials file"
    if name == "authorized_keys":
        return "SSH authorized keys"
    if (path.parent == home and name in PROFILE_NAMES) or path == home / ".config" / "fish" / "config.fish":
        return "shell profile"
    if path in (home / ".gitconfig", home / ".config" / "git" / "config"):
        return "git configuration (it can make git run programs)"
    if parts[:2] == ["/", "etc"]:
        return "system configuration"
    return None
