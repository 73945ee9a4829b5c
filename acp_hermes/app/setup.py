"""``acp-hermes setup``: ask for an API key, base URL and model; write them to the config file.

Run by hand or by an editor's terminal-auth flow. The file holds a secret, so it is written
atomically with 0600 permissions; other keys already in it are kept.
"""

from __future__ import annotations

import getpass
import sys
from typing import Any

from pydantic import ValidationError

from acp_hermes.config import DEFAULT_MODEL, ConfigError, Settings, paths_from_env, read_config_file
from memory.fs import atomic_write_text


def mask(secret: str) -> str:
    """Enough of a key to recognise it, not enough to use it."""
    secret = secret.strip()
    if len(secret) <= 12:
        return "*" * len(secret)
    return f"{secret[:7]}…{secret[-4:]}"


def _ask(question: str, *, secret: bool = False) -> str:
    if secret and sys.stdin.isatty():
        return getpass.getpass(question).strip()
    print(question, end="", flush=True)
    line = sys.stdin.readline()
    return line.strip()


def run_setup() -> int:
    paths = paths_from_env()
    try:
        current: dict[str, Any] = read_config_file(paths.config_file)
    except ConfigError as exc:
        print(f"Cannot update the configuration: {exc}", file=sys.stderr)
        return 1
    print(f"acp-hermes setup — writes {paths.config_file}")
    key_now = current.get("api_key")
    keep = f" [{mask(str(key_now))}, Enter keeps it]" if key_now else ""
    key = _ask(f"Anthropic API key{keep}: ", secret=True) or key_now
    if not key:
        print("No API key given; nothing written.", file=sys.stderr)
        return 1
    url_now = current.get("base_url") or ""
    base_url = _ask(f"Base URL [{url_now or 'https://api.anthropic.com'}]: ") or url_now
    model_now = current.get("model") or DEFAULT_MODEL
    model = _ask(f"Model [{model_now}]: ") or model_now
    updated = {**current, "api_key": key, "model": model}
    if base_url:
        updated["base_url"] = base_url
    else:
        updated.pop("base_url", None)
    try:
        Settings.model_validate(updated)
    except ValidationError as exc:
        print(f"Not saved: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}", file=sys.stderr)
        return 1
    import yaml

    atomic_write_text(paths.config_file, yaml.safe_dump(updated, sort_keys=False), mode=0o600)
    print(f"Saved to {paths.config_file} (permissions 0600). Model: {model}.")
    return 0
