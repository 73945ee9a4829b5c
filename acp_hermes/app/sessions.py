"""`acp-hermes sessions list|show|search|export|delete`: the SessionDB from a terminal.

Every subcommand reads the same `state.db` the editors' sessions live in; `--json` prints machine-
readable output for scripts. A compacted session is one conversation here as in the editor: its
continuation segments are shown, exported and deleted with it. Subagent sessions (what a session's
``delegate_task`` calls did) are listed and found here, unlike in the editor's list, marked
``subagent of <parent>``; they are deleted with the session that started them. Deleting a session
deletes its checkpoints too (``core.checkpoints.forget_sessions``), or says why it could not.
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
    listing.add_argument("--cwd", help="only sessions of this workspace folder (absolute, or relative to here)")
    listing.add_argument("--limit", type=_at_least_one, default=20, help="how many to show (default: 20)")
    show = actions.add_parser("show", parents=[common], help="one session as Markdown")
    show.add_argument("session_id")
    search = actions.add_parser("search", parents=[common], help="sessions that mention some words")
    search.add_argument("words", nargs="+")
    export = actions.add_parser("export", parents=[common], help="one session as Markdown or JSONL")
    export.add_argument("session_id")
    export.add_argument("--format", choices=("md", "jsonl"), default="md")
    export.add_argument("--output", help="file to write (default: standard output)")
    export.add_argument("--json", action="store_true",
                        help="with --output, say what was written as JSON (the export itself: --format jsonl)")
    delete = actions.add_parser("delete", parents=[common],
                                help="delete a session and everything stored with it (its checkpoints too)")
    delete.add_argument("session_id")
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    for parser in (listing, show, search, delete):
        parser.add_argument("--json", action="store_true", help="machine-readable output")


def _at_least_one(text: str) -> int:
    """``--limit``: a whole number of 1 or more (0 or -1 would otherwise list one session, or fail)."""
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"give a number of sessions, 1 or more (not {text!r})")
    return number


def run_sessions(args: argparse.Namespace) -> int:
    from acp_hermes_memory.session_db import SessionDB

    with SessionDB(paths_from_env().state_db) as db:
        action = {"list": _list, "show": _show, "search": _search, "export": _export, "delete": _delete}
        return action[args.action](db, args)


def _record(record: SessionRecord) -> dict[str, Any]:
    return {"id": record.id, "title": record.title, "cwd": record.cwd, "messages": record.message_count,
            "started_at": _when(record.started_at), "updated_at": _when(record.updated_at), "model": record.model,
            "source": record.source, "parent_session_id": record.parent_session_id}


def _marker(record: SessionRecord | None) -> str:
    """``  (subagent of 1a2b3c4d)`` after a subagent session's title (``  (rewound from 1a2b3c4d)`` after a
    rewind's branch's); nothing after any other."""
    label = record.label if record is not None else None
    return f"  ({label})" if label else ""


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).astimezone().isoformat(timespec="seconds")


def _list(db: SessionDB, args: argparse.Namespace) -> int:
    import os

    # Sessions store their workspace's absolute path, as the editor gave it: `--cwd .` means here.
    cwd = os.path.abspath(os.path.expanduser(args.cwd)) if args.cwd is not None else None
    records, more = db.list_sessions(cwd=cwd, limit=args.limit, include_subagents=True)
    if cwd is not None and not records and not os.path.isdir(cwd):
        resolved = f" ({cwd})" if cwd != args.cwd else ""
        print(f"acp-hermes: no sessions in {args.cwd}: there is no such folder{resolved}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([_record(record) for record in records], indent=2))
        return 0
    if not records:
        print(f"No sessions in {cwd} yet." if cwd is not None else "No sessions yet.")
    for record in records:
        print(f"{record.id}  {_when(record.updated_at)[:16]}  {record.message_count:>5} msgs  "
              f"{record.bare_title or '(untitled)'}{_marker(record)}  [{record.cwd or 'folder unknown'}]")
    if more is not None:
        print(f"(the {args.limit} most recent; `--limit {args.limit * 2}` shows more)")
    return 0


def _session(db: SessionDB, given: str) -> SessionRecord | None:
    """The session ``given`` names: its full id, or the start of exactly one id (else None, said on stderr)."""
    record = db.get_session(given)
    if record is not None:
        return record
    matches = _ids_starting_with(db, given)
    if len(matches) == 1:
        return db.get_session(matches[0])
    if not matches:
        print(f"acp-hermes: no session {given!r} (see `acp-hermes sessions list`)", file=sys.stderr)
        return None
    shown = matches[:_AMBIGUOUS_SHOWN]
    more = f"\n  … and {len(matches) - len(shown)} more" if len(matches) > len(shown) else ""
    listed = "\n".join(f"  {_one(db, session_id)}" for session_id in shown)
    print(f"acp-hermes: {given!r} is the start of {len(matches)} session ids; give more of the one you mean:\n"
          f"{listed}{more}", file=sys.stderr)
    return None


_AMBIGUOUS_SHOWN = 10


def _ids_starting_with(db: SessionDB, prefix: str) -> list[str]:
    """Ids of the sessions `sessions list` shows (continuation segments left out) that start with ``prefix``."""
    import contextlib
    import sqlite3

    from acp_hermes_memory.session_db import CONTINUATION_SOURCE

    sql = "SELECT id, source FROM sessions WHERE id >= ? ORDER BY id LIMIT ?"
    found: list[str] = []
    try:  # read beside the SessionDB: the primary-key index walked from the prefix, stopped past it
        with contextlib.closing(sqlite3.connect(f"{db.path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
            start = prefix
            while True:
                rows = conn.execute(sql, (start, 500)).fetchall()
                found += [str(i) for i, source in rows if str(i).startswith(prefix) and source != CONTINUATION_SOURCE]
                if len(rows) < 500 or not str(rows[-1][0]).startswith(prefix):
                    return found
                start = str(rows[-1][0]) + "\0"
    except sqlite3.Error:
        return found


def _one(db: SessionDB, session_id: str) -> str:
    record = db.get_session(session_id)
    if record is None:
        return session_id
    return f"{record.id}  {_when(record.updated_at)[:16]}  {record.title or '(untitled)'}"


def _rows(db: SessionDB, given: str) -> tuple[SessionRecord, list[MessageRecord]] | None:
    record = _session(db, given)
    if record is None:
        return None
    with progress(f"reading {record.message_count:,} messages"):
        return record, db.conversation(record.id)


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
    """One stored row: an assistant row's tool calls (id, name, arguments) and a tool row's result
    (the block the model was sent, with ``is_error``) as stored."""
    return {"role": row.role, "content": row.content, "tool_name": row.tool_name, "tool_call_id": row.tool_call_id,
            "tool_calls": row.tool_calls, "tool_result": row.payload if row.role == "tool" else None,
            "timestamp": _when(row.timestamp)}


def _search(db: SessionDB, args: argparse.Namespace) -> int:
    import anyio

    from acp_hermes_memory.recall import recall

    query = " ".join(args.words)
    result = anyio.run(lambda: recall(db, query, current_session=None, limit=10))
    records = {s.session_id: db.get_session(s.session_id) for s in result.sessions}
    if args.json:
        print(json.dumps([{"id": s.session_id, "title": s.title, "updated_at": _when(s.updated_at),
                           **_origin(records[s.session_id]),
                           "excerpts": [{"text": e.text, "marks": [list(m) for m in e.marks]} for e in s.excerpts]}
                          for s in result.sessions], indent=2, ensure_ascii=False))
        return 0
    if not result.sessions:
        print(f"No session mentions {query!r}." + (f" ({result.notice})" if result.notice else ""))
    opening, closing = _highlight()
    for found in result.sessions:
        # A subagent's title comes marked from recall: "Fix it (subagent of 1a2b3c4d)".
        print(f"{found.session_id}  {_when(found.updated_at)[:16]}  {found.title or '(untitled)'}")
        for excerpt in found.excerpts[:2]:
            print(f"    {excerpt.render(opening, closing, _printable)}")
    return 0


def _origin(record: SessionRecord | None) -> dict[str, Any]:
    """Where a found session came from (deleted since the search: unknown)."""
    return {"source": record.source if record else None,
            "parent_session_id": record.parent_session_id if record else None}


def _highlight() -> tuple[str, str]:
    """How a matched word stands out: bold on a terminal (unless NO_COLOR is set), «guillemets» elsewhere."""
    import os

    if sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        return "\x1b[1m", "\x1b[0m"
    return "«", "»"


def _printable(text: str) -> str:
    """Stored text without control characters: a saved escape sequence must not restyle the terminal."""
    return "".join(char if char.isprintable() else "\ufffd" for char in text)


def _export(db: SessionDB, args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    if args.json and not args.output:
        print("acp-hermes: `--json` goes with `--output` (it reports what was written, as JSON). The export itself "
              "is Markdown, or JSON lines with `--format jsonl`; `acp-hermes sessions show ID --json` prints a "
              "session as one JSON document", file=sys.stderr)
        return 2
    target = Path(args.output).expanduser() if args.output else None
    if target is not None and target.is_dir():
        print(f"acp-hermes: {args.output} is a folder: give the file to write in it", file=sys.stderr)
        return 1
    if target is not None and not target.parent.is_dir():
        given = os.path.dirname(args.output.rstrip("/")) or "."
        print(f"acp-hermes: the folder {given} does not exist: create it first, or write elsewhere",
              file=sys.stderr)
        return 1
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
    if target is None:
        print(text, end="")
        return 0
    from acp_hermes_memory.fs import atomic_write_text

    try:
        atomic_write_text(target.resolve(), text)
    except OSError as exc:  # named by the path given, not by the temp file the write went through
        print(f"acp-hermes: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(json.dumps({"written": args.output, "rows": len(rows)}) if args.json else f"Wrote {args.output}.")
    return 0


def _delete(db: SessionDB, args: argparse.Namespace) -> int:
    record = _session(db, args.session_id)
    if record is None:
        return 1
    subagents = db.subagent_ids(record.id)
    if not args.yes:
        if not sys.stdin.isatty():
            print("acp-hermes: add --yes to delete without a question", file=sys.stderr)
            return 2
        theirs = " and its subagents' sessions" if subagents else ""
        answer = input(f"Delete “{record.title or record.id}” and its {record.message_count} messages{theirs}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("Kept.")
            return 1
    deleted = [segment.id for segment in db.segments(record.id)] + subagents
    for session_id in deleted:
        db.delete_session(session_id)
    from acp_hermes.core.checkpoints import forget_sessions

    with progress("removing its checkpoints"):
        checkpoints, problems = forget_sessions(paths_from_env().checkpoints, deleted)
    theirs = f" and {len(subagents)} sessions of its subagents" if subagents else ""
    if checkpoints:
        theirs += f", with its {checkpoints} checkpoint{'' if checkpoints == 1 else 's'}"
    print(json.dumps({"deleted": deleted, "checkpoints": checkpoints}) if args.json
          else f"Deleted {record.id}{theirs}.")
    for problem in problems:
        print(f"acp-hermes: the session is deleted, but {problem}", file=sys.stderr)
    return 1 if problems else 0
