"""The skills' upkeep around sessions: the daily lifecycle run and its one notice, the curation
pass, archived skills offered back when a prompt matches them, and what ``/skills`` shows and does.

``after_open`` runs beside a session that just opened (never in its way, nor in the way of its first
prompt's first chunk: ``Runtime.wait_for_first_response``): the lifecycle
(``memory.skills.lifecycle.run_daily``, at most once a day for a ``HERMES_HOME``) and, when that
run was this process's and ``skills.curator`` is on, the curation pass (``core.turn.start_curation``).
What moved is told once, in the chat of the session whose opening ran it; the next sessions' indexes
show it (a stale skill marked, an archived one gone).

An archived skill is offered back when a prompt names it closely: an in-memory FTS5 index of the
prompt (stemmed as ``/search``'s is) is asked for every word of the skill's name, and for a one-word
name also a word of its description; each skill is offered at most once a session.
"""

from __future__ import annotations

import logging
import re
import weakref
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from acp_hermes.core.user_prompt import PromptPart, TextPart
from acp_hermes_memory.skills import SkillError, SkillStatus, SkillStore
from acp_hermes_memory.skills.archive import ArchivedSkill
from acp_hermes_memory.text import counted, one_line

if TYPE_CHECKING:
    from acp_hermes.core.session import Session

log = logging.getLogger(__name__)

_WORD = re.compile(r"[a-z0-9]+")
_STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "how", "in", "into", "is", "it", "of", "on",
    "or", "the", "this", "that", "to", "use", "used", "uses", "using", "when", "with", "what", "which", "your",
    "you",
})
_offered: weakref.WeakKeyDictionary[Session, set[str]] = weakref.WeakKeyDictionary()


async def after_open(session: Session, state_file: Path) -> None:
    """The day's lifecycle run, if due, told in ``session``'s chat; then the curation pass if enabled."""
    from acp_hermes_memory.skills.lifecycle import Outcome, run_daily

    store = session.services.tools.services.skills
    if store is None or session.subagent is not None:
        return
    settings = session.services.settings.skills

    def when_quiet() -> Outcome | None:  # after a first prompt's first chunk (Runtime.wait_for_first_response)
        session.services.runtime.wait_for_first_response()
        return run_daily(store, state_file, settings.stale_after_days, settings.archive_after_days)

    try:
        outcome = await anyio.to_thread.run_sync(when_quiet)
    except OSError as error:
        log.warning("the skills' lifecycle could not run: %s", error)
        return
    if outcome is None:
        return
    notice = outcome.announcement(settings.stale_after_days, settings.archive_after_days)
    if notice:
        session.services.notify(notice)
    if settings.curator:
        from acp_hermes.core.turn import start_curation

        start_curation(session.state, session.services)


async def offer_archived(session: Session, parts: Sequence[PromptPart]) -> None:
    """Tell the user of archived skills this prompt matches closely (each once a session)."""
    store = session.services.tools.services.skills
    text = " ".join(part.text for part in parts if isinstance(part, TextPart))
    if store is None or not text.strip():
        return
    matches = await anyio.to_thread.run_sync(archived_matches, store, text)
    offered = _offered.setdefault(session, set())
    fresh = [skill for skill in matches if skill.name not in offered]
    if not fresh:
        return
    offered.update(skill.name for skill in fresh)
    names = ", ".join(f"`{skill.name}`" for skill in fresh)
    session.services.notify(
        f"An archived skill may help here: {names} — `/skills restore {fresh[0].name}` brings it back."
        if len(fresh) == 1 else f"Archived skills may help here: {names} — `/skills restore NAME` brings one back.")


def archived_matches(store: SkillStore, text: str) -> list[ArchivedSkill]:
    """The archived skills ``text`` names closely (see the module docstring). Blocking."""
    import sqlite3

    archived = store.archived()
    if not archived:
        return []
    seen: set[str] = set()
    found = []
    try:
        with sqlite3.connect(":memory:") as db:
            db.execute("CREATE VIRTUAL TABLE prompt USING fts5(body, tokenize='porter unicode61')")
            db.execute("INSERT INTO prompt VALUES (?)", (text[:20_000],))

            def names(words: Sequence[str], joiner: str) -> bool:
                query = f" {joiner} ".join(f'"{word}"' for word in words)
                return db.execute("SELECT 1 FROM prompt WHERE prompt MATCH ?", (query,)).fetchone() is not None

            for skill in archived:
                if skill.name in seen:
                    continue
                seen.add(skill.name)
                words = [w for w in _WORD.findall(skill.name.lower()) if len(w) >= 3 and w not in _STOP_WORDS]
                if not words or not names(words, "AND"):
                    continue
                described = [w for w in dict.fromkeys(_WORD.findall(skill.description.lower()))
                             if len(w) >= 4 and w not in _STOP_WORDS and w not in words]
                if len(words) == 1 and not (described and names(described[:30], "OR")):
                    continue
                found.append(skill)
    except sqlite3.Error as error:  # no FTS5 in this SQLite: nothing is offered
        log.debug("archived skills cannot be matched: %s", error)
        return []
    return found


def listing_lines(store: SkillStore) -> list[str] | None:
    """``/skills``: every skill with its state, pin and use, then the archived and quarantined ones
    (None when there is nothing at all). Blocking."""
    store.usage.flush()  # this process's latest uses count
    statuses = store.statuses()
    archived = store.archived()
    quarantined = store.quarantined()
    if not statuses and not archived and not quarantined:
        return None
    lines = [f"Skills ({len(statuses)}); run one with `/<name> <what to do>`, steer them with "
             "`/skills pin|unpin|archive|restore NAME`:"]
    lines += [f"- `{status.info.qualified_name}` — {one_line(status.info.description, 100)}{_facts(status)}"
              for status in statuses]
    if archived:
        lines.append(f"\nArchived ({len(archived)}; `/skills restore NAME` brings one back):")
        lines += [f"- `{skill.name}` — {one_line(skill.description, 100)}" for skill in archived]
    if quarantined:
        lines.append(f"\nQuarantined project {'skill' if len(quarantined) == 1 else 'skills'} (not loaded):")
        lines += [f"- `{item.info.qualified_name}` ({item.info.path}) — {item.reason}" for item in quarantined]
    return lines


def _facts(status: SkillStatus) -> str:
    """" · stale · pinned · 3 uses, last 2026-05-01 · by the agent"."""
    usage = status.usage
    uses = usage.use_count + usage.view_count
    last = usage.last_use
    facts = [word for word, shown in (("stale", status.state == "stale"), ("pinned", status.pinned)) if shown]
    facts.append(f"{counted(uses, 'use')}, last {datetime.fromtimestamp(last):%Y-%m-%d}" if last else "never used")
    facts.append({"agent": "by the agent", "user": "yours", "external": "read-only",
                  "project": "the project's"}.get(status.created_by, status.created_by))
    return "".join(f" · {fact}" for fact in facts)


def steer(store: SkillStore, action: str, name: str, session_id: str | None) -> str:
    """``/skills pin|unpin|archive|restore NAME``: done as the user's own change; the reply. Blocking."""
    mine = store.with_author("user")
    try:
        if action in ("pin", "unpin"):
            info = mine.set_pinned(name, action == "pin")
            return (f"Pinned `{info.qualified_name}`: it never goes stale nor is archived." if action == "pin"
                    else f"Unpinned `{info.qualified_name}`: it ages like any skill the agent created.")
        if action == "archive":
            moved = mine.archive(name, session=session_id)
            bare = name.rpartition("/")[2]
            return (f"Archived `{name}` (moved to `{moved}`): it leaves the index of new sessions. "
                    f"`/skills restore {bare}` brings it back.")
        restored = mine.restore(name, session=session_id)
        return f"Restored `{name}` to `{restored}`: new sessions have it in their index again."
    except SkillError as error:
        return f"Nothing changed: {error}"
    except OSError as error:
        return f"Nothing changed: {error.strerror or error}."
