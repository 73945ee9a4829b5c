"""Permission modes: what the agent may do without asking, chosen per session."""

from __future__ import annotations

from enum import Enum


class Mode(str, Enum):
    DEFAULT = "default"
    ACCEPT_EDITS = "accept-edits"
    PLAN = "plan"
    BYPASS = "bypass"


MODE_DESCRIPTIONS: dict[Mode, tuple[str, str]] = {
    Mode.DEFAULT: ("Default", "Ask before every edit and command."),
    Mode.ACCEPT_EDITS: ("Accept edits", "Edit files in the workspace without asking; ask before commands."),
    Mode.PLAN: ("Plan", "Read-only: explore and plan; edits and commands are refused."),
    Mode.BYPASS: ("Bypass", "No prompts, except for sensitive paths, outside writes and dangerous commands."),
}
# Bypass where no sandbox runs commands (only with ``allow_unsandboxed_bypass: true``).
UNSANDBOXED_BYPASS = ("Bypass (no sandbox)", "No prompts and no sandbox: every command runs with your rights, unasked, "
                      "except what acp-hermes rates dangerous or cannot see through.")
