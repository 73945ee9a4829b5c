"""How the agent runs git for itself (search's file listing): never a program a repository configured.

A repository's configuration can name programs git runs on its own — ``core.fsmonitor`` at every
index refresh, hooks — and a workspace is where a hostile README or tool result may have planted
one. The user's commands ask or run in the sandbox; the agent's own helper calls run in its own
process with no one asked, so they override every such setting on the command line (which wins
over every configuration file), ignore the system configuration, treat a bare repository found
by accident as none, take no locks and never prompt.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

_OVERRIDES = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.untrackedCache=false",
    "safe.bareRepository=explicit",
    "core.pager=cat",
    "core.editor=true",
    "core.askPass=",
    "credential.helper=",
)
_ENVIRONMENT = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
}


def helper_argv(git: str, *args: str) -> list[str]:
    """``git args`` with every program-running setting switched off."""
    options = [word for setting in _OVERRIDES for word in ("-c", setting)]
    return [git, *options, *args]


def helper_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a helper git: the agent's own, without variables that point git elsewhere."""
    source = os.environ if environ is None else environ
    kept = {name: text for name, text in source.items() if not name.startswith("GIT_")}
    return {**kept, **_ENVIRONMENT}
