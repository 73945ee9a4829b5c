"""`acp-hermes sessions list|show|search|export|delete`: the SessionDB from a terminal.

Every subcommand reads the same `state.db` the editors' sessions live in; `--json` prints machine-
readable output for scripts. A compacted session is one conversation here as in the editor: its
continuation segments are shown, exported and deleted with it.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

from acp_hermes.app.progress import progress
from acp_hermes.config import paths_from_env

if TYPE_CHECKING:
    from acp_hermes_memory.session_db import MessageRecord, SessionDB, SessionRecord


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """The `sessions` command and its subcommands (``commands`` is the top-level subparsers object)."""
    sessions = commands.add_parser("sessions", parents=[common], help="list, show, search, export or delete sessions")
    actions = sessions.add_subparsers(dest="action", metavar="action", required=True)
    listing = actions.add_parser("list", parents=[common], help="sessions, newest activity first")
    listing.add_argument("--cwd", help="only sessions of this workspace")
    listing.add_argument("--limit", type=int, default=20)
    show = actions.add_parser("show", parents=[common], help="one session as Markdown")
    show.add_argument("session_id")
    search = actions.add_parser("search", parents=[common], help="sessions that mention some words")
    search.add_argument("words", nargs="+")
    export = actions.add_parser("export", parents=[common], help="one session as Markdown or JSONL")
    export.add_argument("session_id")
    export.add_argument("--format", choices=("md", "jsonl"), default="md")
    export.add_argument("--output", help="file to write (default: standard output)")
    delete = actions.add_parser("delete", parents=[common], help="delete a session and everything stored with it")
    delete.add_argument("session_id")
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    for parser in (listing, show, search, export, delete):
        parser.add_argument("--json", action="store_true", help="machine-readable output")


def run_sessions(args: argparse.Namespace) -> int:
    from acp_hermes_memory.session_db import SessionDB

    with SessionDB(paths_from_env().state_db) as db:
        action = {"list": _list, "show": _show, "search": _search, "export": _export, "delete": _delete}
        return action[args.action](db, args)


def _record(record: SessionRecord) -> dict[str, Any]:
    return {"id": record.id, "title": record.title, "cwd": record.cwd, "messages": record.message_count,
            "started_at": _when(record.started_at), "updated_at": _when(record.updated_at), "model": record.model}


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).astimezone().isoformat(timespec="seconds")


def _list(db: SessionDB, args: argparse.Namespace) -> int:
    records, _ = db.list_sessions(cwd=args.cwd, limit=max(1, args.limit))
    if args.json:
        print(json.dumps([_record(record) for record in records], indent=2))
        return 0
    if not records:
        print("No sessions yet.")
    for record in records:
        print(f"{record.id}  {_when(record.updated_at)[:16]}  {record.message_count:>5} msgs  "
              f"{record.title or '(untitled)'}  [{record.cwd}]")
    return 0


def _rows(db: SessionDB, session_id: str) -> tuple[SessionRecord, list[MessageRecord]] | None:
    record = db.get_session(session_id)
    if record is None:
        print(f"acp-hermes: no session {session_id!r} (see `acp-hermes sessions list`)", file=sys.stderr)
        return None
    with progress(f"reading {record.message_count:,} messages"):
        return record, db.conversation(session_id)


def _show(db: SessionDB, args: argparse.Namespace) -> int:
    found = _rows(db, args.session_id)
    if found is None:
        return 1
    record, rows = found
    if args.json:
        print(json.dumps({**_record(record), "rows": [_row(row) for row in rows]}, indent=2))
        return 0
    from acp_hermes.core.export import conversation_markdown

    print(conversation_markdown(record.title, record.id, rows), end="")
    return 0


def _row(row: MessageRecord) -> dict[str, Any]:
    return {"role": row.role, "content": row.content, "tool_name": row.tool_name, "tool_call_id": row.tool_call_id,
            "timestamp": _when(row.timestamp)}


def _search(db: SessionDB, args: argparse.Namespace) -> int:
    import anyio

    from acp_hermes_memory.recall import recall

    query = " ".join(args.words)
    result = anyio.run(lambda: recall(db, query, current_session=None, limit=10))
    if args.json:
        print(json.dumps([{"id": s.session_id, "title": s.title, "updated_at": _when(s.updated_at),
                           "snippets": list(s.snippets)} for s in result.sessions], indent=2))
        return 0
    if not result.sessions:
        print(f"No session mentions {query!r}.")
    for found in result.sessions:
        print(f"{found.session_id}  {_when(found.updated_at)[:16]}  {found.title or '(untitled)'}")
        for snippet in found.snippets[:2]:
            print(f"    {' '.join(snippet.split())[:160]}")
    return 0


def _export(db: SessionDB, args: argparse.Namespace) -> int:
    found = _rows(db, args.session_id)
    if found is None:
        return 1
    record, rows = found
    with progress(f"exporting {len(rows):,} messages"):
        if args.format == "jsonl":
            text = "".join(json.dumps({"session": record.id, **_row(row)}) + "\n" for row in rows)
        else:
            from acp_hermes.core.export import conversation_markdown

            text = conversation_markdown(record.title, record.id, rows)
    if not args.output:
        print(text, end="")
        return 0
    from pathlib import Path

    from acp_hermes_memory.fs import atomic_write_text

    atomic_write_text(Path(args.output).expanduser().resolve(), text)
    print(json.dumps({"written": args.output, "rows": len(rows)}) if args.json else f"Wrote {args.output}.")
    return 0


def _delete(db: SessionDB, args: argparse.Namespace) -> int:
    record = db.get_session(args.session_id)
    if record is None:
        print(f"acp-hermes: no session {args.session_id!r}", file=sys.stderr)
        return 1
    if not args.yes:
        if not sys.stdin.isatty():
            print("acp-hermes: add --yes to delete without a question", file=sys.stderr)
            return 2
        answer = input(f"Delete “{record.title or record.id}” and its {record.message_count} messages? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("Kept.")
            return 1
    segments = [segment.id for segment in db.segments(record.id)]
    for segment in segments:
        db.delete_session(segment)
    print(json.dumps({"deleted": segments}) if args.json else f"Deleted {record.id}.")
    return 0
