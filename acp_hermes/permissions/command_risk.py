"""How risky a shell command line is, for the permission policy.

Pure functions of their arguments (no I/O). Commands are judged on what they really run, as
``shell_parse`` finds it: split at ``;``, ``&&``, pipes, subshells and substitutions,
looked through wrappers (``sudo``, ``env``, ``timeout``, ``xargs``, ``bash -c '…'``, ``eval`` …),
so quoting, prefixes and nesting do not hide what runs, and quoted prose
(``git commit -m "rm -rf /"``) is not mistaken for a command.

* ``assess_command`` sorts a line into ``normal``, ``dangerous`` (always ask the user, even
  where commands are otherwise allowed) and ``catastrophic`` (refused, even in bypass mode).
* ``command_keys`` names what a line runs (``git status``, ``npm run build``) so the user can
  grant it once; ``None`` means the line cannot be analysed safely and must always be asked.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from acp_hermes.permissions.path_risk import PROFILE_NAMES
from acp_hermes.permissions.shell_parse import (
    READERS,
    Command,
    Invocation,
    Parse,
    Reader,
    Word,
    family,
    look_through,
    names,
    option_value,
    parse_commands,
    program_name,
    program_source,
    skip_options,
)

RiskLevel = Literal["normal", "dangerous", "catastrophic"]

_RANK: dict[RiskLevel, int] = {"normal": 0, "dangerous": 1, "catastrophic": 2}
# Nesting beyond this limit is never needed by a real command, only by an attempt to hide
# one, so a line that exceeds it is refused rather than half-analysed.
_MAX_DEPTH = 10  # nested ``bash -c``/``eval`` payloads and runners


@dataclass(frozen=True, slots=True)
class CommandRisk:
    """The verdict on a command line; ``reasons`` are short phrases shown to the user."""

    level: RiskLevel
    reasons: tuple[str, ...] = ()


_ELEVATORS = frozenset({"sudo", "doas", "su", "pkexec", "run0"})


# ---------------------------------------------------------------------------------------------
# Paths
# ---------------------------------------------------------------------------------------------

_SYSTEM_DIRS = names(
    "bin boot dev etc home lib lib32 lib64 libx32 media mnt nix opt private proc root run sbin snap "
    "srv sys usr var Applications Library System Users"
)
_RAW_DISK = re.compile(
    r"/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|r?disk\d|md\d|dm-\d|mapper/.|disk/by-)", re.I
)
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero"})
_USER_HOME = re.compile(r"~([A-Za-z0-9._-]+)(/.*)?", re.S)


@dataclass(frozen=True)
class _Env:
    home: str
    roots: tuple[str, ...]


def _expand_home(text: str, home: str) -> str:
    for prefix in ("~", "$HOME", "${HOME}"):
        if text == prefix or text.startswith(prefix + "/"):
            return home + text[len(prefix) :]
    other = _USER_HOME.fullmatch(text)
    if other:
        base = posixpath.dirname(home) if posixpath.dirname(home) != "/" else "/home"
        return posixpath.join(base, other.group(1)) + (other.group(2) or "")
    return text


def _absolute(text: str, env: _Env) -> str | None:
    """``text`` as a normalised absolute path, or None when it is relative."""
    path = _expand_home(text.strip(), env.home)
    if not path.startswith("/"):
        return None
    return posixpath.normpath("/" + path.lstrip("/"))


def _vital_path(text: str, env: _Env) -> str | None:
    """Name the irreplaceable directory ``text`` denotes (/, home, a system dir), else None."""
    path = _expand_home(text.strip(), env.home)
    if not path.startswith("/"):
        return None
    path = "/" + path.lstrip("/")
    while path.endswith(("/*", "/.*")):  # a directory's whole contents count as the directory
        path = path[: path.rfind("/")] or "/"
    path = posixpath.normpath(path)
    home = posixpath.normpath(env.home)
    if path == "/":
        return "/"
    if path == home:
        return "the home directory"
    parent, name = posixpath.split(path)
    if parent == "/" and name in _SYSTEM_DIRS:
        return path
    if parent in ("/home", "/Users") or (parent == posixpath.dirname(home) and parent != "/"):
        return "a home directory"
    return None


def _protected_file(text: str, env: _Env) -> str | None:
    """Name the system or shell-start-up file ``text`` denotes, else None."""
    path = _absolute(text, env)
    if path is None:
        return None
    home = posixpath.normpath(env.home)
    if path == "/etc" or path.startswith(("/etc/", "/private/etc/")):
        return f"a system file ({path})"
    name = posixpath.basename(path)
    if posixpath.dirname(path) == home and name in PROFILE_NAMES:
        return f"a shell profile (~/{name})"
    if path == f"{home}/.config/fish/config.fish":
        return "a shell profile (~/.config/fish/config.fish)"
    if path.startswith(f"{home}/.ssh/"):
        return f"SSH configuration (~/.ssh/{path[len(home) + 6 :]})"
    return None


def _outside_project(text: str, env: _Env) -> bool:
    expanded = _expand_home(text, env.home)
    if "$" in expanded or expanded.startswith("~"):
        return True
    if not expanded.startswith("/"):
        relative = posixpath.normpath(expanded)
        return relative == ".." or relative.startswith("../")
    path = posixpath.normpath("/" + expanded.lstrip("/"))
    return not any(path == root or path.startswith(root.rstrip("/") + "/") for root in env.roots)


# ---------------------------------------------------------------------------------------------
# assess_command
# ---------------------------------------------------------------------------------------------


class _Findings:
    def __init__(self) -> None:
        self._found: list[tuple[RiskLevel, str]] = []

    def add(self, level: RiskLevel, reason: str) -> None:
        if (level, reason) not in self._found:
            self._found.append((level, reason))

    def dangerous(self, reason: str) -> None:
        self.add("dangerous", reason)

    def catastrophic(self, reason: str) -> None:
        self.add("catastrophic", reason)

    def risk(self) -> CommandRisk:
        if not self._found:
            return CommandRisk("normal")
        ordered = sorted(self._found, key=lambda found: -_RANK[found[0]])
        return CommandRisk(ordered[0][0], tuple(dict.fromkeys(reason for _, reason in ordered)))


@dataclass
class _Call:
    """One program invocation under inspection."""

    name: str
    words: list[Word]
    env: _Env
    findings: _Findings
    depth: int

    @property
    def args(self) -> list[str]:
        return [word.text for word in self.words[1:]]


def assess_command(command: str, *, home: Path | None = None, roots: Sequence[Path] = ()) -> CommandRisk:
    """Classify a shell command line.

    ``home`` defaults to the user's home directory; ``roots`` are the workspace roots, used to
    tell a recursive ``chmod``/``chown`` inside the project from one outside it.
    """
    env = _Env(
        home=posixpath.normpath(str(home) if home is not None else os.path.expanduser("~")),
        roots=tuple(posixpath.normpath(str(root)) for root in roots),
    )
    findings = _Findings()
    _assess_text(command, env, findings, 0)
    return findings.risk()


_TOO_DEEP = "too deeply nested to analyse"


def _assess_text(text: str, env: _Env, findings: _Findings, depth: int) -> None:
    if depth > _MAX_DEPTH:
        findings.catastrophic(_TOO_DEEP)
        return
    parse = parse_commands(text)
    if parse.too_deep:
        findings.catastrophic(_TOO_DEEP)
    analysed = [(command, look_through(command.words)) for command in parse.commands]
    for command, invocation in analysed:
        if invocation.too_deep:
            findings.catastrophic(_TOO_DEEP)
        for name in invocation.chain:
            if name in _ELEVATORS:
                findings.dangerous(f"runs as root ({name})")
        for payload in [*invocation.payloads, *_shell_input(command, invocation)]:
            _assess_text(payload, env, findings, depth + 1)
        for target in _written_files(command):
            _assess_write_target(target, env, findings)
        if invocation.argv:
            _assess_argv(invocation.argv, env, findings, depth)
        if _runs_downloaded_code(command, invocation):
            findings.dangerous("runs downloaded code")
    _assess_downloads_piped(analysed, findings)
    _assess_fork_bombs(parse, findings)
    _assess_sql(analysed, findings)


def _assess_argv(words: list[Word], env: _Env, findings: _Findings, depth: int) -> None:
    if depth > _MAX_DEPTH:
        findings.catastrophic(_TOO_DEEP)
        return
    name = program_name(words[0].text)
    call = _Call(name, words, env, findings, depth)
    if family(name) == "python":
        source = program_source(READERS["python"], call.args)
        if source.flag == "-m" and source.value:
            _assess_argv([Word(source.value), *words[1 + source.after :]], env, findings, depth + 1)
        return
    runner = _runner_split(words)
    if runner is not None and runner[1]:
        _assess_argv(runner[1], env, findings, depth + 1)
    if name.startswith("mkfs") or name == "mke2fs":
        findings.catastrophic(f"formats a filesystem ({name})")
    check = _CHECKS.get(name)
    if check is not None:
        check(call)


def _written_files(command: Command) -> Iterator[str]:
    for op, target in command.redirects:
        if op not in (">", ">>", ">|", "&>", "&>>", "<>", ">&"):
            continue
        if op == ">&" and (target.text.isdigit() or target.text == "-"):
            continue  # duplicates a file descriptor
        if target.text in _HARMLESS_TARGETS or target.text.startswith("/dev/fd/"):
            continue
        yield target.text


def _assess_write_target(target: str, env: _Env, findings: _Findings) -> None:
    path = _absolute(target, env) or target
    if _RAW_DISK.match(path):
        findings.catastrophic(f"writes to a raw disk ({path})")
        return
    protected = _protected_file(target, env)
    if protected:
        findings.dangerous(f"overwrites {protected}")


_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "http", "https", "xh"})
_CODE_RUNNERS = frozenset({"sh", "python", "perl", "ruby", "node", "php", "lua", "source", "eval"})


def _runs_downloaded_code(command: Command, invocation: Invocation) -> bool:
    """``bash <(curl …)``, ``sh -c "$(curl …)"``, ``eval "$(wget -O- …)"`` and the like."""
    if not any(family(name) in _CODE_RUNNERS for name in invocation.chain):
        return False
    return any(
        look_through(inner.words).name in _DOWNLOADERS
        for word in command.words
        for commands in word.substitutions
        for inner in commands
    )


def _shell_input(command: Command, invocation: Invocation) -> list[str]:
    """Here-documents and here-strings a shell reads its commands from (``bash <<EOF``)."""
    if family(invocation.name) != "sh" or not _reads_program_from_stdin(invocation):
        return []
    return [command.heredoc, *(target.text for op, target in command.redirects if op == "<<<")]


def _reads_program_from_stdin(invocation: Invocation) -> bool:
    reader = READERS.get(family(invocation.name))
    return reader is not None and program_source(reader, invocation.args).kind == "stdin"


def _upstream(first: Command, second: Command) -> bool:
    """Whether ``first`` feeds ``second`` through a pipe."""
    stages = dict(first.pipes)
    return any(pipeline in stages and stages[pipeline] < stage for pipeline, stage in second.pipes)


def _assess_downloads_piped(analysed: list[tuple[Command, Invocation]], findings: _Findings) -> None:
    downloads = [command for command, invocation in analysed if invocation.name in _DOWNLOADERS]
    for command, invocation in analysed:
        if _reads_program_from_stdin(invocation) and any(_upstream(download, command) for download in downloads):
            findings.dangerous(f"pipes a download into {invocation.name}")


def _assess_fork_bombs(parse: Parse, findings: _Findings) -> None:
    """A function that calls itself in a pipeline or in the background multiplies forever."""
    for command in parse.commands:
        name = command.function
        if name is None or not command.words or command.words[0].text != name:
            continue
        if command.background or any(parse.pipeline_sizes.get(pipeline, 1) > 1 for pipeline, _ in command.pipes):
            findings.catastrophic("fork bomb")


# Programs that only print, search or record text: SQL in their arguments is data, unless
# their output is piped into something that may execute it.
_TEXT_ONLY = names("echo printf cat tee grep egrep fgrep rg ag ack sed git gh glab head tail less diff wc true :")
_SQL_DROP = re.compile(r"\bdrop\s+(?:temporary\s+)?(table|database|schema)\b", re.I)
_SQL_TRUNCATE = re.compile(r"\btruncate\s+(?:table\s+)?(?:only\s+)?[\w\"`\[]", re.I)
_SQL_UNFILTERED = (
    (re.compile(r"\bdelete\s+from\s+[^\s;]+", re.I), "SQL DELETE without WHERE"),
    (re.compile(r"\bupdate\s+[^\s;]+\s+set\s", re.I), "SQL UPDATE without WHERE"),
)
_SQL_WHERE = re.compile(r"\bwhere\b", re.I)
_MONGO_DROP = re.compile(r"\.dropDatabase\s*\(", re.I)


def _sql_reasons(text: str) -> Iterator[str]:
    drop = _SQL_DROP.search(text)
    if drop:
        yield f"SQL DROP {drop.group(1).upper()}"
    if _SQL_TRUNCATE.search(text):
        yield "SQL TRUNCATE"
    for pattern, reason in _SQL_UNFILTERED:
        for match in pattern.finditer(text):
            end = text.find(";", match.end())
            if not _SQL_WHERE.search(text[match.end() : end if end >= 0 else len(text)]):
                yield reason
                break
    if _MONGO_DROP.search(text):
        yield "drops a MongoDB database"


def _assess_sql(analysed: list[tuple[Command, Invocation]], findings: _Findings) -> None:
    for command, invocation in analysed:
        if invocation.payloads:
            continue  # the payload was analysed as commands of its own
        here_strings = [target.text for op, target in command.redirects if op == "<<<"]
        text = "\n".join([" ".join(word.text for word in command.words), command.heredoc, *here_strings])
        reasons = list(_sql_reasons(text))
        if reasons and invocation.name in _TEXT_ONLY:
            feeds_a_program = any(
                _upstream(command, other) and other_invocation.name not in _TEXT_ONLY
                for other, other_invocation in analysed
            )
            if not feeds_a_program:
                continue
        for reason in reasons:
            findings.dangerous(reason)


# -- per-program checks ------------------------------------------------------------------------


def _operands(args: Sequence[str], value_options: frozenset[str] = frozenset()) -> list[str]:
    operands: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            operands.extend(args[index + 1 :])
            break
        if arg.startswith("-") and arg != "-":
            index += 2 if arg in value_options else 1
            continue
        operands.append(arg)
        index += 1
    return operands


def _has_flag(args: Sequence[str], letters: str, *long: str) -> bool:
    """Whether a short option cluster holds one of ``letters`` or a long option is present."""
    for arg in args:
        if arg == "--":
            return False
        if arg in long or arg.split("=", 1)[0] in long:
            return True
        if arg.startswith("-") and not arg.startswith("--") and any(letter in arg[1:] for letter in letters):
            return True
    return False


def _subcommand(args: Sequence[str], value_options: frozenset[str] = frozenset()) -> tuple[str, list[str]]:
    """The first operand after global options (``+toolchain`` skipped) and what follows it."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg.startswith("-"):
            index += 2 if arg in value_options else 1
        elif arg.startswith("+"):
            index += 1
        else:
            return arg, list(args[index + 1 :])
    return "", []


def _check_rm(call: _Call) -> None:
    """rm -r, and rimraf (npm's rm -rf)."""
    args = call.args
    if call.name == "rm" and not _has_flag(args, "rR", "--recursive"):
        return
    if "--no-preserve-root" in args:
        call.findings.catastrophic("rm --no-preserve-root")
    vital = [where for where in (_vital_path(target, call.env) for target in _operands(args)) if where]
    for where in vital:
        call.findings.catastrophic(f"recursive delete of {where}")
    if not vital:
        call.findings.dangerous("recursive delete")


_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_DELETERS = frozenset({"rm", "rmdir", "unlink", "shred"})


def _find_actions(words: Sequence[Word]) -> Iterator[list[Word]]:
    """The commands ``find -exec … ;`` runs."""
    index = 1
    while index < len(words):
        if words[index].text in _FIND_ACTIONS:
            end = index + 1
            while end < len(words) and words[end].text not in (";", "+"):
                end += 1
            if end > index + 1:
                yield list(words[index + 1 : end])
            index = end + 1
        else:
            index += 1


def _check_find(call: _Call) -> None:
    args = call.args
    deletes = "-delete" in args
    for action in _find_actions(call.words):
        _assess_argv(action, call.env, call.findings, call.depth + 1)
        deletes = deletes or program_name(action[0].text) in _DELETERS
    if not deletes:
        return
    index = 0
    while index < len(args) and args[index] in ("-H", "-L", "-P"):
        index += 1
    starts = []
    for arg in args[index:]:
        if arg.startswith(("-", "(", "!")):
            break
        starts.append(arg)
    vital = [where for where in (_vital_path(start, call.env) for start in starts) if where]
    for where in vital:
        call.findings.catastrophic(f"deletes everything under {where} (find)")
    if not vital:
        call.findings.dangerous("bulk delete (find)")


_GIT_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env"})


def _check_git(call: _Call) -> None:
    sub, rest = _subcommand(call.args, _GIT_OPTIONS)
    found = call.findings
    operands = _operands(rest)
    if sub == "push":
        if _has_flag(rest, "f", "--force", "--force-with-lease", "--mirror") or any(
            op.startswith("+") for op in operands
        ):
            found.dangerous("force push")
        if _has_flag(rest, "d", "--delete") or any(op.startswith(":") and len(op) > 1 for op in operands):
            found.dangerous("deletes a remote branch")
    elif sub == "reset" and "--hard" in rest:
        found.dangerous("git reset --hard (discards changes)")
    elif sub == "clean" and _has_flag(rest, "f", "--force") and not _has_flag(rest, "n", "--dry-run"):
        found.dangerous("git clean (deletes untracked files)")
    elif sub == "checkout" and (
        ("--" in rest and rest.index("--") < len(rest) - 1) or "." in operands or _has_flag(rest, "f", "--force")
    ):
        found.dangerous("discards uncommitted changes (git checkout)")
    elif sub == "restore":
        paths = _operands(rest, frozenset({"-s", "--source"}))
        staged_only = _has_flag(rest, "S", "--staged") and not _has_flag(rest, "W", "--worktree")
        if paths and not staged_only:
            found.dangerous("discards uncommitted changes (git restore)")
    elif sub == "branch" and (
        _has_flag(rest, "D") or (_has_flag(rest, "d", "--delete") and _has_flag(rest, "f", "--force"))
    ):
        found.dangerous("force-deletes a branch")
    elif sub == "stash" and operands[:1] in (["drop"], ["clear"]):
        found.dangerous("drops stashed changes")
    elif sub in ("filter-branch", "filter-repo"):
        found.dangerous("rewrites repository history")


def _check_dd(call: _Call) -> None:
    for arg in call.args:
        if not arg.startswith("of="):
            continue
        target = arg[3:]
        path = _absolute(target, call.env) or target
        if _RAW_DISK.match(path):
            call.findings.catastrophic(f"dd onto a raw disk ({path})")
        elif path not in _HARMLESS_TARGETS:
            call.findings.dangerous(f"dd overwrites {target}")
            _assess_write_target(target, call.env, call.findings)


_WRECKING_MODES = frozenset(
    {"777", "0777", "000", "0000", "a+rwx", "ugo+rwx", "a=rwx", "a-rwx", "ugo-rwx", "o+w", "a+w"}
)


def _check_ownership(call: _Call) -> None:
    """chmod/chown/chgrp: recursive changes of vital or foreign trees, world-writable trees."""
    args = call.args
    if call.name == "chmod":  # a dash word is an option only if it is one of chmod's own
        options = [a for a in args if a.startswith("--") or re.fullmatch(r"-[cfvR]+", a)]
        operands = [a for a in args if a not in options]
    else:
        options = [a for a in args if a.startswith("-")]
        operands = [a for a in args if not a.startswith("-")]
    if not _has_flag(options, "R", "--recursive"):
        return
    reference = any(option.startswith("--reference") for option in options)
    setting, paths = (None, operands) if reference else (operands[:1], operands[1:])
    vital = [where for where in (_vital_path(path, call.env) for path in paths) if where]
    for where in vital:
        call.findings.catastrophic(f"recursive {call.name} of {where}")
    if vital:
        return
    if call.name == "chmod" and setting and setting[0] in _WRECKING_MODES:
        call.findings.dangerous(f"recursive chmod {setting[0]}")
    if any(_outside_project(path, call.env) for path in paths):
        call.findings.dangerous(f"recursive {call.name} outside the project")


def _check_copy(call: _Call) -> None:
    """cp/mv/install/tee: what they overwrite; mv also what it moves away."""
    operands = _operands(call.args, frozenset({"-t", "--target-directory", "-S", "--suffix", "-m", "--mode"}))
    if call.name == "tee":
        targets = operands
    else:
        directory = option_value(call.args, "-t", "--target-directory")
        targets = [directory] if directory else operands[-1:]
        if call.name == "mv":
            sources = operands if directory else operands[:-1]
            for source in sources:
                where = _vital_path(source, call.env)
                if where:
                    call.findings.catastrophic(f"moves {where} away")
    for target in targets:
        _assess_write_target(target, call.env, call.findings)


def _check_kill(call: _Call) -> None:
    args, pids, index = call.args, [], 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            pids.extend(args[index + 1 :])
            break
        if arg in ("-s", "-n"):
            index += 2
            continue
        if arg.startswith("-") and (index == 0 or arg[1:].isalpha()):
            index += 1  # the signal
            continue
        pids.append(arg)
        index += 1
    if "-1" in pids:
        call.findings.dangerous("kills every process")
    if "1" in pids:
        call.findings.dangerous("kills init (pid 1)")


def _check_kill_by_name(call: _Call) -> None:
    call.findings.dangerous(f"kills processes by name ({call.name})")


def _check_power(call: _Call) -> None:
    call.findings.dangerous("shuts down or reboots the machine")


def _check_systemctl(call: _Call) -> None:
    sub, _ = _subcommand(call.args, frozenset({"-H", "--host", "-M", "--machine"}))
    if sub in ("poweroff", "reboot", "halt", "kexec"):
        _check_power(call)


def _check_init(call: _Call) -> None:
    if call.args[:1] in (["0"], ["6"]):
        _check_power(call)


def _check_crontab(call: _Call) -> None:
    if _has_flag(call.args, "r"):
        call.findings.dangerous("removes all cron jobs")


_DOCKER_OPTIONS = frozenset({"-H", "--host", "-c", "--context", "--config", "-l", "--log-level"})


def _check_docker(call: _Call) -> None:
    sub, rest = _subcommand(call.args, _DOCKER_OPTIONS)
    second, _ = _subcommand(rest, frozenset({"-f", "--file", "-p", "--project-name", "--env-file", "--profile"}))
    name, found = call.name, call.findings
    if (sub, second) == ("system", "prune"):
        found.dangerous(f"{name} system prune")
    elif sub == "volume" and second in ("prune", "rm"):
        found.dangerous(f"deletes {name} volumes")
    elif (sub == "rm" or (sub, second) == ("container", "rm")) and _has_flag(rest, "f", "--force"):
        found.dangerous(f"force-removes {name} containers")
    elif (sub, second) == ("compose", "down") and _has_flag(rest, "v", "--volumes"):
        found.dangerous(f"deletes {name} compose volumes")
    elif sub == "push" or (sub, second) == ("image", "push"):
        found.dangerous(f"publishes an image ({name} push)")


def _check_destroy(call: _Call) -> None:
    """Infrastructure tools: kubectl delete, helm uninstall, terraform/pulumi/cdk destroy."""
    sub, rest = _subcommand(call.args, frozenset({"-n", "--namespace", "--context", "--kubeconfig"}))
    destroys = {
        "kubectl": sub == "delete",
        "helm": sub in ("uninstall", "delete", "del", "un"),
    }.get(call.name, sub == "destroy" or (sub == "apply" and _has_flag(rest, "", "-destroy", "--destroy")))
    if destroys:
        call.findings.dangerous(f"destroys infrastructure ({call.name} {sub})")


_PUBLISH_VERBS: dict[str, frozenset[str]] = {
    "npm": frozenset({"publish"}),
    "yarn": frozenset({"publish"}),
    "pnpm": frozenset({"publish"}),
    "bun": frozenset({"publish"}),
    "cargo": frozenset({"publish"}),
    "gem": frozenset({"push"}),
    "poetry": frozenset({"publish"}),
    "uv": frozenset({"publish"}),
    "flit": frozenset({"publish"}),
    "hatch": frozenset({"publish"}),
    "twine": frozenset({"upload"}),
}


def _check_publish(call: _Call) -> None:
    sub, rest = _subcommand(call.args)
    if sub in _PUBLISH_VERBS[call.name] and "--dry-run" not in rest:
        call.findings.dangerous(f"publishes a package ({call.name} {sub})")


_PARTITIONERS = frozenset({"fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "cgdisk", "parted", "gparted"})
_WIPERS = frozenset({"wipefs", "blkdiscard", "shred", "sgdisk", "mkswap", "newfs"})


def _check_disk_tool(call: _Call) -> None:
    args = call.args
    if call.name in _PARTITIONERS and _has_flag(args, "", "-l", "--list"):
        return  # only lists partitions
    wipes = {  # without these flags wipefs and sgdisk only print
        "wipefs": _has_flag(args, "a", "--all") and not _has_flag(args, "n", "--no-act"),
        "sgdisk": _has_flag(args, "Zo", "--zap-all", "--clear"),
    }.get(call.name, call.name in _WIPERS)
    for operand in _operands(args):
        path = _absolute(operand, call.env) or operand
        if wipes and _RAW_DISK.match(path):
            call.findings.catastrophic(f"wipes a raw disk ({call.name} {path})")
            return
    if call.name == "shred":
        call.findings.dangerous("shred (unrecoverable overwrite)")
    elif call.name != "mkswap":
        call.findings.dangerous(f"disk partitioning or wiping tool ({call.name})")


def _check_database_tool(call: _Call) -> None:
    if call.name == "dropdb":
        call.findings.dangerous("drops a database (dropdb)")
    elif any(arg.lower() in ("flushall", "flushdb") for arg in call.args):
        call.findings.dangerous("flushes Redis data")


_CHECKS: dict[str, Callable[[_Call], None]] = {
    "rm": _check_rm,
    "rimraf": _check_rm,
    "find": _check_find,
    "git": _check_git,
    "dd": _check_dd,
    "chmod": _check_ownership,
    "chown": _check_ownership,
    "chgrp": _check_ownership,
    "cp": _check_copy,
    "mv": _check_copy,
    "install": _check_copy,
    "tee": _check_copy,
    "kill": _check_kill,
    "killall": _check_kill_by_name,
    "killall5": _check_kill_by_name,
    "pkill": _check_kill_by_name,
    "shutdown": _check_power,
    "reboot": _check_power,
    "halt": _check_power,
    "poweroff": _check_power,
    "systemctl": _check_systemctl,
    "init": _check_init,
    "telinit": _check_init,
    "crontab": _check_crontab,
    "docker": _check_docker,
    "podman": _check_docker,
    "kubectl": _check_destroy,
    "helm": _check_destroy,
    "terraform": _check_destroy,
    "tofu": _check_destroy,
    "terragrunt": _check_destroy,
    "pulumi": _check_destroy,
    "cdk": _check_destroy,
    "dropdb": _check_database_tool,
    "redis-cli": _check_database_tool,
    **dict.fromkeys(_PUBLISH_VERBS, _check_publish),
    **dict.fromkeys(_PARTITIONERS | _WIPERS, _check_disk_tool),
}


# ---------------------------------------------------------------------------------------------
# command_keys
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Subcommands:
    """How a program's grant key is formed from its first operands."""

    depth: int = 1  # operands that name the action (aws s3 ls: 2)
    nested: frozenset[str] = frozenset()  # subcommands followed by one more name (npm run build)
    runs: frozenset[str] = frozenset()  # subcommands that run another program (uv run pytest)
    options: frozenset[str] = frozenset()  # options that take a separate value
    targets: bool = False  # make-like: every operand is a target of its own


def _sub(depth: int = 1, nested: str = "", runs: str = "", options: str = "", targets: bool = False) -> _Subcommands:
    return _Subcommands(depth, names(nested), names(runs), names(options), targets)


_DOCKER_GROUPS = "compose container image network volume system builder buildx context plugin swarm node service stack"
_DOCKER_KEY_OPTIONS = " ".join(_DOCKER_OPTIONS) + " -f --file -p --project-name --env-file --project-directory"
_GH_GROUPS = (
    "pr issue repo release run workflow gist auth codespace secret variable label cache project extension "
    "ssh-key gpg-key config search org ruleset attestation"
)
_SIMPLE = _sub()
_SUBCOMMANDS: dict[str, _Subcommands] = {
    "git": _sub(options=" ".join(_GIT_OPTIONS)),
    "npm": _sub(nested="run run-script", runs="exec x", options="--prefix -w --workspace"),
    "pnpm": _sub(nested="run", runs="exec dlx", options="-C --dir --filter -F"),
    "yarn": _sub(nested="run workspace", runs="exec dlx", options="--cwd"),
    "bun": _sub(nested="run", runs="x"),
    "uv": _sub(nested="pip tool python cache self", runs="run", options="--directory --project"),
    "poetry": _sub(nested="env self cache source", runs="run", options="-C --directory -P --project"),
    "conda": _sub(nested="env", runs="run"),
    "mamba": _sub(nested="env", runs="run"),
    "mise": _sub(runs="exec x"),
    "bundle": _sub(runs="exec"),
    **dict.fromkeys(("pipenv", "pdm", "hatch", "rye", "pixi", "pipx"), _sub(runs="run")),
    "rustup": _sub(nested="toolchain component target"),
    "go": _sub(nested="mod work"),
    **dict.fromkeys(("docker", "podman"), _sub(nested=_DOCKER_GROUPS, options=_DOCKER_KEY_OPTIONS)),
    "docker-compose": _sub(options="-f --file -p --project-name --env-file --profile"),
    "kubectl": _sub(nested="config rollout auth certificate", options="-n --namespace --context --kubeconfig"),
    "helm": _sub(nested="repo plugin dependency registry", options="-n --namespace --kube-context --kubeconfig"),
    "gh": _sub(nested=_GH_GROUPS, options="-R --repo"),
    "glab": _sub(nested="mr issue repo ci release variable auth", options="-R --repo"),
    "brew": _sub(nested="services"),
    "dotnet": _sub(nested="ef tool nuget"),
    "deno": _sub(nested="task"),
    "swift": _sub(nested="package"),
    "flutter": _sub(nested="pub"),
    "dart": _sub(nested="pub"),
    "terraform": _sub(nested="state workspace", options=""),
    "tofu": _sub(nested="state workspace"),
    "pulumi": _sub(nested="stack config"),
    "nix": _sub(nested="flake profile"),
    "turbo": _sub(nested="run"),
    "lerna": _sub(nested="run"),
    "supabase": _sub(nested="db functions"),
    "kind": _sub(nested="create delete get load export"),
    "ansible-galaxy": _sub(nested="collection role"),
    "systemctl": _sub(options="-H --host -M --machine"),
    "aws": _sub(depth=2, options="--profile --region --output --endpoint-url --query"),
    "gcloud": _sub(depth=4, options="--project --account --configuration --format"),
    "az": _sub(depth=4, options="--subscription --output -o"),
    "make": _sub(targets=True, options="-C -f --file --directory -I --include-dir -o --old-file -W --what-if"),
    "gmake": _sub(targets=True, options="-C -f --file --directory -I --include-dir -o --old-file -W --what-if"),
    "just": _sub(targets=True, options="-f --justfile -d --working-directory"),
    "rake": _sub(targets=True, options="-f --rakefile -C --directory"),
    "ninja": _sub(targets=True, options="-C -f -j -k -l -t"),
    "task": _sub(targets=True, options="-d --dir -t --taskfile"),
    **dict.fromkeys(("mvn", "mvnw"), _sub(targets=True, options="-f --file -s --settings -pl --projects -P -T")),
    **dict.fromkeys(("gradle", "gradlew"), _sub(targets=True, options="-p --project-dir -x --exclude-task")),
    **dict.fromkeys(
        names(
            "pip pip3 cargo apt apt-get dnf yum zypper apk snap flatpak port winget choco scoop rails mix gem "
            "composer ruff pre-commit alembic django-admin nx tmux svn hg jj bazel bazelisk heroku fly flyctl "
            "vercel netlify firebase wrangler asdf pyenv nvm corepack volta stack cabal zig meson cdk vagrant "
            "minikube ollama golangci-lint openssl direnv launchctl hugo"
        ),
        _SIMPLE,
    ),
}
_RUNNER_PROGRAMS: dict[str, frozenset[str]] = {
    "npx": frozenset({"-p", "--package"}),
    "pnpx": frozenset({"-p", "--package"}),
    "bunx": frozenset({"-p", "--package"}),
    "uvx": frozenset({"--from", "--with", "--python", "-p"}),
}
_RUNNER_OPTIONS = names(
    "-p --package --from --with --python --with-requirements -n --name --prefix --env-file -e --env"
)
_GLOB = re.compile(r"[*?\[]")
_BIN_DIRS = frozenset({"bin", "sbin", ".bin"})


def _display_name(program: str) -> str:
    """``/usr/bin/git`` → ``git``, ``node_modules/.bin/jest`` → ``jest``; other paths stay as written."""
    if "/" not in program:
        return program
    parent = posixpath.basename(posixpath.dirname(program))
    return posixpath.basename(program) if parent in _BIN_DIRS else program


def _runner_split(words: Sequence[Word]) -> tuple[list[str], list[Word]] | None:
    """Split ``uv run --with x pytest -q`` into (["uv", "run"], words of ``pytest -q``)."""
    name = program_name(words[0].text)
    args = [word.text for word in words]
    if name in _RUNNER_PROGRAMS:
        start = skip_options(args, "", _RUNNER_PROGRAMS[name] | _RUNNER_OPTIONS)
        return [_display_name(words[0].text)], list(words[start:])
    spec = _SUBCOMMANDS.get(name)
    if spec is None or not spec.runs:
        return None
    sub, _ = _subcommand(args[1:], spec.options)
    if sub not in spec.runs:
        return None
    position = args.index(sub, 1)
    start = position + skip_options(args[position:], "", _RUNNER_OPTIONS)
    return [_display_name(words[0].text), sub], list(words[start:])


def command_keys(command: str) -> tuple[str, ...] | None:
    """The grant keys of a command line, in order, or None when it cannot be analysed safely.

    Each simple command gives the program plus, for programs with subcommands, the action
    (``git -C sub status`` → ``git status``; ``FOO=1 npm run build`` → ``npm run build``;
    ``make test lint`` → ``make test``, ``make lint``; ``python -m pytest`` → ``python -m pytest``;
    ``python tool.py`` → ``python tool.py``; ``uv run pytest`` → ``uv run pytest``). Assignments
    and wrappers (``sudo``, ``env``, ``timeout``, ``xargs`` …) are skipped and ``bash -c '…'``
    contributes the keys of its payload; ``find -exec`` adds the keys of what it runs. A program
    found in a ``bin`` directory is named by its base name; any other path stays as written, so a
    local ``./git`` never borrows the grant of ``git``. Writing a file by redirection adds the key
    ``>``. Command and process substitution, backticks, ``eval``, here-documents, function
    definitions, ``case``, a program named by a variable and unbalanced quotes give None.
    """
    keys = _line_keys(command, 0)
    return None if keys is None else tuple(dict.fromkeys(keys))


def _line_keys(text: str, depth: int) -> list[str] | None:
    if depth > _MAX_DEPTH:
        return None
    parse = parse_commands(text)
    if parse.broken or parse.dynamic:
        return None
    keys: list[str] = []
    for command in parse.commands:
        invocation = look_through(command.words)
        if "eval" in invocation.chain or invocation.too_deep:
            return None
        for payload in invocation.payloads:
            inner = _line_keys(payload, depth + 1)
            if inner is None:
                return None
            keys.extend(inner)
        if invocation.argv:
            argv_keys = _argv_keys(invocation.argv, depth)
            if argv_keys is None:
                return None
            keys.extend(argv_keys)
        elif invocation.chain and not invocation.payloads:
            keys.append(invocation.chain[-1])  # ``sudo -s``, ``command -v x``, ``exec >log``
        if next(_written_files(command), None) is not None:
            keys.append(">")
    return keys


def _argv_keys(words: Sequence[Word], depth: int) -> list[str] | None:
    if depth > _MAX_DEPTH:
        return None
    program = words[0]
    if program.expands or not program.text or (_GLOB.search(program.text) and program.text not in ("[", "[[")):
        return None
    display, name = _display_name(program.text), program_name(program.text)
    reader = READERS.get(family(name))
    if reader is not None:
        return _interpreter_keys(display, name, words, reader, depth)
    runner = _runner_split(words)
    if runner is not None:
        prefix = " ".join(runner[0])
        if not runner[1]:
            return [prefix]
        inner = _argv_keys(runner[1], depth + 1)
        return None if inner is None else [f"{prefix} {key}" for key in inner]
    if name == "find":
        keys = [display]
        for action in _find_actions(words):
            inner = _argv_keys(action, depth + 1)
            if inner is None:
                return None
            keys.extend(inner)
        return keys
    spec = _SUBCOMMANDS.get(name)
    return [display] if spec is None else _subcommand_keys(display, [word.text for word in words[1:]], spec)


def _interpreter_keys(display: str, name: str, words: Sequence[Word], reader: Reader, depth: int) -> list[str] | None:
    source = program_source(reader, [word.text for word in words[1:]])
    if source.kind == "stdin":
        return [display]
    if source.kind == "script":
        return [f"{display} {source.value}"]
    if family(name) == "python" and source.flag == "-m" and source.value:
        inner = _argv_keys([Word(source.value), *words[1 + source.after :]], depth + 1)
        return None if inner is None else [f"{display} -m {key}" for key in inner]
    return [f"{display} {source.flag}"]


def _subcommand_keys(display: str, args: Sequence[str], spec: _Subcommands) -> list[str]:
    operands: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            operands.extend(args[index + 1 :])
            break
        if arg.startswith("-"):
            index += 2 if arg in spec.options and "=" not in arg else 1
            continue
        if not arg.startswith("+"):  # cargo +nightly
            operands.append(arg)
        index += 1
    if spec.targets:
        targets = [op for op in operands if "=" not in op and not op.isdigit()]
        return [f"{display} {target}" for target in targets] or [display]
    if not operands:
        return [display]
    wanted = spec.depth + (1 if operands[0] in spec.nested else 0)
    return [" ".join([display, *operands[:wanted]])]
