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

import fnmatch
import os
import posixpath
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from acp_hermes.permissions.grant_options import is_listed, unlisted_options
from acp_hermes.permissions.shell_parse import (
    READERS,
    Command,
    Invocation,
    Parse,
    Reader,
    Word,
    family,
    look_through,
    looked_through,
    names,
    option_value,
    parse_commands,
    program_name,
    program_source,
    skip_options,
)
from acp_hermes_tools.protected_paths import protected_reason
from acp_hermes_tools.sensitive_paths import PROFILE_NAMES, secret_path_reason, sensitive_path_reason

RiskLevel = Literal["normal", "dangerous", "catastrophic"]

_RANK: dict[RiskLevel, int] = {"normal": 0, "dangerous": 1, "catastrophic": 2}
# Nesting beyond this limit is never needed by a real command, only by an attempt to hide
# one, so a line that exceeds it is refused rather than half-analysed.
_MAX_DEPTH = 10  # nested ``bash -c``/``eval`` payloads and runners


@dataclass(frozen=True, slots=True)
class CommandRisk:
    """The verdict on a command line; ``reasons`` are short phrases shown to the user.

    ``network`` says the line probably needs the network (a sandbox without it would make it
    fail), ``outside_writes`` names the paths outside the workspace it writes and
    ``scratch_writes`` those in shared temp directories (/tmp): harmless as such, but outside a
    sandbox's private ``$TMPDIR``. ``protected_writes`` are what it writes that the sandbox keeps
    read-only because it would run later outside it (a repository's ``.git``, ``.envrc`` …): such a
    line can only run outside the sandbox. ``opaque`` says why the analysis cannot see every
    program the line runs (inline interpreter code, a program named at run time …): without a
    sandbox such a line never runs unasked.
    """

    level: RiskLevel
    reasons: tuple[str, ...] = ()
    network: bool = False
    outside_writes: tuple[str, ...] = ()
    scratch_writes: tuple[str, ...] = ()
    protected_writes: tuple[str, ...] = ()
    opaque: tuple[str, ...] = ()


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


@dataclass
class _Env:
    home: str
    roots: tuple[str, ...]
    cwd: str | None  # where relative paths land: the command's directory, as ``cd`` on the line changes it
    hermes_home: str | None = None  # the agent's own home: secrets


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
        self.network = False
        self.outside_writes: list[str] = []
        self.scratch_writes: list[str] = []
        self.protected_writes: list[str] = []
        self.opaque: list[str] = []

    def add(self, level: RiskLevel, reason: str) -> None:
        if (level, reason) not in self._found:
            self._found.append((level, reason))

    def dangerous(self, reason: str) -> None:
        self.add("dangerous", reason)

    def catastrophic(self, reason: str) -> None:
        self.add("catastrophic", reason)

    def hidden(self, reason: str) -> None:
        """The analysis cannot see what runs: the line asks wherever no sandbox holds it."""
        self.opaque.append(reason)
        self.dangerous(f"runs what acp-hermes cannot see in full ({reason})")

    def risk(self) -> CommandRisk:
        outside, scratch = tuple(dict.fromkeys(self.outside_writes)), tuple(dict.fromkeys(self.scratch_writes))
        protected, opaque = tuple(dict.fromkeys(self.protected_writes)), tuple(dict.fromkeys(self.opaque))
        if not self._found:
            return CommandRisk("normal", (), self.network, outside, scratch, protected, opaque)
        ordered = sorted(self._found, key=lambda found: -_RANK[found[0]])
        reasons = tuple(dict.fromkeys(reason for _, reason in ordered))
        return CommandRisk(ordered[0][0], reasons, self.network, outside, scratch, protected, opaque)


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


def assess_command(command: str, *, home: Path | None = None, roots: Sequence[Path] = (),
                   cwd: Path | None = None, hermes_home: Path | None = None) -> CommandRisk:
    """Classify a shell command line.

    ``home`` defaults to the user's home directory; ``roots`` are the workspace roots, used to
    tell a recursive ``chmod``/``chown`` inside the project from one outside it; ``cwd`` is where
    the line runs (the tool's ``workdir``; the first root by default): relative paths land there,
    or wherever a ``cd`` on the line leads.
    """
    normalised_roots = tuple(posixpath.normpath(str(root)) for root in roots)
    env = _Env(
        home=posixpath.normpath(str(home) if home is not None else os.path.expanduser("~")),
        roots=normalised_roots,
        cwd=posixpath.normpath(str(cwd)) if cwd is not None else (normalised_roots[0] if normalised_roots else None),
        hermes_home=str(hermes_home) if hermes_home is not None else None,
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
        _assess_command(command, invocation, env, findings, depth)
    _assess_downloads_piped(analysed, findings)
    _assess_piped_scripts(analysed, env, findings, depth)
    _assess_fork_bombs(parse, findings)
    _assess_sql(analysed, findings)


def _assess_command(command: Command, invocation: Invocation, env: _Env, findings: _Findings, depth: int) -> None:
    """One simple command, as ``look_through`` sees it: wrappers, payloads, writes, reads, the program."""
    if invocation.too_deep:
        findings.catastrophic(_TOO_DEEP)
    if invocation.argv and _named_at_run_time(invocation.argv[0]):
        findings.dangerous("runs a program named only at run time")
        findings.opaque.append("a program named only at run time")
    for reason in invocation.opaque:
        findings.hidden(reason)
    for name, why in _assignments_that_matter(invocation):
        findings.dangerous(f"sets {name}, which {why}")
    for name in invocation.chain:
        if name in _ELEVATORS:
            findings.dangerous(f"runs as root ({name})")
        elif name == "systemd-run":
            findings.dangerous("runs a command as a system service, outside the agent's control (systemd-run)")
    for payload in [*invocation.payloads, *_shell_input(command, invocation)]:
        _assess_text(payload, env, findings, depth + 1)
    for target in [*_written_files(command), *invocation.writes]:
        _assess_write_target(target, env, findings)
    _assess_reads(command, env, findings)
    if invocation.argv:
        _assess_argv(invocation.argv, env, findings, depth)
        _follow_cd(invocation, env, findings)
    if _runs_downloaded_code(command, invocation):
        findings.dangerous("runs downloaded code")


def _assess_words(words: Sequence[Word], env: _Env, findings: _Findings, depth: int) -> None:
    """A command another program runs from its own arguments (``uv run …``, ``find -exec …``), judged
    as if it stood on the line: through its wrappers and shells too (``find . -exec sh -c '…' \\;``)."""
    if depth > _MAX_DEPTH:
        findings.catastrophic(_TOO_DEEP)
        return
    command = Command((), None, list(words))
    _assess_command(command, look_through(command.words), env, findings, depth)


def _assess_argv(words: list[Word], env: _Env, findings: _Findings, depth: int) -> None:
    if depth > _MAX_DEPTH:
        findings.catastrophic(_TOO_DEEP)
        return
    name = program_name(words[0].text)
    call = _Call(name, words, env, findings, depth)
    if name in _NETWORK_PROGRAMS:
        findings.network = True
    reader = READERS.get(family(name))
    if reader is not None:
        source = program_source(reader, call.args)
        if source.kind == "option" and source.flag != "-m":
            _assess_inline_code(family(name), source.value, findings)
            if family(name) != "sh":  # a shell's code was looked into as a payload
                findings.opaque.append(f"inline {family(name)} code")
    if family(name) == "python":
        source = program_source(READERS["python"], call.args)
        if source.flag == "-m" and source.value:
            _assess_argv([Word(source.value), *words[1 + source.after :]], env, findings, depth + 1)
        return
    runner = _runner_split(words)
    if runner is not None and runner[1]:
        _assess_words(runner[1], env, findings, depth + 1)
    if name.startswith("mkfs") or name == "mke2fs":
        findings.catastrophic(f"formats a filesystem ({name})")
    check = _CHECKS.get(name)
    if check is not None:
        check(call)
    elif runner is None and reader is None and not _has_rules(name):
        _assess_unknown_program(call)
    if _uses_network(call):
        findings.network = True


def _written_files(command: Command) -> Iterator[str]:
    for op, target in command.redirects:
        if op not in (">", ">>", ">|", "&>", "&>>", "<>", ">&"):
            continue
        if op == ">&" and (target.text.isdigit() or target.text == "-"):
            continue  # duplicates a file descriptor
        if target.text in _HARMLESS_TARGETS or target.text.startswith("/dev/fd/"):
            continue
        yield target.text


def _resolved(text: str, env: _Env) -> str | None:
    """``text`` as an absolute path: relative ones against the line's directory (None: unknown)."""
    absolute = _absolute(text, env)
    if absolute is None and env.cwd is not None and "$" not in text and not text.startswith("~"):
        absolute = posixpath.normpath(posixpath.join(env.cwd, text))
    return absolute


# Names a glob in a command could match, to judge ``cat .env*`` like ``cat .env``.
_SECRET_SAMPLES = (".env", ".env.local", ".env.production", "id_rsa", "id_ed25519", ".netrc", ".npmrc", ".pypirc",
                   ".pgpass", ".git-credentials", "server.pem", "server.key")


def _assess_reads(command: Command, env: _Env, findings: _Findings) -> None:
    """Secrets a command names (``cat .env``, ``base64 ~/.ssh/id_rsa``, ``< .env``, ``xargs -a .env``):
    read only when asked, like ``read_file`` reads them — the sandbox hides the home's credentials, not
    a project's. Every word counts, a wrapper's options too."""
    words = [word.text for word in command.words[1:]]
    words += [target.text for op, target in command.redirects if op in ("<", "<>")]
    for word in words:
        value = word.partition("=")[2] if word.startswith("-") else word
        value = value.rpartition("=@")[2] if "=@" in value else value.removeprefix("@")  # curl -F f=@x
        if not value or "$" in value:
            continue
        absolute = _resolved(value, env)
        if absolute is None:
            continue
        reason = _secret_reason(absolute, env)
        if reason:
            findings.dangerous(f"reads {absolute}: {reason}")


def _secret_reason(path: str, env: _Env) -> str | None:
    home, own = Path(env.home), Path(env.hermes_home) if env.hermes_home else None
    directory, name = posixpath.split(path)
    if _GLOB.search(name):
        return next((reason for sample in _SECRET_SAMPLES if fnmatch.fnmatchcase(sample, name)
                     and (reason := secret_path_reason(Path(directory, sample), home, hermes_home=own))), None)
    return secret_path_reason(Path(path), home, hermes_home=own)


def _assess_write_target(target: str, env: _Env, findings: _Findings, *, deletes: bool = False) -> None:
    """A file the command writes (or, ``deletes``, removes): the same rules as the file tools'
    writes, and where it lands."""
    path = _absolute(target, env) or target
    if _RAW_DISK.match(path):
        findings.catastrophic(f"writes to a raw disk ({path})")
        return
    if not deletes and (path in _HARMLESS_TARGETS or path.startswith("/dev/fd/")):
        return  # output thrown away or shown (``script -q /dev/null``, ``tee /dev/stderr``)
    verb = "deletes" if deletes else "writes"
    protected = _protected_file(target, env)
    if protected:
        findings.dangerous(f"{'deletes' if deletes else 'overwrites'} {protected}")
        return
    absolute = _resolved(target, env)
    runs_later = protected_reason(Path(absolute), tuple(map(Path, env.roots)), Path(env.home)) if absolute else None
    if absolute is not None and runs_later:
        findings.protected_writes.append(absolute)
        findings.dangerous(f"{verb} {absolute}: {runs_later}")
        return
    if absolute is not None:
        reason = sensitive_path_reason(Path(absolute), Path(env.home))
        if reason:
            findings.dangerous(f"{verb} {reason} ({absolute})")
            return
    if env.roots and "$" not in target and _outside_project(absolute or target, env):
        if _scratch(absolute or target):
            findings.scratch_writes.append(absolute or target)
        else:
            findings.outside_writes.append(absolute or target)
            findings.dangerous(f"{verb} outside the workspace ({absolute or target})")


_BRACE_LIST = re.compile(r"\{[^{}]*,[^{}]*\}")
_SCRATCH_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/private/tmp")


# Programs whose output is shell code meant for ``eval "$(…)"``: the one dynamic form that is routine.
_ENVIRONMENT_PRINTERS = names(
    "ssh-agent pyenv rbenv nodenv goenv jenv direnv brew opam conda mamba micromamba fnm mise rtx zoxide starship "
    "keychain gpg-agent dircolors thefuck luarocks"
)


def _named_at_run_time(program: Word) -> bool:
    """A program word the shell fills in when it runs (``$x``, ``$(…)``, ``{rm,-rf,~}``): no rule
    can know what runs, so the line is never let through on the program's name. The exception is
    ``eval "$(ssh-agent -s)"``-style setup, where a known environment printer writes the code."""
    if _BRACE_LIST.search(program.text):
        return True
    if program.substitutions and program.text.startswith("$(") and all(
        len(commands) == 1 and look_through(commands[0].words).name in _ENVIRONMENT_PRINTERS
        for commands in program.substitutions
    ):
        return False
    return program.expands or bool(program.substitutions)


def _scratch(path: str) -> bool:
    return any(path == scratch or path.startswith(scratch + "/") for scratch in _SCRATCH_DIRS)


# Environment variables that make the program (or a program it starts) run another program.
_RUNS_PROGRAMS = re.compile(
    r"GIT_(?:CONFIG_(?:COUNT|KEY_\d+|VALUE_\d+|PARAMETERS|GLOBAL|SYSTEM)|EXTERNAL_DIFF|SSH(?:_COMMAND)?|ASKPASS"
    r"|EDITOR|SEQUENCE_EDITOR|PAGER|EXEC_PATH|PROXY_COMMAND|TEMPLATE_DIR|DIR|WORK_TREE)"
    r"|[A-Z_]*_COMMAND|[A-Z_]*PAGER|EDITOR|VISUAL|LD_PRELOAD|LD_LIBRARY_PATH|LD_AUDIT|DYLD_[A-Z_]+|BASH_ENV|ENV"
    r"|PROMPT_COMMAND|PYTHONSTARTUP|PYTHONPATH|PYTHONHOME|NODE_OPTIONS|PERL5OPT|PERL5LIB|RUBYOPT|RUBYLIB"
    r"|SSH_ASKPASS|SUDO_ASKPASS|BROWSER|SHELLOPTS|BASHOPTS|IFS|PATH"
)


_MOVES_CONFIGURATION = re.compile(r"HOME|ZDOTDIR|XDG_[A-Z_]+|GIT_[A-Z0-9_]+|(?i:npm_config_\w+)|CARGO_HOME|RUSTUP_HOME")


def _assignments_that_matter(invocation: Invocation) -> list[tuple[str, str]]:
    """Assignments on the line that change what ends up running: named programs, or where programs
    read the configuration that names them (``HOME=. git status`` reads ``./.gitconfig``) — before
    the program or any wrapper on the way (``timeout 5 env LD_PRELOAD=x ls``)."""
    found = [(name, "makes it run other programs") for name in _program_running_assignments(invocation)]
    for name in invocation.assigned:
        if not any(name == seen for seen, _ in found) and _MOVES_CONFIGURATION.fullmatch(name):
            found.append((name, "makes programs read their configuration (and the programs it names) elsewhere"))
    return found


def _follow_cd(invocation: Invocation, env: _Env, findings: _Findings) -> None:
    """``cd DIR`` moves where the rest of the line's relative paths land; a directory named only at
    run time leaves them unknown, and the line then cannot be judged by what it writes."""
    if invocation.name not in ("cd", "pushd") or env.cwd is None:
        return
    operands = [word for word in invocation.argv[1:] if not word.text.startswith("-")]
    target = operands[0] if operands else Word(env.home)
    if target.expands or target.substitutions or re.match(r"~[^/]", target.text):
        env.cwd = None
        findings.opaque.append("changes to a directory named only at run time")
        return
    env.cwd = _resolved(target.text, env) or env.cwd


def _program_running_assignments(invocation: Invocation) -> list[str]:
    """Names assigned on the line (``X=1 cmd``, ``env X=1 cmd``) that change what ends up running."""
    return [name for name in invocation.assigned if _RUNS_PROGRAMS.fullmatch(name)]


def _assess_piped_scripts(
    analysed: list[tuple[Command, Invocation]], env: _Env, findings: _Findings, depth: int
) -> None:
    """``echo 'rm -rf ~' | sh``: what an interpreter reads from a pipe is a program no rule saw —
    but when ``echo``/``printf`` writes it from literal words, it is read like any command line."""
    for command, invocation in analysed:
        scheduler = invocation.chain[-1:] in (["at"], ["batch"])
        if not (_reads_program_from_stdin(invocation) or scheduler):
            continue
        feeding = [other for other, _ in analysed if _upstream(other, command)]
        if not feeding:
            continue
        findings.dangerous(f"runs a script piped into {invocation.name or invocation.chain[-1]}")
        findings.opaque.append("a script piped into an interpreter")
        if family(invocation.name) == "sh" or scheduler:
            for other in feeding:
                words = other.words
                if words and program_name(words[0].text) in ("echo", "printf") and not any(
                    word.expands or word.substitutions for word in words[1:]
                ):
                    _assess_text(" ".join(word.text for word in words[1:]), env, findings, depth + 1)


# Inline code that deletes files or starts programs, per interpreter family.
_INLINE_DANGER = {
    "python": re.compile(r"rmtree|\bos\.(?:remove|unlink|rmdir|removedirs|system|exec\w*|spawn\w*|popen|kill)\b"
                         r"|\.unlink\(|\.rmdir\(|\bsubprocess\b|\bpty\.spawn|__import__|\beval\(|\bexec\("),
    "perl": re.compile(r"\bunlink\b|\brmtree\b|\bremove_tree\b|\bsystem\b|\bexec\b|`|\bqx\b|\bopen\s*\(?[^)]*\|"),
    "ruby": re.compile(r"rm_r|rm_rf|remove_dir|File\.delete|FileUtils|\bsystem\b|\bexec\b|`|%x|\bspawn\b|Open3"),
    "node": re.compile(r"\brm(?:Sync)?\(|rmdir|unlink|child_process|\bexec(?:Sync)?\(|\bspawn(?:Sync)?\(|\beval\("),
    "php": re.compile(r"\bunlink\b|\brmdir\b|\bsystem\b|\bexec\b|shell_exec|passthru|proc_open|popen|`"),
    "lua": re.compile(r"os\.remove|os\.execute|io\.popen"),
}


def _assess_inline_code(language: str, code: str, findings: _Findings) -> None:
    danger = _INLINE_DANGER.get(language)
    if danger is not None and danger.search(code):
        findings.dangerous(f"inline {language} code that deletes files or runs programs")


_NETWORK_PROGRAMS = names(
    "curl wget ssh scp sftp telnet nc ncat netcat ftp aria2c http https xh gh glab aws gcloud az kubectl helm "
    "npx pnpx bunx uvx pipx git-lfs"
)
_NETWORK_SUBCOMMANDS: dict[str, frozenset[str]] = {
    "git": names("clone fetch pull push ls-remote submodule"),
    **dict.fromkeys(("pip", "pip3"), names("install download")),
    **dict.fromkeys(("npm", "pnpm", "bun"), names("install i ci add update upgrade publish outdated audit")),
    "yarn": names("install add upgrade up publish dlx"),
    "cargo": names("install fetch update publish search login"),
    "go": names("get install mod"),
    "uv": names("pip sync add lock tool run"),
    "poetry": names("install add lock update publish"),
    **dict.fromkeys(("apt", "apt-get", "dnf", "yum", "apk", "brew", "zypper"), names("install update upgrade")),
    **dict.fromkeys(("docker", "podman"), names("pull push login build run")),
    "gem": names("install update push"),
    "composer": names("install update require"),
}


def _uses_network(call: _Call) -> bool:
    subcommands = _NETWORK_SUBCOMMANDS.get(call.name)
    if subcommands is None:
        return call.name == "yarn" and not call.args  # a bare ``yarn`` installs
    sub, rest = _subcommand(call.args, _GIT_OPTIONS if call.name == "git" else frozenset())
    if call.name in ("pip", "pip3", "uv") and _has_flag(rest, "", "--no-index", "--offline"):
        return False
    return sub in subcommands


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
    """Here-documents and here-strings a shell (or ``at``) reads its commands from (``bash <<EOF``)."""
    scheduler = invocation.chain[-1:] in (["at"], ["batch"])
    if not scheduler and (family(invocation.name) != "sh" or not _reads_program_from_stdin(invocation)):
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
    """Whether a short option cluster holds one of ``letters`` or a long option is present.

    A long option also counts when abbreviated: getopt_long and git accept any unambiguous
    prefix (``git reset --har`` is ``--hard``), and one that is ambiguous for the program is
    refused by it, so treating every prefix as the option errs on the careful side.
    """
    for arg in args:
        if arg == "--":
            return False
        given = arg.split("=", 1)[0]
        if given in long:  # also single-dash long options (terraform -destroy, fdisk -l)
            return True
        if arg.startswith("--") and len(arg) > 2:
            if any(option.startswith(given) for option in long):
                return True
        elif arg.startswith("-") and any(letter in arg[1:] for letter in letters):
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
    """rm (every operand is a delete: ``rm ~/.bashrc``), rm -r, and rimraf (npm's rm -rf)."""
    args = call.args
    if call.name == "rm" and not _has_flag(args, "rR", "--recursive"):
        _check_deletes(call)
        return
    if _has_flag(args, "", "--no-preserve-root"):
        call.findings.catastrophic("rm --no-preserve-root")
    vital = [where for where in (_vital_path(target, call.env) for target in _operands(args)) if where]
    for where in vital:
        call.findings.catastrophic(f"recursive delete of {where}")
    if not vital:
        call.findings.dangerous("recursive delete")
        _check_deletes(call)


def _check_deletes(call: _Call) -> None:
    """rm, unlink, shred: each operand is removed (or overwritten), like a write of that path."""
    for target in _operands(call.args, frozenset({"-n", "--iterations", "-s", "--size", "--random-source"})):
        _assess_write_target(target, call.env, call.findings, deletes=True)


def _check_truncate(call: _Call) -> None:
    """``truncate -s0 ~/.bashrc`` empties the file: a write of every operand."""
    for target in _operands(call.args, frozenset({"-s", "--size", "-r", "--reference"})):
        _assess_write_target(target, call.env, call.findings)


def _check_sponge(call: _Call) -> None:
    """moreutils' sponge writes its input to the file it is given."""
    for target in _operands(call.args):
        _assess_write_target(target, call.env, call.findings)


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


_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls"})


def _check_find(call: _Call) -> None:
    args = call.args
    for index, arg in enumerate(args[:-1]):
        if arg in _FIND_WRITES:
            _assess_write_target(args[index + 1], call.env, call.findings)
    deletes = "-delete" in args
    for action in _find_actions(call.words):
        _assess_words(action, call.env, call.findings, call.depth + 1)
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
# Configuration keys whose value git runs (or that point it at code to run): as ``-c`` they turn
# any git command, even ``git status``, into running something else.
_GIT_CODE_KEYS = re.compile(
    r"core\.(?:fsmonitor|sshcommand|pager|editor|hookspath|gitproxy|askpass|alternaterefscommand)|alias\..*"
    r"|(?:diff|merge|filter)\..*\.(?:command|textconv|driver|clean|smudge|process)|pager\..*|credential\..*"
    r"|sequence\.editor|gpg\.(?:.*\.)?program|protocol\..*\.allow|uploadpack\.packobjectshook|remote\..*\.(?:uploadpack|receivepack|proxy)"
    r"|include\..*|includeif\..*|http\..*\.proxy|core\.sshcommand|ssh\.variant|difftool\..*|mergetool\..*|web\.browser|browser\..*",
    re.I,
)


def git_global_options(args: Sequence[str]) -> list[tuple[str, str]]:
    """The options given before a git subcommand, with their values (``-c k=v`` → ``("-c", "k=v")``)."""
    found = []
    index = 0
    while index < len(args) and args[index].startswith("-"):
        option, has_value, value = args[index].partition("=")
        if option in _GIT_OPTIONS and not has_value:
            value = args[index + 1] if index + 1 < len(args) else ""
            index += 1
        found.append((option, value))
        index += 1
    return found


# Git subcommands that write the repository (its ``.git``), always or unless only listing.
_GIT_WRITES = names(
    "add commit checkout switch reset merge rebase cherry-pick revert fetch pull push mv rm am gc prune repack "
    "update-index update-ref replace commit-tree read-tree filter-branch filter-repo fast-import maintenance "
    "pack-refs mktag mktree"
)
# Subcommands whose first operand is a verb: the verbs that only look, and what no verb does.
_GIT_VERBS: dict[str, tuple[frozenset[str], bool]] = {
    "stash": (names("list show"), True),  # a bare ``git stash`` stashes
    "remote": (names("-v --verbose show get-url"), False),
    "worktree": (names("list"), False),
    "submodule": (names("status summary foreach"), False),
    "notes": (names("list show"), False),
    "sparse-checkout": (names("list"), False),
    "reflog": (names("show"), False),
    "bisect": (names("log visualize view"), False),
    "lfs": (names("ls-files status env version"), False),
}
# Subcommands that list unless given a name: the options that keep them listing.
_GIT_LISTS = {
    "branch": names("-a --all -r --remotes -v -vv --verbose --list -l --show-current --merged --no-merged --contains"),
    "tag": names("-l --list -n --contains --points-at --merged --no-merged"),
}
_GIT_CONFIG_WRITES = names("--add --unset --unset-all --replace-all --rename-section --remove-section -e --edit "
                           "set unset rename-section remove-section edit")
_GIT_FILTERS = names("--tree-filter --index-filter --msg-filter --env-filter --commit-filter --parent-filter "
                     "--tag-name-filter")
REPOSITORY = "the repository's .git"


def _git_writes_repository(sub: str, rest: list[str]) -> bool:
    """Whether ``git sub rest`` writes the repository, which the sandbox keeps read-only."""
    if sub in _GIT_WRITES:
        return True
    if sub == "restore":
        return _has_flag(rest, "S", "--staged")
    if sub == "apply":
        return _has_flag(rest, "3", "--index", "--cached", "--3way")
    if sub in _GIT_VERBS:
        looks, bare_writes = _GIT_VERBS[sub]
        return rest[0] not in looks if rest else bare_writes
    if sub in _GIT_LISTS:
        return bool(rest) and not any(arg in _GIT_LISTS[sub] for arg in rest)
    if sub == "config":
        return any(arg in _GIT_CONFIG_WRITES for arg in rest) or len(_operands(rest, frozenset({"-f", "--file"}))) >= 2
    return False


def _check_git(call: _Call) -> None:
    for option, value in git_global_options(call.args):
        if option == "-c" and _GIT_CODE_KEYS.match(value.partition("=")[0]):
            call.findings.dangerous(f"git -c {value.partition('=')[0]} makes git run a program")
        elif option == "--config-env":
            call.findings.dangerous("git --config-env sets configuration from the environment")
        elif option.startswith("--exec-path") and (value or "=" in option):
            call.findings.dangerous("git --exec-path runs git programs from another directory")
        elif option in ("--git-dir", "--work-tree"):
            call.findings.dangerous(f"git {option} points git at another repository's configuration")
    sub, rest = _subcommand(call.args, _GIT_OPTIONS)
    found = call.findings
    operands = _operands(rest)
    if _git_writes_repository(sub, rest):
        found.protected_writes.append(REPOSITORY)
    _check_git_programs(call, sub, rest)
    if sub == "push":
        if _has_flag(rest, "f", "--force", "--force-with-lease", "--mirror") or any(
            op.startswith("+") for op in operands
        ):
            found.dangerous("force push")
        if _has_flag(rest, "d", "--delete") or any(op.startswith(":") and len(op) > 1 for op in operands):
            found.dangerous("deletes a remote branch")
    elif sub == "reset" and _has_flag(rest, "", "--hard"):
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


def _check_git_programs(call: _Call, sub: str, rest: list[str]) -> None:
    """What git is told to run or write besides itself: ``rebase --exec``, ``submodule foreach``,
    ``bisect run``, ``filter-branch`` filters, ``difftool --extcmd``, configuration that names
    programs, ``--output`` files."""
    payloads = []
    for index, arg in enumerate(rest):
        option, has_value, value = arg.partition("=")
        takes = (
            (sub == "rebase" and option in ("-x", "--exec"))
            or (sub == "filter-branch" and option in _GIT_FILTERS)
            or (sub in ("difftool", "mergetool") and option in ("-x", "--extcmd"))
        )
        if takes:
            payloads.append(value if has_value else (rest[index + 1] if index + 1 < len(rest) else ""))
        if option in ("--output", "-o") and sub in ("log", "show", "diff", "format-patch", "whatchanged"):
            target = value if has_value else (rest[index + 1] if index + 1 < len(rest) else "")
            if target:
                _assess_write_target(target, call.env, call.findings)
    if sub == "submodule" and rest[:1] == ["foreach"]:
        payloads.append(" ".join(arg for arg in rest[1:] if arg not in ("--recursive", "-q", "--quiet")))
    if sub == "bisect" and rest[:1] == ["run"] and len(rest) > 1:
        _assess_words([Word(arg) for arg in rest[1:]], call.env, call.findings, call.depth + 1)
    for payload in payloads:
        _assess_text(payload, call.env, call.findings, call.depth + 1)
    if sub == "config" and _git_writes_repository(sub, rest):
        keys = [arg for arg in _operands(rest, frozenset({"-f", "--file", "--blob", "--type"})) if arg != "set"]
        if keys and _GIT_CODE_KEYS.match(keys[0]):
            call.findings.dangerous(f"git config {keys[0]} makes git run a program")


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
    """cp/mv/install/ln/tee: what they overwrite; mv also what it moves away."""
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
                else:  # what is moved away is gone from where it was: ``mv ~/.bashrc x``
                    _assess_write_target(source, call.env, call.findings, deletes=True)
    for target in targets:
        _assess_write_target(target, call.env, call.findings)


# sed's ``e`` command and the ``e`` flag of ``s`` run shell commands; ``w``/``W`` write files.
_SED_RUNS = re.compile(
    r"(?:^|[;\n{}])\s*(?:[0-9$]+(?:,[0-9$]+)?|/[^/\n]*/)?\s*!?\s*e(?:\s|;|$)"  # the e command
    r"|s(.).*?\1.*?\1[gpiImM0-9w]*e"  # s/…/…/e
)


def _check_in_place_edit(call: _Call) -> None:
    """``sed -i`` and ``perl -i`` rewrite the files they are given; a sed script can also run commands."""
    if call.name in ("sed", "gsed"):
        scripts = [option_value(call.args, "-e", "--expression")] if _has_flag(call.args, "", "-e", "--expression") \
            else _operands(call.args, frozenset({"-f", "--file", "-l", "--line-length"}))[:1]
        if any(script and _SED_RUNS.search(script) for script in scripts):
            call.findings.dangerous("sed script that runs commands")
    if not _has_flag(call.args, "i", "--in-place"):
        return
    code_options = ("-e", "--expression", "-f", "--file") if call.name == "sed" else ("-e", "-E")
    operands = _operands(call.args, frozenset({"-e", "--expression", "-f", "--file", "-E", "-I", "-M", "-m"}))
    has_code_option = any(arg in code_options or arg.startswith(("--expression=", "--file=")) for arg in call.args)
    files = operands if has_code_option else operands[1:]  # without -e the first operand is the script
    for target in files:
        _assess_write_target(target, call.env, call.findings)


def _check_sort(call: _Call) -> None:
    target = option_value(call.args, "-o", "--output")
    if target:
        _assess_write_target(target, call.env, call.findings)
    if any(arg.startswith("--compress-program") for arg in call.args):
        call.findings.dangerous("sort --compress-program runs a program")


# tar options whose value is a command it runs (or a program it starts).
_TAR_RUNS = ("--checkpoint-action", "--to-command", "--use-compress-program", "-I", "--rsh-command", "--info-script",
             "--new-volume-script", "-F")


def _check_tar(call: _Call) -> None:
    args = call.args
    for index, arg in enumerate(args):
        option, has_value, value = arg.partition("=")
        if option not in _TAR_RUNS:
            continue
        value = value if has_value else (args[index + 1] if index + 1 < len(args) else "")
        call.findings.dangerous(f"tar {option} runs a command")
        _assess_text(value.removeprefix("exec=").removeprefix("exec:"), call.env, call.findings, call.depth + 1)


def _check_make(call: _Call) -> None:
    if any(arg == "-E" or arg.startswith("--eval") for arg in call.args):
        call.findings.dangerous("make --eval runs make code from the command line")
    for arg in call.args:
        name, is_assignment, _ = arg.partition("=")
        if is_assignment and name.strip() in ("SHELL", "MAKESHELL", ".SHELLFLAGS"):
            call.findings.dangerous(f"make {name.strip()}= changes the program make runs its recipes with")


def _check_fd(call: _Call) -> None:
    """``fd -x cmd`` / ``fd -X cmd`` run a command per result, like ``find -exec``."""
    args = call.args
    for index, arg in enumerate(args):
        if arg in ("-x", "--exec", "-X", "--exec-batch") and index + 1 < len(args):
            end = next((i for i in range(index + 1, len(args)) if args[i] == ";"), len(args))
            _assess_words([Word(word) for word in args[index + 1 : end]], call.env, call.findings, call.depth + 1)


def _check_zip(call: _Call) -> None:
    if any(arg in ("-TT", "--unzip-command") or arg.startswith("--unzip-command=") for arg in call.args):
        call.findings.dangerous("zip --unzip-command runs a command")


_AWK_RUNS = re.compile(r"\bsystem\s*\(|\|\s*getline|print[^;}]*\|\s*\"|\|&")


def _check_awk(call: _Call) -> None:
    args = call.args
    operands = _operands(args, frozenset({"-f", "-v", "-F", "-i", "--include"}))
    program = next(iter(operands), "")
    if _AWK_RUNS.search(program):
        call.findings.dangerous(f"{call.name} program that runs commands")
    if any(option_value(args, "-i", "--include") == "inplace" or arg in ("-iinplace", "--include=inplace")
           for arg in args):  # gawk -i inplace rewrites the files it reads
        has_program_file = _has_flag(args, "", "-f", "--file")
        for target in operands if has_program_file else operands[1:]:
            _assess_write_target(target, call.env, call.findings)


_RSYNC_DELETES = ("--delete", "--del", "--delete-before", "--delete-during", "--delete-delay", "--delete-after",
                  "--delete-excluded", "--remove-source-files")


def _check_rsync(call: _Call) -> None:
    args = call.args
    operands = _operands(args, frozenset({"-e", "--rsh", "--exclude", "--include", "--filter", "-f"}))
    if any(":" in operand.split("/", 1)[0] for operand in operands):
        call.findings.network = True  # host:path
    for index, arg in enumerate(args):  # the remote shell it starts runs here: judged as if on the line
        option, has_value, value = arg.partition("=")
        if option in ("-e", "--rsh") and (has_value or index + 1 < len(args)):
            _assess_text(value if has_value else args[index + 1], call.env, call.findings, call.depth + 1)
    if len(operands) > 1 and ":" not in operands[-1].split("/", 1)[0]:
        _assess_write_target(operands[-1], call.env, call.findings)
    if not operands or not _has_flag(args, "", *_RSYNC_DELETES):
        return
    destination = operands[-1]
    where = _vital_path(destination, call.env)
    if where:
        call.findings.dangerous(f"rsync --delete onto {where}")
    elif _outside_project(destination, call.env) and call.env.roots:
        call.findings.dangerous("rsync --delete outside the workspace")


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
    if sub in _PUBLISH_VERBS[call.name] and not _has_flag(rest, "", "--dry-run"):
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
        _check_deletes(call)
    elif call.name != "mkswap":
        call.findings.dangerous(f"disk partitioning or wiping tool ({call.name})")


def _check_database_tool(call: _Call) -> None:
    if call.name == "dropdb":
        call.findings.dangerous("drops a database (dropdb)")
    elif any(arg.lower() in ("flushall", "flushdb") for arg in call.args):
        call.findings.dangerous("flushes Redis data")


_SSH_VALUES = "BbcDEeFIiJLlmOopQRSWw"
# ssh configuration that names a local program: ``ssh -o ProxyCommand='…' host`` runs it here.
_SSH_COMMAND_KEYS = re.compile(r"(?i)(?:proxycommand|localcommand|knownhostscommand)\s*[= ]\s*(.*)", re.S)


def _check_ssh(call: _Call) -> None:
    """ssh runs what follows the host on another machine (``ssh localhost rm -rf ~`` is this one):
    judged as if run here, and never seen in full. ``-o …Command=…`` and scp's ``-S`` run a program
    here; ``-F`` reads a configuration that may name one."""
    args = call.args
    for index, arg in enumerate(args):
        following = args[index + 1] if index + 1 < len(args) else ""
        value = arg[2:] if arg.startswith("-o") and len(arg) > 2 else (following if arg == "-o" else "")
        named = _SSH_COMMAND_KEYS.match(value)
        if named:
            call.findings.dangerous(f"{call.name} -o {value.split('=')[0].split()[0]} runs a program here")
            _assess_text(named.group(1), call.env, call.findings, call.depth + 1)
        elif arg == "-S" and call.name != "ssh" and following:
            call.findings.dangerous(f"{call.name} -S runs a program")
            _assess_text(following, call.env, call.findings, call.depth + 1)
        elif arg.startswith("-F"):
            call.findings.opaque.append(f"{call.name} -F reads a configuration that may name programs")
    if call.name != "ssh":
        return
    texts = [word.text for word in call.words]
    remote = texts[skip_options(texts, _SSH_VALUES, frozenset()) + 1 :]
    if remote:
        call.findings.opaque.append("runs a command on another machine (ssh)")
        _assess_text(" ".join(remote), call.env, call.findings, call.depth + 1)


# Programs that take program names as data (``man rm``, ``which python``, ``pgrep node``) and never
# run them: with ``_has_rules`` they are the programs whose arguments the analysis understands.
_INERT = names(
    "man info tldr whatis apropos whereis which type hash help pgrep pidof ps lsof dpkg dpkg-query rpm apt-cache "
    "apt-file update-alternatives alternatives ldd strings nm objdump readelf file stat ls cat head tail wc cut "
    "tr sort uniq diff cmp comm join paste column fold nl od printf echo true false test [ [[ : basename dirname "
    "realpath readlink printenv whoami id groups uname nproc tty locale sleep tac rev seq expand unexpand md5sum "
    "sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum sum bat batcat less more most highlight "
    "pygmentize journalctl complete compgen unalias unset jq yq pv"
)
# Programs it would do no harm to run through a program acp-hermes cannot see through.
_HARMLESS = names("echo printf true false test [ [[ : ls cat head tail wc pwd sleep yes date whoami id uname "
                  "basename dirname which type")
# Names that are programs for no rule of ours but do real work when another program runs them.
_COMMON_PROGRAMS = names(
    "rmdir mkdir touch truncate unlink ln cp mv install chmod chown chgrp chattr setfacl patch tar unzip zip "
    "gzip gunzip xz unxz bzip2 zstd cpio ar sponge mount umount swapon swapoff sysctl modprobe insmod rmmod "
    "iptables nft ip useradd userdel usermod passwd chpasswd groupadd visudo apt apt-get dpkg yum dnf rpm "
    "pacman snap flatpak brew pip pip3 npm yarn pnpm cargo go gem composer make cmake ninja gcc cc clang ld"
)


def _has_rules(name: str) -> bool:
    """Whether the analysis knows what ``name`` does with its arguments: a rule, a grant table, a
    runner or interpreter, or a program known to take names as data."""
    return (name in _CHECKS or name in _SUBCOMMANDS or name in _RUNNER_PROGRAMS or name in _INERT
            or name in _TEXT_ONLY or name in _NETWORK_PROGRAMS or name in _ENVIRONMENT_PRINTERS
            or name in _DOWNLOADERS or family(name) in READERS or is_listed(name) or name.startswith("mkfs")
            or looked_through(name))


def _worth_seeing(name: str) -> bool:
    """A program some rule judges, or one that runs code, shells and interpreters included."""
    if name in _HARMLESS:
        return False
    return (name in _CHECKS or name in _COMMON_PROGRAMS or name in _ELEVATORS or name in _NETWORK_PROGRAMS
            or name in _RUNNER_PROGRAMS or name in _SUBCOMMANDS or family(name) in READERS
            or name.startswith("mkfs") or looked_through(name))


_WHITESPACE = re.compile(r"\s")


def _assess_unknown_program(call: _Call) -> None:
    """A program no rule knows that is given another program's name may run it, as a wrapper does
    (``chronic rm -rf ~``, ``hyperfine 'rm -rf ~'``): what the analysis cannot see (so bypass without a
    sandbox asks), and the command it may run is judged as if it stood on the line."""
    seen_words = False
    for index, word in enumerate(call.words[1:], start=1):
        text = word.text.strip()
        if word.expands or word.substitutions or not text or text.startswith("-"):
            continue
        spoken = _WHITESPACE.search(text) is not None  # a command line in one word
        head = program_name(text.split()[0])
        if not _worth_seeing(head) or (seen_words and not spoken):
            continue
        call.findings.opaque.append(f"{call.words[0].text} may run {head}, and acp-hermes has no rules for it")
        if spoken:
            _assess_text(text, call.env, call.findings, call.depth + 1)
        else:
            seen_words = True
            _assess_words(call.words[index:], call.env, call.findings, call.depth + 1)


_CHECKS: dict[str, Callable[[_Call], None]] = {
    "rm": _check_rm,
    "rimraf": _check_rm,
    "unlink": _check_deletes,
    "truncate": _check_truncate,
    "sponge": _check_sponge,
    **dict.fromkeys(("ssh", "scp", "sftp"), _check_ssh),
    "find": _check_find,
    "git": _check_git,
    "dd": _check_dd,
    "chmod": _check_ownership,
    "chown": _check_ownership,
    "chgrp": _check_ownership,
    "cp": _check_copy,
    "mv": _check_copy,
    "install": _check_copy,
    "ln": _check_copy,
    "tee": _check_copy,
    "sed": _check_in_place_edit,
    "gsed": _check_in_place_edit,
    "sort": _check_sort,
    "tar": _check_tar,
    "gtar": _check_tar,
    "bsdtar": _check_tar,
    "make": _check_make,
    "gmake": _check_make,
    "fd": _check_fd,
    "fdfind": _check_fd,
    "zip": _check_zip,
    "perl": _check_in_place_edit,
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), _check_awk),
    "rsync": _check_rsync,
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
    **dict.fromkeys(("asdf", "pyenv", "rbenv", "nodenv", "goenv", "jenv", "plenv", "opam"), _sub(runs="exec")),
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
            "vercel netlify firebase wrangler nvm corepack volta stack cabal zig meson cdk vagrant "
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
# Where the system's own programs live: ``/usr/bin/git`` is the ``git`` a bare name finds.
_SYSTEM_BIN_DIRS = frozenset({"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin",
                              "/opt/homebrew/bin", "/opt/local/bin"})


def _display_name(program: str) -> str:
    """``/usr/bin/git`` → ``git``; any other path stays as written, so a grant names one executable
    (``./bin/git`` or ``node_modules/.bin/git`` never borrows the grant of ``git``)."""
    if "/" not in program:
        return program
    directory = posixpath.normpath(posixpath.dirname(program))
    return posixpath.basename(program) if directory in _SYSTEM_BIN_DIRS else program


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


@dataclass(frozen=True, slots=True)
class GrantKeys:
    """A line's grant keys (None: no grant may cover it) and, where it helps the user, why not."""

    keys: tuple[str, ...] | None
    why_not: str = ""


def command_keys(command: str, roots: Sequence[Path] = ()) -> tuple[str, ...] | None:
    """The grant keys of a command line, in order, or None when no grant may ever cover it (``grant_keys``)."""
    return grant_keys(command, roots).keys


def grant_keys(command: str, roots: Sequence[Path] = ()) -> GrantKeys:
    """The grant keys of a command line, in order, or None when no grant may ever cover it.

    Each simple command gives the program plus, for programs with subcommands, the action
    (``git status --short`` → ``git status``; ``make test lint`` → ``make test``, ``make lint``;
    ``python -m pytest -x`` → ``python -m pytest``; ``python tool.py`` → ``python tool.py``;
    ``uv run pytest`` → ``uv run pytest``). Wrappers (``sudo``, ``timeout``, ``xargs`` …) are
    skipped and ``bash -c '…'`` contributes the keys of its payload. A program in a system ``bin``
    directory is named by its base name; any other path stays as written, so ``./bin/git`` never
    borrows the grant of ``git``. Writing a file by redirection (or a wrapper's output option, ``time -o``)
    adds the key ``>``. Inline code is
    keyed by the exact snippet (``python -c 'print(1)'``), so a grant covers exactly what it names.

    A grant is an allowlist: an invocation is covered only when every option in it is one
    ``grant_options`` knows to be harmless for that program (so ``rg --pre sh``, ``git log
    --output=…``, ``sed -n '1e …'``, ``git -C elsewhere`` are never covered), and no environment is
    assigned on the line (``HOME=. git status`` reads ``./.gitconfig``).

    None — ask every time — for those, and for whatever changes what runs behind a familiar name:
    command and process substitution, backticks (also within ``${…}`` and arithmetic), ``eval``,
    here-documents, function definitions, ``case``, a program named by a variable or a brace list,
    unbalanced quotes, a script piped into an interpreter, a program that keeps or replays commands
    (``tmux``, ``at``), and an awk program that runs commands.
    """
    why: list[str] = []
    keys = _line_keys(command, 0, tuple(posixpath.normpath(str(root)) for root in roots), why)
    return GrantKeys(None if keys is None else tuple(dict.fromkeys(keys)), why[0] if why else "")


def _line_keys(text: str, depth: int, roots: tuple[str, ...], why: list[str]) -> list[str] | None:
    if depth > _MAX_DEPTH:
        return None
    parse = parse_commands(text)
    if parse.broken or parse.dynamic:
        return None
    keys: list[str] = []
    analysed = [(command, look_through(command.words)) for command in parse.commands]
    for command, invocation in analysed:
        assigned = invocation.assigned
        if assigned:
            why.append(f"it sets {assigned[0]}, and no remembered grant covers an environment assignment")
            return None
        if "eval" in invocation.chain or invocation.too_deep or invocation.opaque:
            return None
        if _reads_program_from_stdin(invocation) and any(_upstream(o, command) for o, _ in analysed):
            return None
        for payload in invocation.payloads:
            inner = _line_keys(payload, depth + 1, roots, why)
            if inner is None:
                return None
            keys.extend(inner)
        if invocation.argv:
            if not _grantable_argv(invocation.argv):
                return None
            argv_keys = _argv_keys(invocation.argv, depth, why)
            if argv_keys is None:
                return None
            keys.extend(argv_keys)
        elif invocation.chain and not invocation.payloads:
            keys.append(invocation.chain[-1])  # ``sudo -s``, ``command -v x``, ``exec >log``
        if next(_written_files(command), None) is not None or invocation.writes:
            keys.append(">")  # a redirection, or a wrapper's output file (``time -o out``)
    return keys


def _grantable_argv(words: Sequence[Word]) -> bool:
    """False for invocations no grant may cover although their options are harmless: awk running commands."""
    name, args = program_name(words[0].text), [word.text for word in words[1:]]
    if name in ("awk", "gawk", "mawk", "nawk"):
        program = next(iter(_operands(args, frozenset({"-f", "-v", "-F"}))), "")
        return not _AWK_RUNS.search(program)
    return True


def _argv_keys(words: Sequence[Word], depth: int, why: list[str]) -> list[str] | None:
    if depth > _MAX_DEPTH:
        return None
    program = words[0]
    if program.expands or not program.text or (_GLOB.search(program.text) and program.text not in ("[", "[[")):
        return None
    if _BRACE_LIST.search(program.text):
        return None
    display, name = _display_name(program.text), program_name(program.text)
    reader = READERS.get(family(name))
    if reader is not None:
        return _interpreter_keys(display, name, words, reader, depth, why)
    runner = _runner_split(words)
    if runner is not None:
        prefix = " ".join(runner[0])
        if not runner[1]:
            return [prefix]
        inner = _argv_keys(runner[1], depth + 1, why)
        return None if inner is None else [f"{prefix} {key}" for key in inner]
    args = [word.text for word in words[1:]]
    unlisted = unlisted_options(name, args)
    if unlisted:
        why.append(f"`{unlisted[0]}` is not among the options of {name} a remembered grant may cover")
        return None
    spec = _SUBCOMMANDS.get(name)
    return [display] if spec is None else _subcommand_keys(display, args, spec)


def _interpreter_keys(
    display: str, name: str, words: Sequence[Word], reader: Reader, depth: int, why: list[str]
) -> list[str] | None:
    source = program_source(reader, [word.text for word in words[1:]])
    if source.kind == "stdin":
        return [display]
    if source.kind == "script":
        return [f"{display} {source.value}"]
    if family(name) == "python" and source.flag == "-m" and source.value:
        inner = _argv_keys([Word(source.value), *words[1 + source.after :]], depth + 1, why)
        return None if inner is None else [f"{display} -m {key}" for key in inner]
    in_place = " -i" if _has_flag([word.text for word in words[1:]], "i") and family(name) == "perl" else ""
    return [f"{display}{in_place} {source.flag} {source.value}"]  # the exact snippet, nothing broader


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
