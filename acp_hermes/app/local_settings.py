"""Settings for a command that can still do its job with the defaults when the config file is broken."""

from __future__ import annotations

import sys

from acp_hermes.config import ConfigError, Paths, Settings, load_settings


def home_problem(paths: Paths) -> str | None:
    """Why acp-hermes cannot keep its files under ``HERMES_HOME`` (one line), or None.

    A file where a directory belongs fails every read and write beneath it with "Not a directory";
    this names the file and what to do instead.
    """
    if paths.home.exists() and not paths.home.is_dir():
        return (f"HERMES_HOME {paths.home} is a file, not a directory: set HERMES_HOME to a directory "
                "(or move the file away)")
    if paths.own.exists() and not paths.own.is_dir():
        return (f"{paths.own} is a file, not a directory: move it away (acp-hermes keeps its configuration, "
                "logs and sessions in that directory)")
    return None


def settings_or_defaults(paths: Paths) -> Settings:
    """The effective settings; the defaults, with a note on stderr, when the configuration is invalid."""
    try:
        return load_settings(paths=paths)
    except ConfigError as exc:
        print(f"acp-hermes: configuration error, using the defaults: {exc}", file=sys.stderr)
        return Settings()
