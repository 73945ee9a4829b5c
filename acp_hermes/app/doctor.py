"""``acp-hermes doctor``: the effective configuration, where files live, and what is wrong."""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
from pathlib import Path

from acp_hermes import __version__
from acp_hermes.app.setup import mask
from acp_hermes.config import (
    ENV_API_KEY,
    ENV_BASE_URL,
    ENV_HOME,
    ENV_MODEL,
    ConfigError,
    Settings,
    load_settings,
    paths_from_env,
)
from memory.grants import GrantStore


def _fts5_status() -> str:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram')")
        return f"SQLite {sqlite3.sqlite_version} with FTS5 and trigram"
    except sqlite3.OperationalError as exc:
        return f"SQLite {sqlite3.sqlite_version}: full-text search degraded ({exc})"
    finally:
        conn.close()


def _grants(path: Path) -> list[str]:
    lines = []
    for project, grants in GrantStore(path).all_projects().items():
        lines += [f"{project}: always allow `{key}`" for key in sorted(grants.allow)]
        lines += [f"{project}: always reject `{key}`" for key in sorted(grants.reject)]
    return lines or ["(none)"]


def _session_database(path: Path, repair_it: bool, problems: list[str]) -> None:
    """Check the SessionDB; with ``repair_it``, rebuild a damaged one from what can be read."""
    from memory.repair import check_health, repair

    health = check_health(path)
    state = ("healthy" if health.detail == "ok" else health.detail) if health.ok else f"DAMAGED: {health.detail}"
    print(f"  session database: {state} ({path})")
    if health.ok:
        if repair_it:
            print("  nothing to repair")
        return
    if not repair_it:
        problems.append(f"the session database {path} is damaged: run `acp-hermes doctor --repair`")
        return
    report = repair(path)
    print(f"  repaired: the damaged file is kept as {report.damaged_copy}")
    print(f"  recovered {report.sessions:,} session(s) and {report.messages:,} message(s); "
          f"{report.unreadable_rows:,} row(s) could not be read")


def _sandbox_status(settings: Settings | None) -> str:
    if settings is not None and settings.sandbox == "off":
        return "command sandbox: turned off in the configuration (sandbox: off)"
    from tools.sandbox import detect

    status = detect()
    network = "network allowed" if settings is not None and settings.sandbox_network else "no network"
    if status.available:
        return f"command sandbox: {status.detail}; workspace and $TMPDIR writable, credentials hidden, {network}"
    return f"command sandbox: unavailable ({status.detail}); every command asks as its mode requires"


def run_doctor(*, repair: bool = False) -> int:
    paths = paths_from_env()
    problems: list[str] = []
    print(f"acp-hermes {__version__} (Python {sys.version.split()[0]})\n")
    print("Files")
    for label, path in (
        ("HERMES_HOME", paths.home),
        ("config", paths.config_file),
        ("permissions", paths.permissions_file),
        ("session database", paths.state_db),
        ("logs", paths.logs),
        ("memories", paths.memories),
        ("SOUL.md", paths.soul),
    ):
        print(f"  {label:<17} {path}{'' if path.exists() else '  (not created yet)'}")
    if paths.home.exists() and not os.access(paths.home, os.W_OK):
        problems.append(f"{paths.home} is not writable")

    print("\nConfiguration (environment > config file > defaults)")
    try:
        settings = load_settings(paths=paths)
    except ConfigError as exc:
        problems.append(f"invalid configuration: {exc}")
        settings = None
    if settings is not None:
        for name, value in settings.model_dump(mode="json").items():
            if name == "api_key":
                value = mask(settings.api_key.get_secret_value()) if settings.api_key else "(not set)"
            print(f"  {name:<23} {human(value)}")
        if not settings.has_api_key:
            problems.append(f"no API key: set {ENV_API_KEY} or run `acp-hermes setup`")
    for env in (ENV_HOME, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL):
        state = "set" if os.environ.get(env) else "not set"
        print(f"  env {env:<19} {state}")

    print("\nPermission grants")
    for line in _grants(paths.permissions_file):
        print(f"  {line}")

    print("\nEnvironment")
    print(f"  {_fts5_status()}")
    print(f"  {_sandbox_status(settings)}")
    _session_database(paths.state_db, repair, problems)
    rg = shutil.which("rg")
    print(f"  ripgrep: {rg or 'not found (search_files uses the built-in Python search)'}")
    from acp_hermes.core.system_prompt import find_context_files

    files = find_context_files(Path.cwd())
    print(f"  context files for {Path.cwd()}: {', '.join(f.label for f in files) or '(none)'}")

    print("\nProblems" if problems else "\nNo problems found.")
    for problem in problems:
        print(f"  - {problem}")
    return 1 if problems else 0


def human(value: object) -> str:
    """A configuration value as a person writes it in config.yaml, not as Python prints it."""
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(human(item) for item in value) if value else "(none)"
    if isinstance(value, dict):
        return ", ".join(f"{key}: {human(item)}" for key, item in value.items()) if value else "(none)"
    return str(value)
