"""The skill tools: ``skills_list`` and ``skill_view`` read the skills store, ``skill_manage`` changes it.

Changes follow the memory tool's path: the store prepares the change (validated and scanned),
the user reviews the diff through the state gate, and the context's checked ``write_state``
applies it under the store's lock, refusing it if a file changed in between; the store records it
in the skills history with the session, and the turn's checkpoint is taken first (``/rollback``
puts skills back too). ``patch`` matches with the file ``patch`` tool's matcher
(``tools.diffs.replace_text``), so both report misses and repeats the same way.

``skill_view`` counts a view in the usage sidecar (a queue put: nothing waits for the write). A
skill the lifecycle archived is not listed; viewing it by name offers to restore it, asked like a
skill write.

The store is the session's ``services.skills``. Until ``ToolServices`` declares that field it is
read by name (``_store``), and a session without a store gets a clear error.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from acp_hermes_memory.skills import ACTIONS, SUPPORT_DIRS, SkillChange, SkillError, SkillInfo, SkillStore, SkillView
from acp_hermes_memory.text import one_line
from acp_hermes_tools.context import ToolContext, ToolScope
from acp_hermes_tools.contracts import DiffDisplay, Display, FileChange, Location, PermissionDenied, TextDisplay
from acp_hermes_tools.diffs import replace_text
from acp_hermes_tools.registry import Access, Guidance, Presentation, Tool, ToolError, ToolResult

_LIST_DESCRIPTION_CHARS = 160
# A listing longer than this shows names only: more is more than the model reads, and tool output
# is scanned for injection at about a microsecond a character.
LIST_BUDGET_CHARS = 12_000
_TITLE_CHARS = 60

LIST_DESCRIPTION = (
    "List the skills you can load: reusable procedures saved from earlier work (yours, or shared with you), "
    "each with a one-line description, grouped by category. Check it before a task that a saved procedure "
    "may cover, then load the skill with skill_view."
)

VIEW_DESCRIPTION = (
    "Load a skill: its SKILL.md instructions (default), or one of its supporting files by file_path "
    "(e.g. 'references/api.md'; the files are listed with the skill). Follow the loaded instructions. "
    "Use 'category/name' when a name exists in two categories."
)

MANAGE_DESCRIPTION = f"""\
Create and maintain skills: procedures worth reusing in future sessions. Save one after a tricky \
task succeeded or the user taught you a workflow; fix one at once when you find it wrong or out of date.

A skill is a folder with SKILL.md: YAML frontmatter, then Markdown instructions:
---
name: deploy-staging
description: Deploy the web app to staging and check it. Use when asked to ship to staging.
version: 1.0.0
metadata:
  hermes:
    tags: [deploy]
---
# Deploy to staging
1. ...

Rules: name is lowercase letters, digits, '.', '_', '-' (at most 64) and equals the frontmatter name; the \
description (at most 1,024 characters) says what it does and when to use it. Supporting files go under \
{", ".join(f"{d}/" for d in SUPPORT_DIRS)}. Never put secrets or instructions to ignore the user in a \
skill: content is scanned and refused if it looks like prompt injection or exfiltration. The user sees \
each change as a diff and may refuse it. Skills from read-only folders cannot be changed.

Actions:
- create: name, content (the whole SKILL.md), optional category (one folder name).
- edit: name, content: rewrite the whole SKILL.md.
- patch: name, old_string, new_string, optional replace_all and file_path (default SKILL.md): \
old_string must match exactly once unless replace_all.
- delete: name: remove the skill and all its files.
- write_file: name, file_path, content: create or replace a supporting file.
- remove_file: name, file_path.\
"""

_NAME = {"type": "string", "description": "The skill's name, or 'category/name' when the name is in two categories."}

LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"category": {"type": "string", "description": "Only this category."}},
    "additionalProperties": False,
}

VIEW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": _NAME,
        "file_path": {
            "type": "string",
            "description": "A supporting file to load instead of SKILL.md, e.g. 'references/api.md'.",
        },
    },
    "required": ["name"],
    "additionalProperties": False,
}

MANAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS)},
        "name": _NAME,
        "content": {
            "type": "string",
            "description": "create/edit: the whole SKILL.md (frontmatter and body); write_file: the file's text.",
        },
        "category": {"type": "string", "description": "create: the category folder (optional)."},
        "old_string": {"type": "string", "description": "patch: the exact text to replace."},
        "new_string": {"type": "string", "description": "patch: the replacement text."},
        "replace_all": {
            "type": "boolean",
            "default": False,
            "description": "patch: replace every occurrence instead of requiring exactly one.",
        },
        "file_path": {
            "type": "string",
            "description": "patch (default SKILL.md), write_file, remove_file: e.g. 'references/api.md'.",
        },
    },
    "required": ["action", "name"],
    "additionalProperties": False,
}


def _store(scope: ToolScope) -> SkillStore | None:
    """The session's skills store, or None when the session has none."""
    return scope.services.skills


def _require_store(ctx: ToolContext) -> SkillStore:
    store = _store(ctx.scope)
    if store is None:
        raise ToolError("skills are not available in this session.")
    return store


# --- skills_list -------------------------------------------------------------------------------


def present_list(args: dict[str, Any], scope: ToolScope) -> Presentation:
    category = args.get("category")
    return Presentation(f"List skills: {category}" if isinstance(category, str) else "List skills")


async def skills_list(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    store = _require_store(ctx)
    category = args.get("category")
    statuses = await anyio.to_thread.run_sync(store.statuses, category)
    skills = [status.info for status in statuses]
    categories = sorted({info.category for info in skills if info.category is not None})
    raw = {"count": len(skills), "categories": categories}
    if skills:
        notes = {s.info.qualified_name: note for s in statuses if (note := status_note(s.state, s.pinned))}
        return ToolResult(format_listing(skills, notes), raw_output=raw)
    if category is None:
        text = "No skills yet. Save a reusable procedure with skill_manage(action='create')."
    else:
        known = ", ".join(await anyio.to_thread.run_sync(store.categories)) or "none"
        text = f"No skills in category {category!r}. Categories: {known}."
    return ToolResult(text, raw_output=raw)


def status_note(state: str, pinned: bool) -> str:
    """What a listing adds to a skill's line: "stale", "pinned", both or nothing."""
    return ", ".join(word for word, shown in (("stale", state == "stale"), ("pinned", pinned)) if shown)


def format_listing(skills: Sequence[SkillInfo], notes: Mapping[str, str] | None = None) -> str:
    """Names and descriptions grouped by category, uncategorized first; names only when that is too long.
    ``notes``: a word or two after a skill's description, by qualified name (its state)."""
    notes = notes or {}
    count = f"{len(skills)} skill{'' if len(skills) == 1 else 's'}"
    groups = [(category, list(group)) for category, group in itertools.groupby(skills, key=_category)]
    lines = [f"{count} (load one with skill_view(name)):"]
    for category, group in groups:
        lines.append(f"\n{category or '(no category)'}:")
        lines += [f"- {info.name}: {one_line(info.description, _LIST_DESCRIPTION_CHARS)}"
                  + (f" ({notes[info.qualified_name]})" if info.qualified_name in notes else "") for info in group]
    full = "\n".join(lines)
    if len(full) <= LIST_BUDGET_CHARS:
        return full
    lines = [f"{count}, names only (skills_list(category=...) adds the descriptions of one category):"]
    for category, group in groups:
        lines.append(f"{category or '(no category)'} ({len(group)}): {', '.join(info.name for info in group)}")
    return "\n".join(lines)


def _category(info: SkillInfo) -> str | None:
    return info.category


# --- skill_view --------------------------------------------------------------------------------


def present_view(args: dict[str, Any], scope: ToolScope) -> Presentation:
    name, file_path = str(args.get("name", "")), args.get("file_path")
    title = f"Load skill {name}" + (f": {file_path}" if isinstance(file_path, str) else "")
    store = _store(scope)
    try:
        location = () if store is None else (Location(str(store.find(name).skill_file)),)
    except SkillError:
        location = ()
    return Presentation(one_line(title, _TITLE_CHARS + 20), location)


async def skill_view(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    store = _require_store(ctx)
    try:
        view = await anyio.to_thread.run_sync(store.view, args["name"], args.get("file_path"))
    except SkillError as error:
        name = str(args["name"]).rpartition("/")[2]
        archived = await anyio.to_thread.run_sync(store.restorable, name)
        if archived is None:
            raise ToolError(str(error)) from None
        skill_file, text = archived
        try:  # offered to the user as the skill write it is: its SKILL.md appears again
            await ctx.authorize_state([FileChange(skill_file, None, text)])
        except PermissionDenied as refused:
            raise ToolError(f"The skill {name!r} was archived (unused for a long time) and was not restored: "
                            f"{refused}. The user can restore it with `/skills restore {name}`.") from None
        await ctx.write_state(skill_file, functools.partial(store.restore, name, session=ctx.session_id))
        view = await anyio.to_thread.run_sync(store.view, name, args.get("file_path"))
    store.record_use(view.info, "view")
    shown = view.info.skill_file if view.file_path is None else view.info.path / view.file_path
    return ToolResult(
        format_view(view),
        locations=(Location(str(shown)),),
        raw_output={"name": view.info.qualified_name, "file_path": view.file_path, "path": str(view.info.path)},
    )


def format_view(view: SkillView) -> str:
    """The skill as the model reads it: a short header, the text, and its supporting files."""
    info = view.info
    if view.file_path is not None:
        return f"Skill {info.qualified_name}, file {view.file_path}:\n\n{view.text}"
    origin = f" (read-only, from {info.source})" if info.read_only else ""
    details = [f"Skill: {info.qualified_name}{origin}", f"Description: {info.description}"]
    if view.version:
        details.append(f"Version: {view.version}")
    if view.tags:
        details.append(f"Tags: {', '.join(view.tags)}")
    if view.related_skills:
        details.append(f"Related skills: {', '.join(view.related_skills)}")
    parts = ["\n".join(details), view.text.strip()]
    if view.files:
        listed = "\n".join(f"- {path}" for path in view.files)
        parts.append(f"Supporting files (load with skill_view(name, file_path)):\n{listed}")
    return "\n\n".join(parts)


# --- skill_manage ------------------------------------------------------------------------------

_VERBS = {
    "create": "Create skill",
    "edit": "Rewrite skill",
    "patch": "Patch skill",
    "delete": "Delete skill",
    "write_file": "Add file to skill",
    "remove_file": "Remove file from skill",
}


def present_manage(args: dict[str, Any], scope: ToolScope) -> Presentation:
    verb = _VERBS.get(str(args.get("action")), "Change skill")
    name, file_path = str(args.get("name", "")), args.get("file_path")
    target = f"{name}/{file_path}" if isinstance(file_path, str) and args.get("action") != "create" else name
    return Presentation(one_line(f"{verb}: {target}", _TITLE_CHARS + 20))


async def skill_manage(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    store = _require_store(ctx)
    try:
        change = await anyio.to_thread.run_sync(prepare_change, store, args)
    except SkillError as error:
        raise ToolError(str(error)) from None
    await ctx.authorize_state([FileChange(edit.path, edit.old_text, edit.new_text) for edit in change.files])
    if ctx.scope.before_change is not None:  # the turn's checkpoint: its /rollback puts the skill back too
        await ctx.scope.before_change()
    try:
        await ctx.write_state(change.files[0].path, functools.partial(store.apply, session=ctx.session_id), change)
    except SkillError as error:  # a file changed on disk after the user saw the diff
        raise ToolError(str(error)) from None
    return _change_result(change)


def prepare_change(store: SkillStore, args: dict[str, Any]) -> SkillChange:
    """The store's prepared change for one ``skill_manage`` call (blocking: run it in a thread)."""
    action, name = args["action"], args["name"]
    if action == "create":
        return store.prepare_create(name, _needed(args, "content", action), args.get("category"))
    if action == "edit":
        return store.prepare_edit(name, _needed(args, "content", action))
    if action == "patch":
        old, new = _needed(args, "old_string", action), _needed(args, "new_string", action)
        return store.prepare_patch(
            name, old, new, bool(args.get("replace_all")), args.get("file_path"), replace=_replace
        )
    if action == "delete":
        return store.prepare_delete(name)
    if action == "write_file":
        return store.prepare_write_file(name, _needed(args, "file_path", action), _needed(args, "content", action))
    if action == "remove_file":
        return store.prepare_remove_file(name, _needed(args, "file_path", action))
    raise SkillError(f"unknown action {action!r}: use one of {', '.join(ACTIONS)}.")


def _needed(args: dict[str, Any], key: str, action: str) -> str:
    value = args.get(key)
    if not isinstance(value, str):
        raise SkillError(f"action {action!r} needs {key!r}.")
    return value


def _replace(label: str, text: str, old: str, new: str, replace_all: bool) -> str:
    """The file ``patch`` tool's matcher (its ``PatchError`` is a ``ValueError``, as the store expects)."""
    return replace_text(label, text, old, new, replace_all=replace_all).text


def _change_result(change: SkillChange) -> ToolResult:
    display: list[Display] = []
    locations: list[Location] = []
    for edit in change.files:
        display.append(DiffDisplay(str(edit.path), edit.old_text, edit.new_text or ""))
        if edit.new_text is not None:
            locations.append(Location(str(edit.path)))
    if change.action == "delete":
        display.append(TextDisplay(f"Deleted {change.skill_dir}"))
    text = (
        f"{change.message} Saved on disk: skills_list and skill_view show it from now on (this session's "
        "system prompt does not change). Done: do not repeat this call."
    )
    raw = {"done": True, "action": change.action, "name": change.name, "path": str(change.skill_dir)}
    return ToolResult(text, display=tuple(display), locations=tuple(locations), raw_output=raw)


SKILLS_LIST_TOOL = Tool(
    name="skills_list",
    description=LIST_DESCRIPTION,
    schema=LIST_SCHEMA,
    handler=skills_list,
    kind="read",
    access=Access.READ,
    parallel_safe=True,
    present=present_list,
    toolsets=("skills",),
    reviewed=True,
)

SKILL_VIEW_TOOL = Tool(
    name="skill_view",
    description=VIEW_DESCRIPTION,
    schema=VIEW_SCHEMA,
    handler=skill_view,
    kind="read",
    access=Access.READ,
    parallel_safe=True,
    present=present_view,
    toolsets=("skills",),
    reviewed=True,
)

SKILL_MANAGE_TOOL = Tool(
    name="skill_manage",
    description=MANAGE_DESCRIPTION,
    schema=MANAGE_SCHEMA,
    handler=skill_manage,
    kind="edit",
    access=Access.STATE,
    parallel_safe=False,
    present=present_manage,
    trusted_output=True,
    guidance=Guidance(80, section=(
        "# Skills\n"
        "Skills are procedures you and the user saved for recurring work. When a task matches a skill "
        "in the index below, load it with `skill_view` before you start and follow it. After a task "
        "that took real trial and error, or when the user shows you how they want something done, save "
        "the procedure with `skill_manage` (create, or patch the skill you used when it was wrong or "
        "incomplete)."
    )),
    delegable=False,  # the parent's skills are the parent's to change
    reviewed=True,
    saves="skills",
)

SKILL_TOOLS = [SKILLS_LIST_TOOL, SKILL_VIEW_TOOL, SKILL_MANAGE_TOOL]
