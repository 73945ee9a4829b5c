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

_IN_GIT = "inside a .git directory (hooks run code)"
_SHELL_PROFILE = "shell profile"
_GIT_CONFIGURATION = "git configuration (it can make git run programs)"
_SYSTEM_CONFIGURATION = "system configuration"
# Reasons of paths that are sensitive because they run code or configure the system, not because
# they hold secrets: a command may read them like any file.
_NOT_SECRET = frozenset({_IN_GIT, _SHELL_PROFILE, _GIT_CONFIGURATION, _SYSTEM_CONFIGURATION})
_VCS_AND_SSH_DIRS = {".git": _IN_GIT, ".ssh": "inside an SSH directory"}
_HOME_CREDENTIAL_DIRS = {
    ".gnupg": "the GnuPG keyring",
    ".aws": "AWS credentials",
    ".kube": "Kubernetes credentials",
    ".docker": "Docker credentials",
    ".azure": "Azure credentials",
    # the rest of what the sandbox hides (tools.sandbox.HIDDEN_IN_HOME)
    ".config/gcloud": "Google Cloud credentials",
    ".config/gh": "GitHub CLI credentials",
    ".config/hub": "GitHub credentials (hub)",
    ".password-store": "the password store",
    ".local/share/keyrings": "the desktop keyring",
    ".gem/credentials": "RubyGems credentials",
    ".cargo/credentials": "Cargo credentials",
    ".cargo/credentials.toml": "Cargo credentials",
    ".terraform.d/credentials.tfrc.json": "Terraform credentials",
}
_CREDENTIAL_FILES = frozenset({".netrc", ".npmrc", ".pypirc", ".pgpass", ".git-credentials"})
_PRIVATE_KEY_NAMES = frozenset({"id_rsa", "id_ed25519", "id_ecdsa", "id_dsa", "id_ed25519_sk", "id_ecdsa_sk"})
_PRIVATE_KEY_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk")
_ENV_TEMPLATES = frozenset({".env.example", ".env.sample", ".env.template", ".env.dist"})


def sensitive_path_reason(path: Path, home: Path, *, hermes_home: Path | None = None) -> str | None:
    """Why reading or writing ``path`` (absolute) always needs the user's approval, or None.

    Covers any ``.git`` or ``.ssh`` directory, credential directories and files in ``home`` (``.aws``,
    ``.kube``, ``.docker``, ``.gnupg``, ``.azure``, ``.config/gh``, the rest the sandbox hides; a
    project's own ``.docker/`` is fine),
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
        return _SHELL_PROFILE
    if path in (home / ".gitconfig", home / ".config" / "git" / "config"):
        return _GIT_CONFIGURATION
    if parts[:2] == ["/", "etc"]:
        return _SYSTEM_CONFIGURATION
    return None


def secret_path_reason(path: Path, home: Path, *, hermes_home: Path | None = None) -> str | None:
    """Why ``path`` holds secrets (keys, credentials, environment files, the agent's own home), or
    None: ``sensitive_path_reason`` without the paths that only run code, which commands read freely."""
    reason = sensitive_path_reason(path, home, hermes_home=hermes_home)
    return None if reason in _NOT_SECRET else reason
