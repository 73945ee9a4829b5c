"""Every git process acp-hermes starts for itself: never a program a repository (or anyone) configured.

A repository's configuration can name programs git runs on its own: ``core.fsmonitor`` at every
index refresh, hooks, pagers, external diffs and textconv, clean/smudge filters (chosen by
``.gitattributes``), credential helpers, ``core.sshCommand``, ``remote.<name>.uploadpack`` and
``ext::`` URLs (a partial clone fetches a missing object from its promisor remote on its own, from a
command that only reads). A workspace is where a hostile README or tool result may have planted one,
trusted or not. The user's commands ask or run in the sandbox; the agent's own git (the search
fallback's listing, the checkpoint store) runs in its own process with no one asked, so every one of
them is built here, by ``git_command``:

- system and global configuration are off (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_SYSTEM`` and
  ``GIT_CONFIG_GLOBAL`` at ``/dev/null``, ``GIT_ATTR_NOSYSTEM``), and every ``GIT_*`` variable of
  our own environment (``GIT_DIR``, ``GIT_EXEC_PATH``, ``GIT_CONFIG_COUNT``, ``GIT_SSH``,
  ``GIT_EXTERNAL_DIFF``, ``GIT_ASKPASS``…) is dropped, with ``SSH_ASKPASS``;
- each program-running key is given on the command line, which git reads after every file, so the
  value wins over the repository's own and over any file it includes. git has no way to switch
  includes off for a command (``git config --no-includes`` is for ``git config`` alone, and ``-c
  include.path=…`` adds a file rather than removing one): overriding the keys is what makes an
  included file as inert as the repository's;
- no fetching: ``GIT_NO_LAZY_FETCH`` (git 2.39.4 and later) makes a missing object an error, and
  ``GIT_ALLOW_PROTOCOL`` set to a list naming no protocol refuses every transport (what holds on an
  older git), so no ssh command, upload-pack, ``ext::`` command, credential helper or askpass runs;
- diff commands get ``--no-ext-diff --no-textconv``: the drivers ``.gitattributes`` chooses have
  names of the repository's choosing, so no ``-c`` can name them all. Filters are the same kind of
  driver; no command we run in a workspace repository converts content (``ls-files``, ``rev-parse``),
  and the checkpoint store, which does hash workspace files, reads no workspace configuration and
  switches filters off in its own ``info/attributes``.

It also treats a bare repository found by accident as none, takes no optional locks and never prompts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from acp_hermes_memory.values import value

# Each setting that makes git run a program, with a value that runs none. Later -c values win, so a
# caller's own settings come before these.
OVERRIDES = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.untrackedCache=false",
    "safe.bareRepository=explicit",
    "core.pager=cat",
    "core.editor=true",
    "sequence.editor=true",
    "core.askPass=",
    "credential.helper=",  # the empty value resets the list, URL-specific helpers included
    "core.sshCommand=false",
    "log.showSignature=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
)
ENVIRONMENT = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_SYSTEM": os.devnull,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "GIT_ALLOW_PROTOCOL": "",  # an allowlist naming no protocol: every transport is refused
    "GIT_NO_LAZY_FETCH": "1",  # a missing object of a partial clone is an error, never a fetch
}
DROPPED = frozenset({"SSH_ASKPASS"})
DIFF_COMMANDS = frozenset({"diff", "diff-files", "diff-index", "diff-tree", "log", "show", "whatchanged"})
NO_DRIVERS = ("--no-ext-diff", "--no-textconv")


@value
class GitCommand:
    argv: list[str]
    env: dict[str, str]


def git_command(git: str, subcommand: str, *args: str, directory: str | None = None, config: Sequence[str] = (),
                environment: Mapping[str, str] | None = None,
                environ: Mapping[str, str] | None = None) -> GitCommand:
    """``git subcommand args`` (in ``directory`` when given) with every program-running setting off.

    ``config`` adds the caller's own ``-c`` settings and ``environment`` its own variables (the
    checkpoint store's ``GIT_DIR``, say); neither can change a setting or variable fixed here."""
    options = ["-C", directory] if directory is not None else []
    settings = [word for setting in (*config, *OVERRIDES) for word in ("-c", setting)]
    drivers = NO_DRIVERS if subcommand in DIFF_COMMANDS else ()
    argv = [git, "--no-pager", *options, *settings, subcommand, *drivers, *args]
    source = os.environ if environ is None else environ
    kept = {name: text for name, text in source.items() if not name.startswith("GIT_") and name not in DROPPED}
    return GitCommand(argv, {**kept, **(environment or {}), **ENVIRONMENT})
