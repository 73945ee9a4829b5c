"""What a question about input for a background job outside the sandbox shows, and how it is asked.

The user sees the exact text the job will read: control characters (an escape sequence that would
redraw a terminal, a carriage return that would hide the start of a line) are written out as
``\\x1b``, ``\\x0d``, … so nothing in it is invisible, and a missing final newline or the end of input
that follows is said in words.
"""

from __future__ import annotations

from pathlib import Path

from acp_hermes.permissions.policy import JobInputRequest
from acp_hermes_tools.contracts import TextDisplay

_KEPT = frozenset("\n\t")


def job_input_request(session_id: str, job_id: str, command: str, cwd: Path, *, sandbox: bool) -> JobInputRequest:
    """The policy's request; "always" is kept for ``job_id`` of ``session_id`` alone."""
    return JobInputRequest(command, job_id, f"{session_id}/{job_id}", sandbox=sandbox, cwd=cwd)


def job_input_display(job_id: str, job_command: str, text: str, *, eof: bool, sandbox: bool) -> TextDisplay:
    """The job (its whole command), where it runs, and the text it will read, exactly (as a plain block,
    never Markdown)."""
    where = "outside the sandbox" if sandbox else "without an OS sandbox"
    size = len(text.encode("utf-8"))
    lines = [f"{job_id} runs {where}: $ {job_command.strip()}"]
    if not text:
        lines.append("It is sent nothing; its stdin is closed (end of input)." if eof else "It is sent nothing.")
        return TextDisplay("\n".join(lines), fence="")
    shown, escaped = visible(text)
    lines.append(f"It reads these {size:,} byte{'s' if size != 1 else ''} on its stdin:")
    lines.append(shown.removesuffix("\n"))
    notes = []
    if escaped:
        notes.append("characters that do not show are written out as \\x.. or \\u.... escapes, a backslash as \\\\")
    if not text.endswith("\n"):
        notes.append("no newline at the end")
    if eof:
        notes.append("then its stdin is closed (end of input)")
    if notes:
        lines.append(f"[{'; '.join(notes)}]")
    return TextDisplay("\n".join(lines), fence="")


def visible(text: str) -> tuple[str, bool]:
    """``text`` with every character that does not show itself (controls but newline and tab, format
    characters such as bidi overrides, line separators) written out as ``\\x1b``, ``\\u202e``, …; once any
    is, a backslash is doubled so the escapes cannot be confused with text. Whether any was."""
    if all(char in _KEPT or char.isprintable() for char in text):
        return text, False
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif char in _KEPT or char.isprintable():
            out.append(char)
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out), True
