"""``acp-hermes setup``: ask for an API key, base URL and model; write them to the config file.

Run by hand or by an editor's terminal-auth flow. What it saves is checked first: the base URL
must be an http(s) URL with a host, and one ``GET /v1/models`` with the key shows that the
endpoint answers and accepts the key (``--no-check`` skips that, for an endpoint that cannot be
reached from here or does not list models). The file holds a secret, so it is written
atomically with 0600 permissions; other keys already in it are kept.
"""

from __future__ import annotations

import getpass
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from acp_hermes.config import (
    DEFAULT_MODEL,
    ConfigError,
    Settings,
    check_config,
    names_a_variable,
    paths_from_env,
    read_config_file,
)
from acp_hermes_memory.fs import atomic_write_text, private_directory


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


CHECK_TIMEOUT = 20.0  # seconds for the one check request
DEFAULT_BASE_URL = "https://api.anthropic.com"


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a base URL, or None."""
    try:
        parts = urlsplit(url)
        host, _port = parts.hostname, parts.port  # the port raises when it is not a number
    except ValueError as exc:
        return f"{url!r} is not a URL ({exc})"
    if parts.scheme not in ("http", "https") or not host:
        return f"{url!r} is not an http:// or https:// URL with a host, such as {DEFAULT_BASE_URL}"
    return None


async def access_problem(settings: Settings, *, models_optional: bool = False) -> str | None:
    """Why the endpoint refuses or cannot be reached with the settings' key (one GET /v1/models), or None.

    ``models_optional``: an endpoint without ``/v1/models`` (404) is no problem (the demo then
    finds out from its prompt).
    """
    from acp_hermes.model.provider import AnthropicProvider, describe_failure

    provider = AnthropicProvider(settings.model_copy(update={"request_timeout": CHECK_TIMEOUT}))
    where = settings.base_url or DEFAULT_BASE_URL
    try:
        await provider.check_access()
    except Exception as error:
        status = getattr(error, "status_code", None)
        if status == 401:
            return f"{where} rejected the API key (401 Unauthorized)."
        if status == 403:
            return f"{where} refused access with this key (403 Forbidden)."
        if status == 404:
            return None if models_optional else f"{where} has no /v1/models (404): is the base URL right?"
        return unreachable(error, where) or describe_failure(error)
    finally:
        await provider.aclose()
    return None


def unreachable(error: BaseException, where: str) -> str | None:
    """"Could not reach the model at <where>: <why>" when an OS error under ``error`` says the request
    never got an answer (refused, no such host, TLS, timed out), else None."""
    if getattr(error, "status_code", None) is not None:  # the endpoint answered
        return None
    reason = _connection_failure(error)
    return None if reason is None else f"Could not reach the model at {where}: {reason}."


def _connection_failure(error: BaseException) -> str | None:
    """The OS-level cause of a failed connection in a few words (the SDK says only "Connection error")."""
    import errno
    import socket
    import ssl

    causes: list[BaseException] = [error]
    seen: set[int] = set()
    vague: str | None = None  # an OSError without an errno ("All connection attempts failed"): its text
    while causes:
        cause = causes.pop(0)
        if id(cause) in seen:
            continue
        seen.add(id(cause))
        if isinstance(cause, ConnectionRefusedError) or getattr(cause, "errno", None) == errno.ECONNREFUSED:
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return f"host not found ({cause.strerror or cause})"
        if isinstance(cause, ssl.SSLError):
            return f"TLS failed ({cause.reason or cause})"
        if isinstance(cause, TimeoutError):
            return "the connection timed out"
        if isinstance(cause, OSError):
            if cause.strerror:
                return cause.strerror[0].lower() + cause.strerror[1:]
            vague = vague or str(cause)
        causes.extend(getattr(cause, "exceptions", ()))  # an ExceptionGroup of connection attempts
        causes.extend(c for c in (cause.__cause__, cause.__context__) if c is not None)
    return vague


ASKED = ("api_key", "base_url", "model")  # what setup asks for; the file's other keys are kept as they are


def run_setup(*, check: bool = True) -> int:
    paths = paths_from_env()
    try:
        current: dict[str, Any] = read_config_file(paths.config_file)
        check_config({key: value for key, value in current.items() if key not in ASKED}, paths.config_file)
    except ConfigError as exc:
        print(f"Cannot update the configuration: {exc}", file=sys.stderr)
        return 1
    if (problem := _cannot_save(paths.own) or _no_answers()) is not None:
        print(problem, file=sys.stderr)
        return 1
    print(f"acp-hermes setup — writes {paths.config_file}")
    key_now = current.get("api_key")
    if names_a_variable(key_now):
        print(f"(The api_key in the file, {key_now!r}, is the name of a variable, not a key: give the key itself.)")
        key_now = None
    keep = f" [{mask(str(key_now))}, Enter keeps it]" if key_now else ""
    key = _ask(f"Anthropic API key{keep}: ", secret=True) or key_now
    if not key:
        print("No API key given; nothing written.", file=sys.stderr)
        return 1
    url_now = current.get("base_url") or ""
    base_url = _ask(f"Base URL [{url_now or DEFAULT_BASE_URL}]: ") or url_now
    while base_url and (problem := url_problem(base_url)):
        print(f"Not a base URL: {problem}", file=sys.stderr)
        if not sys.stdin.isatty():
            print("Nothing written.", file=sys.stderr)
            return 1
        base_url = _ask(f"Base URL [{url_now or DEFAULT_BASE_URL}]: ") or url_now
    model_now = current.get("model") or DEFAULT_MODEL
    model = _ask(f"Model [{model_now}]: ") or model_now
    updated = {**current, "api_key": key, "model": model}
    if base_url:
        updated["base_url"] = base_url
    else:
        updated.pop("base_url", None)
    try:
        settings = Settings.model_validate(updated)
    except ValidationError as exc:
        print(f"Not saved: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}", file=sys.stderr)
        return 1
    if check and not _passes_check(settings):
        return 1
    import yaml

    private_directory(paths.own)  # 0700 (HERMES_HOME too when it is new), as the server keeps it
    atomic_write_text(paths.config_file, yaml.safe_dump(updated, sort_keys=False), mode=0o600, private=True)
    print(f"Saved to {paths.config_file} (permissions 0600). Model: {model}.")
    return 0


def _cannot_save(folder: Path) -> str | None:
    """Why config.yaml could not be saved in ``folder``, found before any question: the folder is made
    (private, as the server makes it) and a file is created in it and removed."""
    import tempfile

    try:
        private_directory(folder)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(folder) else ""
        return (f"Cannot save the configuration in {folder}: {exc.strerror or exc}{where}. Set HERMES_HOME to a "
                "folder you can write, or give the key in the ANTHROPIC_API_KEY environment variable instead.")
    return None


def _no_answers() -> str | None:
    """Why no answer can come (standard input closed, or a device that is no terminal, such as
    /dev/null), or None: a terminal, a pipe or a file of answers will do."""
    import os
    import stat

    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
        terminal = sys.stdin.isatty()
    except (AttributeError, OSError, ValueError):  # no stdin at all
        mode, terminal = 0, False
    if terminal or stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISSOCK(mode):
        return None
    return ("acp-hermes setup asks for the API key, base URL and model, and there is no terminal to ask on: run it "
            "in a terminal, or pipe the answers in (one a line), or set ANTHROPIC_API_KEY instead.")


def _passes_check(settings: Settings) -> bool:
    """Whether to save: the check passed, or the user, told why it failed, wants it saved anyway."""
    import anyio

    print(f"Checking the key with {settings.base_url or DEFAULT_BASE_URL} …", flush=True)
    problem = anyio.run(access_problem, settings)
    if problem is None:
        print("The key works.")
        return True
    print(f"Check failed: {problem}", file=sys.stderr)
    if sys.stdin.isatty() and _ask("Save anyway? [y/N] ").lower() in ("y", "yes"):
        return True
    print("Nothing written. Run `acp-hermes setup --no-check` to save without the check.", file=sys.stderr)
    return False
