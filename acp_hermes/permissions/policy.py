"""The permission policy: for each side effect or read a tool wants, allow, ask or refuse, and why.

``decide`` is a pure function of the request (one of ``tools.contracts.Request``: one branch per
kind), the mode, the grants in force and the session's surroundings (no I/O, no asking): tests can
table it, and the gate (``gate.py``) only carries out its verdict. A command arrives with its
analysis (``permissions.shell.analysis``): its risk and grant keys are read from there. A verdict
that asks also says what answering "always" would remember (``GrantOffer``); None means the
question may only be answered once (dangerous commands, writes outside the workspace or to
sensitive paths).

Reads: the workspace is free to read; a path that holds secrets (private keys, credentials,
environment files, the agent's own configuration) asks every time in every mode; any other path
outside the workspace asks in ``default`` mode, where "always" covers its directory for the session.

Commands and the OS sandbox: where the session can sandbox commands, the classification only
decides when to ask, and the sandbox holds. A command rated normal then runs without a question
in ``accept-edits`` and ``bypass``, a grant given there covers it only inside the sandbox, and a
command that needs to leave it (the network, writes outside the workspace, writes to what the
sandbox keeps read-only because it runs later — a repository's ``.git``, ``.envrc`` …) always
asks, saying why. Without a sandbox, grants given without one run commands as they are, and
``bypass`` — offered there only when the user's own config allows it (``core.choices``) — runs
unasked only what the analysis can see in full: inline interpreter code, programs named at run
time, programs without rules given another program's name and other opaque forms ask. That, and the
refusal of catastrophic commands, is a courtesy there, not a boundary: a spelling no rule knows runs.

Background jobs: input for a job that runs outside the sandbox (``JobInput``) asks in every
mode but ``plan``, which refuses it — the job's own state is past any rule — unless the user allowed
all input to that very job for the session. Input for a sandboxed job is decided as the command it is.

Grants are allowlists: a remembered key covers an invocation only as its grant keys name it —
the same executable, no environment assignments, only options known to be harmless for it.

MCP tools: annotations are the server's claims. A server's tools ask (in ``default`` and
``accept-edits``) until the user trusts that server; only then may its read-only tools run
unasked, and only a trusted server's read-only tools run in ``plan`` mode.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from acp_hermes.permissions.modes import Mode
from acp_hermes_memory.values import value
from acp_hermes_tools.contracts import (
    Command,
    Confirm,
    Edit,
    External,
    JobInput,
    Read,
    Request,
    Restore,
    State,
    Surroundings,
)
from acp_hermes_tools.paths import is_within

if TYPE_CHECKING:
    from acp_hermes.permissions.shell.analysis import CommandAnalysis
    from acp_hermes.permissions.shell.rating import CommandRisk

Outcome = Literal["allow", "ask", "refuse"]
GrantScope = Literal["edits", "state", "commands", "reads", "tools", "jobs"]

# What the model is told of a refusal carries instructions for it; the user reads their own words
# (``Verdict.shown``, ``PermissionDenied.shown``).
DECLINED = "The user declined this action, so it did not run. Do not retry it; ask the user how to proceed."
DECLINED_SHOWN = "Not done: you rejected it."
PLAN_REFUSAL = (
    "Refused: the session is in plan mode, which is read-only. Do not try to edit files or run commands; "
    "explore with the read-only tools and present a plan. The user will switch modes to carry it out."
)
PLAN_SHOWN = "Not done: the session is in plan mode, which is read-only (switch modes to make changes)."


def tool_key(request: External) -> str:
    """How "always" for an MCP tool is remembered beside command grants (no command looks like it)."""
    return f"mcp:{request.server}/{request.tool}"


def trust_key(server: str) -> str:
    """How trusting a whole MCP server (its read-only annotations) is remembered."""
    return f"mcp-server:{server}"


SANDBOXED = "sandbox:"  # the prefix of a grant given in the sandbox: it never covers a command outside it


def sandboxed_key(key: str) -> str:
    return SANDBOXED + key


@value
class Grants:
    """What the user answered "always" to, as far as this session can see."""

    edits: bool | None = None  # True: allow all edits in the workspace; False: reject all; None: ask
    allowed_state: frozenset[str] = frozenset()  # State subjects allowed for the session
    rejected_state: frozenset[str] = frozenset()
    allowed_commands: frozenset[str] = frozenset()
    rejected_commands: frozenset[str] = frozenset()
    readable_dirs: frozenset[Path] = frozenset()  # outside the workspace: reading allowed this session
    unreadable_dirs: frozenset[Path] = frozenset()  # ... and refused this session
    allowed_jobs: frozenset[str] = frozenset()  # JobInput keys: all input allowed this session
    rejected_jobs: frozenset[str] = frozenset()


@value
class GrantOffer:
    """What answering "always" remembers, and how the two "always" options read. ``rejected_keys``,
    where given, is what "always reject" remembers instead (a rejection holds everywhere)."""

    scope: GrantScope
    keys: tuple[str, ...]
    allow_label: str
    reject_label: str
    rejected_keys: tuple[str, ...] | None = None


@value
class Verdict:
    outcome: Outcome
    reasons: tuple[str, ...] = ()  # why: shown in the question's title and the log
    message: str = ""  # for a refusal: what the model is told
    shown: str = ""  # ... and what the user is told
    offer: GrantOffer | None = None  # for a question: the "always" options, if any
    sandboxed: bool = False  # a command allowed runs inside the OS sandbox
    network: bool = False  # ... with the network switched on inside it


def decide(request: Request, mode: Mode, grants: Grants, where: Surroundings) -> Verdict:
    if isinstance(request, Edit):
        return _decide_edits(request.paths, mode, grants, where)
    if isinstance(request, Restore):
        return _decide_restore(request, mode, grants, where)
    if isinstance(request, Command):
        return _decide_command(request, mode, grants, where)
    if isinstance(request, Read):
        return _decide_read(request, mode, grants, where)
    if isinstance(request, External):
        return _decide_external(request, mode, grants)
    if isinstance(request, JobInput):
        return _decide_job_input(request, mode, grants, where)
    if isinstance(request, Confirm):  # a question put for its own sake: asked in every mode
        return Verdict("ask")
    return _decide_state(request, mode, grants)


def _analysis(request: Command | JobInput) -> CommandAnalysis:
    """A shell line is decided on its analysis, which the gate puts in the request."""
    from acp_hermes.permissions.shell.analysis import CommandAnalysis

    analysis = request.analysis
    if not isinstance(analysis, CommandAnalysis) or analysis.line != request.line:
        raise TypeError("a shell line is decided on its own analysis (permissions.shell.analysis.analyse)")
    return analysis


def _refuse(message: str, *reasons: str, shown: str) -> Verdict:
    return Verdict("refuse", reasons, message, shown)


def _decide_edits(paths: tuple[Path, ...], mode: Mode, grants: Grants, where: Surroundings) -> Verdict:
    from acp_hermes_tools.sensitive_paths import sensitive_path_reason  # rule tables: kept off start-up

    if mode is Mode.PLAN:
        return _refuse(PLAN_REFUSAL, "plan mode", shown=PLAN_SHOWN)
    concerns = []
    for path in paths:
        if not is_within(path, where.roots):
            concerns.append(f"{path} is outside the workspace")
        reason = sensitive_path_reason(path, where.home, hermes_home=where.hermes_home)
        if reason:
            concerns.append(f"{path}: {reason}")
    if concerns:
        return Verdict("ask", tuple(concerns))
    if grants.edits is False:
        return _refuse("The user chose to reject all edits in this session. " + DECLINED, "edits rejected",
                       shown="Not done: you rejected all edits for this session.")
    if grants.edits:
        return Verdict("allow", ("session grant",))
    if mode in (Mode.ACCEPT_EDITS, Mode.BYPASS):
        return Verdict("allow", (f"{mode.value} mode",))
    offer = GrantOffer(
        "edits", (), "Allow all edits in this workspace for this session", "Reject all edits for this session"
    )
    return Verdict("ask", offer=offer)


def _decide_restore(request: Restore, mode: Mode, grants: Grants, where: Surroundings) -> Verdict:
    """A restore is decided as the edit it is, never remembered: where the edit would ask, the question
    is the restore's own (``Restore.choices``: allow it, or keep things as they are, under the plain
    title), and a restore the client asked for holds unasked (the user asked there)."""
    verdict = _decide_edits(request.paths, mode, grants, where)
    if verdict.outcome != "ask":
        return verdict
    if request.requested:
        return Verdict("allow", ("the client asked for this restore",))
    return Verdict("ask")


def _decide_read(request: Read, mode: Mode, grants: Grants, where: Surroundings) -> Verdict:
    from acp_hermes_tools.sensitive_paths import sensitive_path_reason  # rule tables: kept off start-up

    paths = request.read_paths  # a hard link to a secret is decided as a read of that secret
    secrets = [
        reason if len(paths) == 1 else f"{path}: {reason}"
        for path in paths
        if (reason := sensitive_path_reason(path, where.home, hermes_home=where.hermes_home))
    ]
    if secrets:
        return Verdict("ask", tuple(secrets))
    if request.purpose == "edit":
        return Verdict("allow", ("the edit asks by itself",))
    outside = [path for path in paths
               if not is_within(path, where.roots) and not is_within(path, grants.readable_dirs)]
    if not outside:
        return Verdict("allow", ("inside the workspace or a directory allowed this session",))
    if any(is_within(path, grants.unreadable_dirs) for path in outside):
        return _refuse("The user chose to reject reads of this directory in this session. " + DECLINED,
                       "reads rejected", shown="Not read: you rejected reads of this directory for this session.")
    if mode is not Mode.DEFAULT:
        return Verdict("allow", (f"{mode.value} mode",))
    directories = tuple(dict.fromkeys(str(path if request.purpose == "directory" else path.parent) for path in outside))
    label = directories[0] if len(directories) == 1 else f"{len(directories)} directories"
    offer = GrantOffer("reads", directories, f"Always allow reading {label} this session",
                       f"Reject reading {label} this session")
    return Verdict("ask", tuple(f"{path} is outside the workspace" for path in outside), offer=offer)


def _decide_command(request: Command, mode: Mode, grants: Grants, where: Surroundings) -> Verdict:
    analysis = _analysis(request)
    risk = analysis.risk
    if risk.level == "catastrophic":
        return _refuse(
            f"Refused: this command is never allowed ({', '.join(risk.reasons)}). Do not try to run it "
            "in another form.",
            *risk.reasons,
            shown=f"Not run: this command is never allowed ({', '.join(risk.reasons)}).",
        )
    if mode is Mode.PLAN:
        return _refuse(PLAN_REFUSAL, "plan mode", shown=PLAN_SHOWN)
    grantable = analysis.grant
    keys, why_not = grantable.keys, tuple(filter(None, (grantable.why_not,)))
    rejected = [key for key in keys or () if key in grants.rejected_commands]
    if rejected:
        return _refuse(f"The user chose to always reject `{rejected[0]}`. " + DECLINED, f"{rejected[0]} rejected",
                       shown=f"Not run: you chose to always reject `{rejected[0]}`.")
    if where.sandbox:
        return _decide_sandboxed(request, risk, keys, why_not, mode, grants, where)
    if risk.level == "dangerous":
        return Verdict("ask", risk.reasons)
    if mode is Mode.BYPASS:
        if risk.opaque:  # no sandbox holds what the analysis cannot see
            return Verdict("ask", tuple(f"runs what acp-hermes cannot see in full ({why})" for why in risk.opaque))
        return Verdict("allow", ("bypass mode",))
    if keys and all(key in grants.allowed_commands for key in keys):
        return Verdict("allow", (f"remembered grant(s) {', '.join(keys)}",))
    if not keys:
        return Verdict("ask", why_not)
    label = ", ".join(f"`{key}`" for key in keys)
    offer = GrantOffer(
        "commands", keys, f"Always allow {label} in this project", f"Always reject {label} in this project"
    )
    return Verdict("ask", offer=offer)


def _decide_job_input(request: JobInput, mode: Mode, grants: Grants, where: Surroundings) -> Verdict:
    """Input for a job outside the sandbox asks in every mode but ``plan`` (refused): what the job makes of
    it runs unconfined, and no rule sees the job's state — as for a command that leaves the sandbox, or
    one whose content cannot be seen in full without one. Only the user's "always" for that very job
    (this session) lets it through, and even then a dangerous line asks and a catastrophic one is refused."""
    risk = _analysis(request).risk
    if risk.level == "catastrophic":
        return _refuse(
            f"Refused: this input is never allowed ({', '.join(risk.reasons)}). Do not try to send it "
            "in another form.",
            *risk.reasons,
            shown=f"Not sent: this input is never allowed ({', '.join(risk.reasons)}).",
        )
    if mode is Mode.PLAN:
        return _refuse(PLAN_REFUSAL, "plan mode", shown=PLAN_SHOWN)
    name, key = request.job.job_id, request.key
    if key in grants.rejected_jobs:
        return _refuse(f"The user chose to reject all input to {name} in this session. " + DECLINED,
                       f"input to {name} rejected",
                       shown=f"Not sent: you rejected all input to {name} for this session.")
    outside = f"{name} runs {'outside the sandbox' if where.sandbox else 'without an OS sandbox'}"
    reasons = tuple(dict.fromkeys((outside, *risk.reasons)))
    if risk.level == "dangerous":
        return Verdict("ask", reasons)
    if key in grants.allowed_jobs:
        return Verdict("allow", (f"all input to {name} allowed this session",))
    offer = GrantOffer("jobs", (key,), f"Always allow input to {name} in this session",
                       f"Reject all input to {name} in this session")
    return Verdict("ask", reasons, offer=offer)


def _decide_sandboxed(
    request: Command, risk: CommandRisk, keys: tuple[str, ...] | None, why_not: tuple[str, ...], mode: Mode,
    grants: Grants, where: Surroundings,
) -> Verdict:
    leaves = request.outside_sandbox or risk.outside_writes or risk.scratch_writes or risk.protected_writes
    if leaves:  # asks; then runs unconfined
        shared = [f"writes outside the workspace ({path})" for path in risk.scratch_writes[:2]]
        kept = [f"writes {path}, which the sandbox keeps read-only" for path in risk.protected_writes
                if not any(path in reason for reason in risk.reasons)][:2]
        reasons = tuple(dict.fromkeys((*risk.reasons, *shared, *kept, "runs outside the sandbox")))
        if not keys or not _only_writes_the_repository(request, risk):
            return Verdict("ask", reasons)
        # ``git commit`` and the like: the user may trust the command outside the sandbox for good.
        if all(key in grants.allowed_commands for key in keys):
            return Verdict("allow", (f"remembered grant(s) {', '.join(keys)}, outside the sandbox",))
        label = ", ".join(f"`{key}`" for key in keys)
        offer = GrantOffer("commands", keys, f"Always allow {label} outside the sandbox in this project",
                           f"Always reject {label} in this project")
        return Verdict("ask", reasons, offer=offer)
    if risk.network and not where.network_allowed:  # asks, and runs in the sandbox with the network on
        return Verdict("ask", (*risk.reasons, "needs the network"), sandboxed=True, network=True)
    if risk.level == "dangerous":
        return Verdict("ask", risk.reasons, sandboxed=True, network=where.network_allowed)
    if mode in (Mode.ACCEPT_EDITS, Mode.BYPASS):
        return Verdict("allow", (f"{mode.value} mode, in the sandbox",), sandboxed=True)
    allowed = grants.allowed_commands
    if keys and all(key in allowed or sandboxed_key(key) in allowed for key in keys):
        return Verdict("allow", (f"remembered grant(s) {', '.join(keys)}, in the sandbox",), sandboxed=True)
    if not keys:
        return Verdict("ask", why_not, sandboxed=True)
    label = ", ".join(f"`{key}`" for key in keys)
    offer = GrantOffer(
        "commands", tuple(map(sandboxed_key, keys)), f"Always allow {label} in this project (in the sandbox)",
        f"Always reject {label} in this project", rejected_keys=keys,
    )
    return Verdict("ask", offer=offer, sandboxed=True)


def _only_writes_the_repository(request: Command, risk: CommandRisk) -> bool:
    """A plain git command that leaves the sandbox only because it writes the repository's ``.git``."""
    from acp_hermes.permissions.shell.programs.git import REPOSITORY

    return (risk.level == "normal" and not risk.network and not request.outside_sandbox and not risk.outside_writes
            and not risk.scratch_writes and set(risk.protected_writes) == {REPOSITORY})


def _decide_state(request: State, mode: Mode, grants: Grants) -> Verdict:
    subject = request.subject
    if not subject:
        raise ValueError("a store change is decided on its subject, which the gate finds from its paths")
    if mode is Mode.PLAN:
        return _refuse(PLAN_REFUSAL, "plan mode", shown=PLAN_SHOWN)
    if subject in grants.rejected_state:
        return _refuse(f"The user chose to reject changes to {subject} in this session. " + DECLINED,
                       f"{subject} rejected", shown=f"Not done: you rejected changes to {subject} for this session.")
    if subject in grants.allowed_state:
        return Verdict("allow", ("session grant",))
    if mode in (Mode.ACCEPT_EDITS, Mode.BYPASS):
        return Verdict("allow", (f"{mode.value} mode",))
    offer = GrantOffer("state", (subject,), f"Allow changes to {subject} for this session",
                       f"Reject changes to {subject} for this session")
    return Verdict("ask", offer=offer)


def _decide_external(request: External, mode: Mode, grants: Grants) -> Verdict:
    """MCP tools: a server's annotations are its own claims, believed only once the user trusts the
    server. Until then every tool asks in ``default`` and ``accept-edits`` (an MCP call is no file edit
    the editor could show) unless remembered, and none runs in ``plan`` mode."""
    trusted = trust_key(request.server) in grants.allowed_commands
    if request.read_only and trusted:
        return Verdict("allow", (f"read-only by its server, which the user trusts ({request.server})",))
    if mode is Mode.PLAN:
        return _refuse(PLAN_REFUSAL, "plan mode", shown=PLAN_SHOWN)
    key = tool_key(request)
    if key in grants.rejected_commands:
        return _refuse(f"The user chose to always reject {request.tool} of {request.server}. " + DECLINED,
                       f"{key} rejected",
                       shown=f"Not run: you chose to always reject {request.tool} of {request.server}.")
    if key in grants.allowed_commands:
        return Verdict("allow", (f"remembered grant {key}",))
    if mode is Mode.BYPASS:
        return Verdict("allow", ("bypass mode",))
    label = f"{request.tool} of {request.server}"
    if request.read_only:
        offer = GrantOffer("tools", (trust_key(request.server),),
                           f"Trust {request.server}: run its read-only tools without asking in this project",
                           f"Always reject {label} in this project", rejected_keys=(key,))
        return Verdict("ask", (f"{request.server} says it only reads; it is not trusted yet",), offer=offer)
    offer = GrantOffer("tools", (key,), f"Always allow {label} in this project",
                       f"Always reject {label} in this project")
    return Verdict("ask", offer=offer)
