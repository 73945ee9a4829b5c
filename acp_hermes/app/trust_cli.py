"""``acp-hermes trust list|add PATH|remove PATH``: the remembered workspace trust decisions.

The same decisions a session's trust question, ``/trust`` and ``/untrust`` remember
(``memory.trust_store``), keyed by the repository a folder belongs to. ``add`` approves the project MCP
servers the folder names as they are now (shown as it does so); ``remove`` forgets a decision, so the
next session there asks again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp_hermes.config import paths_from_env
from acp_hermes_memory.text import counted

if TYPE_CHECKING:
    import argparse

    from acp_hermes_memory.trust_store import Repository


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """The `trust` command and its subcommands (``commands`` is the top-level subparsers object)."""
    trust = commands.add_parser("trust", parents=[common],
                                help="list, add or remove the repositories whose own files may change what the "
                                "agent does")
    actions = trust.add_subparsers(dest="action", metavar="action", required=True)
    listing = actions.add_parser("list", parents=[common], help="every remembered decision")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    add = actions.add_parser("add", parents=[common],
                             help="trust the repository of PATH (its MCP servers as they are now included)")
    remove = actions.add_parser("remove", parents=[common],
                                help="forget the decision for the repository of PATH: its next session asks again")
    for parser in (add, remove):
        parser.add_argument("path", help="a folder of the repository (a linked worktree counts as its main one)")


def run_trust(args: argparse.Namespace) -> int:
    from acp_hermes_memory.trust_store import TrustStore

    store = TrustStore(paths_from_env().trust_file)
    if args.action == "list":
        return _list(store, args.json)
    folder = Path(args.path).expanduser().resolve()
    if not folder.is_dir():
        print(f"acp-hermes: {args.path} is not a folder")
        return 1
    from acp_hermes_memory.trust_store import repository_of

    repository = repository_of(folder, Path.home())
    if repository.home:
        print(f"acp-hermes: {folder} is your home folder, which is never trusted as a repository; trust it for one "
              "session at a time with `/trust session`")
        return 1
    if args.action == "add":
        return _add(store, folder, repository)
    if store.forget(repository.root):
        print(f"Forgot the decision for {repository.root}: its next session asks again.")
    else:
        print(f"No decision was remembered for {repository.root}.")
    return 0


def _list(store: Any, as_json: bool) -> int:
    entries = store.all()
    if as_json:
        print(json.dumps([{"repository": root, "trusted": entry.trusted, "decided": entry.decided,
                           "approved_mcp_servers": len(entry.servers)} for root, entry in entries.items()], indent=2))
        return 0
    if not entries:
        print("No decisions remembered: each workspace with files of its own is asked about at its first prompt.")
    for root, entry in entries.items():
        servers = f", {counted(len(entry.servers), 'approved MCP server')}" if entry.servers else ""
        print(f"{'trusted' if entry.trusted else 'not trusted':<12} {root}  (decided {entry.decided}{servers})")
    return 0


def _add(store: Any, folder: Path, repository: Repository) -> int:
    from acp_hermes.core.project_files import find_gated
    from acp_hermes_tools.mcp.specs import fingerprint

    gated = find_gated(folder)
    store.decide(repository.root, trusted=True, servers=[fingerprint(spec) for spec in gated.mcp_servers])
    print(f"Trusted {repository.root}: its instruction files, hints, skills, settings and MCP servers apply to "
          "its sessions.")
    if not gated.empty:
        print("It carries:")
        for line in gated.lines():
            print(f"  {line}")
    if gated.mcp_servers:
        print("Those MCP servers are approved as they are now; one added or changed later asks on its own.")
    return 0
