"""``acp-hermes doctor``: the effective configuration, where files live, and what is wrong."""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
from collections import Counter
from pathlib import Path

from acp_hermes import __version__
from acp_hermes.app.progress import progress
from acp_hermes.app.setup import mask
from acp_hermes.config import (
    ENV_API_KEY,
    ENV_BASE_URL,
    ENV_HOME,
    ENV_MODEL,
    ENV_TRUST,
    ConfigError,
    Paths,
    Settings,
    home_problem,
    load_settings,
    names_a_variable,
    paths_from_env,
    read_config_file,
    trust_from_env,
)
from acp_hermes.permissions.modes import Mode
from acp_hermes_memory.grants import GrantStore
from acp_hermes_memory.text import counted


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
    try:
        projects = GrantStore(path).all_projects()
    except OSError as exc:
        return [f"cannot be read: {exc.strerror or exc}"]
    for project, grants in projects.items():
        lines += [f"{project}: always allow `{key}`" for key in sorted(grants.allow)]
        lines += [f"{project}: always reject `{key}`" for key in sorted(grants.reject)]
    return lines or ["(none)"]


def _session_database(path: Path, repair_it: bool, problems: list[str]) -> None:
    """Check the SessionDB (every page, then its search index); with ``repair_it``, mend what is damaged."""
    from acp_hermes.app.db_check import integrity, search_indexes

    if not path.exists():
        print(f"  session database: not created yet ({path})")
        if repair_it:
            print("  the session database needs no repair")
        return
    with progress("checking the session database"):
        found = integrity(path)
    if found != "ok":
        print(f"  session database: DAMAGED: {found} ({path})")
        _repair_database(path, repair_it, problems)
        return
    print(f"  session database: healthy, integrity check passed ({path})")
    with progress("checking the search index"):
        indexes = search_indexes(path)
    damaged = [index for index in indexes if index.state == "damaged"]
    for index in indexes:
        detail = f" ({index.detail})" if index.detail else ""
        print(f"  search index, {index.role}: {_INDEX_STATES[index.state]}{detail}")
    if not damaged:
        if repair_it:
            print("  the session database needs no repair")
        return
    if not repair_it:
        problems.append("the search index of the session database is out of step with its messages: "
                        "run `acp-hermes doctor --repair`")
        return
    from acp_hermes.app.db_check import rebuild

    for index in damaged:
        with progress(f"rebuilding the {index.role} index"):
            rebuild(path, index.table)
        print(f"  rebuilt the {index.role} index from the stored messages")


_INDEX_STATES = {
    "ok": "working, in step with the messages",
    "missing": "not built yet (the next session builds it)",
    "unusable": "unusable with this SQLite",
    "damaged": "OUT OF STEP with the messages",
    "busy": "not checked: a server is writing to the database",
}


def _repair_database(path: Path, repair_it: bool, problems: list[str]) -> None:
    if not repair_it:
        problems.append(f"the session database {path} is damaged: run `acp-hermes doctor --repair`")
        return
    from acp_hermes_memory.repair import repair

    with progress("repairing the session database"):
        report = repair(path)
    print(f"  repaired: a fresh session database holds {counted(report.sessions, 'session')} and "
          f"{counted(report.messages, 'message')} recovered from the damaged one, which is kept as "
          f"{report.damaged_copy}")
    if (placeholders := report.placeholder_sessions) > 0:
        print(f"  of those, {counted(placeholders, 'session')} lost {'its' if placeholders == 1 else 'their'} "
              "title and folder: their messages are kept under the title “(recovered messages)”")
    if not report.counted:
        print("  the damaged file's indexes cannot be read either, so how much was lost is unknown")
    elif report.unreadable_rows:
        lost = [counted(count, noun) for count, noun in ((report.lost_sessions, "session"),
                                                          (report.lost_messages, "message")) if count]
        print(f"  lost: {' and '.join(lost)} that the damaged file lists but that cannot be read")
    else:
        print("  nothing lost: every session and message the damaged file lists was recovered")




def _trust(paths: Paths, settings: Settings) -> list[str]:
    """The decision a session opened in the current directory would find, and what the folder carries."""
    from acp_hermes.core.runtime import Runtime
    from acp_hermes.core.trust import describe, open_trust, status_of

    try:
        status = status_of(open_trust(Runtime(settings, paths, trust_everything=trust_from_env()), Path.cwd()))
    except OSError as exc:
        return [f"cannot be read: {exc.strerror or exc}"]
    lines = [f"for {Path.cwd()}:", *describe(status)]
    if settings.trust.ask:
        lines.append("asked before a workspace's files are loaded (trust.ask: yes)")
    else:
        lines.append("every workspace is trusted: trust.ask is no in the config")
    return lines


def _memory_files(paths: Paths, settings: Settings, problems: list[str]) -> None:
    from acp_hermes.app.memory_cli import inspect_memory, memory_store
    from acp_hermes_memory.store import FILE_NAMES

    for item in inspect_memory(memory_store(paths, settings)):
        print(f"  {FILE_NAMES[item.target]:<10} {item.state()}")
        problems.extend(item.warnings())
        if item.error:
            problems.append(f"{item.path} cannot be read: {item.error}")


def _skills(paths: Paths, settings: Settings, problems: list[str]) -> None:
    from acp_hermes.app.skills_cli import broken_skills, skill_store, source_of
    from acp_hermes_memory.skills import SkillError

    cwd = Path.cwd()
    store = skill_store(paths, settings, cwd)
    try:
        statuses = store.statuses()
        skills = [status.info for status in statuses]
        broken = broken_skills(store, skills)
        archived, quarantined = store.archived(), store.quarantined()
    except (OSError, SkillError) as exc:
        problems.append(f"the skills cannot be loaded: {exc}")
        return
    sources = Counter(source_of(info) for info in skills)
    counts = ", ".join(f"{source}: {count}" for source, count in sorted(sources.items()))
    print(f"  {len(skills)} skill{'' if len(skills) == 1 else 's'} for {cwd}{f' ({counts})' if counts else ''}")
    states = Counter(status.state for status in statuses)
    pinned = sum(1 for status in statuses if status.pinned)
    print(f"  by state: active {states['active']}, stale {states['stale']}, archived {len(archived)}, "
          f"quarantined {len(quarantined)}; pinned {pinned}")
    if store.usage.file.read_raw() is None:
        problems.append(f"{store.usage.file.path} is not a JSON object of skill records: skill usage is not "
                        "recorded until it is fixed or removed")
    for item in quarantined:
        print(f"  QUARANTINED: {item.info.qualified_name} ({item.info.path}): {item.reason}")
    for skill in broken:
        if skill.listed:
            print(f"  note: {skill.name} loads, but a write would refuse it: {skill.reason}")
        else:
            print(f"  NOT LOADED: {skill.name}: {skill.reason}")
            problems.append(f"skill {skill.name} is not loaded ({skill.skill_file}): {skill.reason}")


def _memory_provider(paths: Paths, settings: Settings, problems: list[str]) -> None:
    """The external memory provider ``memory.provider`` selects: found, loaded, available."""
    chosen = settings.memory.providers
    if not chosen:
        print("  memory provider: none (the built-in memory only; `acp-hermes memory providers` lists them)")
        return
    from acp_hermes.app.memory_cli import provider_states

    state = next(s for s in provider_states(paths, settings) if s.selected and s.name == chosen[0])
    works = {True: "available", False: "not available", None: "cannot be loaded"}[state.available]
    print(f"  memory provider: {state.name} ({state.source}): {works}{f' — {state.detail}' if state.detail else ''}")
    if not state.available:
        problems.append(f"memory provider {state.name} {works}: sessions run with the built-in memory only")
    if len(chosen) > 1:
        problems.append(f"memory.provider names {len(chosen)} providers; only one external provider is used "
                        f"({chosen[0]})")


def _checkpoints(paths: Paths, settings: Settings, problems: list[str]) -> None:
    """Whether checkpoints can be taken (config, git) and the state of every workspace's store."""
    from acp_hermes.app.checkpoints_cli import git_found, human_size, summaries

    enabled = settings.checkpoints.enabled
    print(f"  {'enabled' if enabled else 'turned off in the configuration (checkpoints.enabled: no)'}")
    git = git_found()
    if git is None:
        print("  git: not found: checkpoints are off")
        if enabled:
            problems.append("git is not on PATH: no checkpoints are taken, so `/rollback` has nothing to restore "
                            "(install git)")
    else:
        print(f"  git {git[1]}: {git[0]}")
    try:
        with progress("checking the checkpoint stores"):
            found = summaries(paths, check=git is not None)  # without git: only how much room they take
    except OSError as exc:
        print(f"  stores: cannot be read ({exc.strerror or exc})")
        problems.append(f"the checkpoint stores in {paths.checkpoints} cannot be read: {exc.strerror or exc}")
        return
    total = sum(summary.size for summary in found)
    print(f"  {len(found)} store{'' if len(found) == 1 else 's'}, {human_size(total)} ({paths.checkpoints})")
    for summary in found:
        workspace = summary.store.workspace
        if summary.problem:
            print(f"  BROKEN: {workspace}: {summary.problem}")
            problems.append(f"the checkpoint store of {workspace} ({summary.store.directory}) is broken: "
                            f"{summary.problem}. `/rollback` cannot restore from it; delete that directory to "
                            "start it afresh")
        if summary.interrupted_restore:
            print(f"  note: a restore in {workspace} was interrupted; acp-hermes finishes it when its next "
                  "session starts")


def _mcp_servers(settings: Settings, problems: list[str]) -> None:
    """The configured MCP servers as sessions will see them (not started: doctor stays quick)."""
    from acp_hermes_tools.mcp.specs import parse_configured

    specs, issues = parse_configured(settings.mcp_servers)
    if not specs and not issues:
        print("  none in the config (editors may pass their own to each session)")
    for spec in specs:
        state = "remote"
        if spec.transport == "stdio":
            found = shutil.which(spec.command) or (Path(spec.command).expanduser().is_file() and spec.command)
            state = f"command found: {found}" if found else "command not found"
            if not found:
                problems.append(f"MCP server {spec.name}: command {spec.command!r} not found")
        print(f"  {spec.name}: {spec.transport}, {spec.target} ({state})")
    for issue in issues:
        print(f"  {issue}")
    problems.extend(issues)


def _editors(problems: list[str]) -> None:
    from acp_hermes.app.editor_check import check_editor_configs

    configs = check_editor_configs()
    if not configs:
        print("  no Zed, JetBrains or Neovim (avante.nvim) configuration found")
    for config in configs:
        where = f"{config.editor} ({config.path})"
        if config.problem:
            print(f"  {where}: {config.problem}")
            problems.append(f"{where}: {config.problem}")
            continue
        if not config.entries:
            print(f"  {where}: no agent server runs acp-hermes")
        for entry in config.entries:
            print(f"  {where}: agent “{entry.name}” runs {entry.command}: {entry.problem or 'found'}")
            if entry.problem:
                problems.append(f"{where}, agent “{entry.name}”: {entry.problem}")
            for warning in entry.warnings:
                print(f"    {warning}")
                problems.append(f"{where}, agent “{entry.name}”: {warning}")


def _key_problem(paths: Paths, settings: Settings) -> str | None:
    """Why no API key is in force (one line for one cause), or None.

    A variable's name written as config.yaml's key (``api_key: ${ANTHROPIC_API_KEY}``) is not a key:
    the file expands nothing, so the settings leave it out, and this says why rather than "no API key".
    """
    written = read_config_file(paths.config_file).get("api_key")
    if not names_a_variable(written):
        return None if settings.has_api_key else f"no API key: set {ENV_API_KEY} or run `acp-hermes setup`"
    if settings.has_api_key:
        print(f"  note: config.yaml's api_key {written!r} is a variable's name, not a key ({ENV_API_KEY} from the "
              "environment is used instead)")
        return None
    return (f"config.yaml's api_key is {written!r}, the name of a variable, not a key: config.yaml does not expand "
            f"variables. Set {ENV_API_KEY} in the environment (an editor's `env`), or run `acp-hermes setup` to "
            "save the key itself")


def _sandbox_status(settings: Settings | None, problems: list[str]) -> str:
    from acp_hermes_tools.sandbox import HOME_NOTICE, SANDBOX_OFF, sandbox_status

    status = sandbox_status(settings is None or settings.sandbox != "off")
    network = "network allowed" if settings is not None and settings.sandbox_network else "no network"
    if not status.available:
        allowed = settings is not None and settings.allow_unsandboxed_bypass
        if settings is not None and settings.default_mode is Mode.BYPASS and not allowed:
            problems.append("default_mode is bypass, but no sandbox can run commands here: sessions start in "
                            "default mode (set allow_unsandboxed_bypass: true to allow bypass without a sandbox)")
        bypass = ("bypass is allowed without it (allow_unsandboxed_bypass): there every command runs with your "
                  "rights, unasked" if allowed else
                  "bypass is not offered (allow_unsandboxed_bypass: true would allow it: every command would run "
                  "with your rights, unasked)")
        where = SANDBOX_OFF if status.detail == SANDBOX_OFF else f"unavailable ({status.detail})"
        return f"command sandbox: {where}; every command asks as its mode requires; {bypass}"
    line = (f"command sandbox: {status.detail}; workspace and $TMPDIR writable, .git/.envrc/.vscode/… read-only, "
            f"credentials hidden, no Unix sockets, no capabilities, {network}")
    here, home = Path.cwd().resolve(), Path.home().resolve()
    if here == home or here in home.parents:
        line += f"\n  a session opened here ({here}): " + HOME_NOTICE.removeprefix("⚠️ ")
    return line


UNCHECKED = "not checked: HERMES_HOME cannot be used (see Problems)"


def _presence(path: Path) -> str:
    """Nothing for a file that is there; a note for one that is not yet, or cannot be looked at."""
    try:
        path.stat()
    except FileNotFoundError:
        return "  (not created yet)"
    except OSError as exc:
        return f"  (cannot be looked at: {exc.strerror or exc})"
    return ""


def run_doctor(*, repair: bool = False) -> int:
    paths = paths_from_env()
    problems: list[str] = []
    print(f"acp-hermes {__version__} (Python {sys.version.split()[0]})\n")
    print("Files")
    for label, path in (
        ("HERMES_HOME", paths.home),
        ("config", paths.config_file),
        ("permissions", paths.permissions_file),
        ("trust decisions", paths.trust_file),
        ("session database", paths.state_db),
        ("logs", paths.logs),
        ("memories", paths.memories),
        ("SOUL.md", paths.soul),
        ("checkpoints", paths.checkpoints),
    ):
        print(f"  {label:<17} {path}{_presence(path)}")
    if (blocked := home_problem(paths)) is not None:
        problems.append(blocked)

    print("\nConfiguration (environment > config file > defaults)")
    try:
        settings = load_settings(paths=paths)
    except ConfigError as exc:
        if blocked is None:  # else that is why the config cannot be read, and Problems says so already
            problems.append(f"invalid configuration: {exc}")
        settings = None
    if settings is not None:
        for name, value in settings.model_dump(mode="json").items():
            if name == "api_key":
                value = mask(settings.api_key.get_secret_value()) if settings.api_key else "(not set)"
            elif name == "mcp_servers":  # their env and headers hold tokens: names only (see MCP servers)
                value = ", ".join(value) or "(none)"
            print(f"  {name:<23} {human(value)}")
        if (missing := _key_problem(paths, settings)) is not None:
            problems.append(missing)
    for env in (ENV_HOME, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, ENV_TRUST):
        state = "set" if os.environ.get(env) else "not set"
        print(f"  env {env:<19} {state}")

    print("\nPermission grants")
    for line in _grants(paths.permissions_file) if blocked is None else [UNCHECKED]:
        print(f"  {line}")

    print("\nWorkspace trust")
    for line in _trust(paths, settings or Settings()) if blocked is None else [UNCHECKED]:
        print(f"  {line}")

    print("\nEnvironment")
    print(f"  {_fts5_status()}")
    print(f"  {_sandbox_status(settings, problems)}")
    if blocked is None:
        _session_database(paths.state_db, repair, problems)
    else:
        print(f"  session database: {UNCHECKED}")
    rg = shutil.which("rg")
    print(f"  ripgrep: {rg or 'not found (search_files uses the built-in Python search)'}")
    from acp_hermes.core.system_prompt import find_context_files

    files = find_context_files(Path.cwd())
    print(f"  context files for {Path.cwd()}: {', '.join(f.label for f in files) or '(none)'}")

    effective = settings or Settings()  # the checks below still work with the defaults
    print("\nMemory")
    if blocked is None:
        _memory_files(paths, effective, problems)
    else:
        print(f"  memory files: {UNCHECKED}")
    _memory_provider(paths, effective, problems)
    print("\nSkills")
    if blocked is None:
        _skills(paths, effective, problems)
    else:
        print(f"  {UNCHECKED}")
    print("\nCheckpoints")
    if blocked is None:
        _checkpoints(paths, effective, problems)
    else:
        print(f"  {UNCHECKED}")
    print("\nMCP servers")
    _mcp_servers(effective, problems)
    print("\nEditors")
    _editors(problems)

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
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return ", ".join(human(item) for item in value) if value else "(none)"
    if isinstance(value, dict):
        return ", ".join(f"{key}: {_nested(item)}" for key, item in value.items()) if value else "(none)"
    return str(value)


def _nested(value: object) -> str:
    """A mapping inside a mapping (a model's prices) in braces, leaving out what is not set."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {human(item)}" for key, item in value.items() if item is not None) + "}"
    return human(value)
