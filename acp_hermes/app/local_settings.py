"""Settings for a command that can still do its job with the defaults when the config file is broken."""

from __future__ import annotations

import sys

from acp_hermes.config import ConfigError, Paths, Settings, load_settings


def settings_or_defaults(paths: Paths) -> Settings:
    """The effective settings; the defaults, with a note on stderr, when the configuration is invalid."""
    try:
        return load_settings(paths=paths)
    except ConfigError as exc:
        print(f"acp-hermes: configuration error, using the defaults: {exc}", file=sys.stderr)
        return Settings()
