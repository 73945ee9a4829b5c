"""How risky a shell command line is, for the permission policy.

Commands are judged on what they really run, as ``parse`` finds it: split at ``;``, ``&&``, pipes,
subshells and substitutions, looked through wrappers (``sudo``, ``env``, ``timeout``, ``xargs``,
``bash -c '…'``, ``eval`` …), so quoting, prefixes and nesting do not hide what runs, and quoted prose
(``git commit -m "rm -rf /"``) is not mistaken for a command. ``assess_command`` sorts a line into
``normal``, ``dangerous`` (always ask the user, even where commands are otherwise allowed) and
``catastrophic`` (refused, even in bypass mode). What each program does with its words is its family's
check (``programs``); what runs across the line — piped scripts, downloads run as code, fork bombs,
SQL, programs named at run time, assignments that change what runs — is judged here. Pure functions
of their arguments (no I/O).
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from collections.abc import Sequence
from pathlib import Path

from acp_hermes.permissions.shell.arguments import BRACE_LIST, GLOB, program_name
from acp_hermes.permissions.shell.parse import Command, Lines, Parse, Word, feeds
from acp_hermes.permissions.shell.programs import (
    CHECKS,
    NETWORK_PROGRAMS,
    has_rules,
    runner_split,
    uses_network,
    worth_seeing,
)
from acp_hermes.permissions.shell.programs.databases import TEXT_ONLY, sql_reasons
from acp_hermes.permissions.shell.programs.interpreters import (
    CODE_RUNNERS,
    ENVIRONMENT_PRINTERS,
    READERS,
    family,
    inline_danger,
    program_source,
    reads_program_from_stdin,
)
from acp_hermes.permissions.shell.programs.remote import DOWNLOADERS
from acp_hermes.permissions.shell.programs.system import makes_filesystem
from acp_hermes.permissions.shell.programs.wrappers import Invocation, chain_reasons, look_through
from acp_hermes.permissions.shell.rating import Call, CommandRisk, Env, Findings, resolved, write_target, written_files
from acp_hermes_tools.sensitive_paths import secret_path_reason

# Nesting beyond this limit is never needed by a real command, only by an attempt to hide
# one, so a line that exceeds it is refused rather than half-analysed.
_MAX_DEPTH = 10  # nested ``bash -c``/``eval`` payloads and runners


def assess_command(command: str, *, home: Path | None = None, roots: Sequence[Path] = (),
                   cwd: Path | None = None, hermes_home: Path | None = None, lines: Lines | None = None) -> CommandRisk:
    """Classify a shell command line.

    ``home`` defaults to the user's home directory; ``roots`` are the workspace roots, used to
    tell a recursive ``chmod``/``chown`` inside the project from one outside it; ``cwd`` is where
    the line runs (the tool's ``workdir``; the first root by default): relative paths land there,
    or wherever a ``cd`` on the line leads. ``lines``: the parses of this line's analysis, shared with
    the other rules that read it.
    """
    normalised_roots = tuple(posixpath.normpath(str(root)) for root in roots)
    env = Env(
        home=posixpath.normpath(str(home) if home is not None else os.path.expanduser("~")),
        roots=normalised_roots,
        cwd=posixpath.normpath(str(cwd)) if cwd is not None else (normalised_roots[0] if normalised_roots else None),
        hermes_home=str(hermes_home) if hermes_home is not None else None,
        lines=lines if lines is not None else Lines(),
    )
    findings = Findings()
    _assess_text(command, env, findings, 0)
    return findings.risk()


_TOO_DEEP = "too deeply nested to analyse"


class _Judge:
    """The engine as a program's check reaches it (``rating.Judge``): what a program runs is judged
    as if it stood on the line."""

    def line(self, text: str, env: Env, findings: Findings, depth: int) -> None:
        _assess_text(text, env, findings, depth)

    def words(self, words: Sequence[Word], env: Env, findings: Findings, depth: int) -> None:
        _assess_words(words, env, findings, depth)


_JUDGE = _Judge()


def _assess_text(text: str, env: Env, findings: Findings, depth: int) -> None:
    if depth > _MAX_DEPTH:
        findings.catastrophic(_TOO_DEEP)
        return
    parse = env.lines.parse(text)
    if parse.too_deep:
        findings.catastrophic(_TOO_DEEP)
    analysed = [(command, look_through(command.words)) for command in parse.commands]
    for command, invocation in analysed:
        _assess_command(command, invocation, env, findings, depth)
    _assess_downloads_piped(analysed, findings)
    _assess_piped_scripts(analysed, env, findings, depth)
    _assess_fork_bombs(parse, findings)
    _assess_sql(analysed, findings)


def _assess_command(command: Command, invocation: Invocation, env: Env, findings: Findings, depth: int) -> None:
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
    for reason in chain_reasons(invocation.chain):
        findings.dangerous(reason)
    for payload in [*invocation.payloads, *_shell_input(command, invocation)]:
        _assess_text(payload, env, findings, depth + 1)
    for target in [*written_files(command), *invocation.writes]:
        write_target(target, env, findings)
    _assess_reads(command, env, findings)
    if invocation.argv:
        _assess_argv(invocation.argv, env, findings, depth)
        _follow_cd(invocation, env, findings)
    if _runs_downloaded_code(command, invocation):
        findings.dangerous("runs downloaded code")


def _assess_words(words: Sequence[Word], env: Env, findings: Findings, depth: int) -> None:
    """A command another program runs from its own arguments (``uv run …``, ``find -exec …``), judged
    as if it stood on the line: through its wrappers and shells too (``find . -exec sh -c '…' \\;``)."""
    if depth > _MAX_DEPTH:
        findings.catastrophic(_TOO_DEEP)
        return
    command = Command((), None, list(words))
    _assess_command(command, look_through(command.words), env, findings, depth)


def _assess_argv(words: list[Word], env: Env, findings: Findings, depth: int) -> None:
    if depth > _MAX_DEPTH:
        findings.catastrophic(_TOO_DEEP)
        return
    name = program_name(words[0].text)
    call = Call(name, words, env, findings, depth, _JUDGE)
    if name in NETWORK_PROGRAMS:
        findings.network = True
    reader = READERS.get(family(name))
    if reader is not None:
        source = program_source(reader, call.args)
        if source.kind == "option" and source.flag != "-m":
            danger = inline_danger(family(name), source.value)
            if danger:
                findings.dangerous(danger)
            if family(name) != "sh":  # a shell's code was looked into as a payload
                findings.opaque.append(f"inline {family(name)} code")
    if family(name) == "python":
        source = program_source(READERS["python"], call.args)
        if source.flag == "-m" and source.value:
            _assess_argv([Word(source.value), *words[1 + source.after :]], env, findings, depth + 1)
        return
    runner = runner_split(words)
    if runner is not None and runner[1]:
        _assess_words(runner[1], env, findings, depth + 1)
    if makes_filesystem(name):
        findings.catastrophic(f"formats a filesystem ({name})")
    check = CHECKS.get(name)
    if check is not None:
        check(call)
    elif runner is None and reader is None and not has_rules(name):
        _assess_unknown_program(call)
    if uses_network(name, call.args):
        findings.network = True


# Names a glob in a command could match, to judge ``cat .env*`` like ``cat .env``.
_SECRET_SAMPLES = (".env", ".env.local", ".env.production", "id_rsa", "id_ed25519", ".netrc", ".npmrc", ".pypirc",
                   ".pgpass", ".git-credentials", "server.pem", "server.key")


def _assess_reads(command: Command, env: Env, findings: Findings) -> None:
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
        absolute = resolved(value, env)
        if absolute is None:
            continue
        reason = _secret_reason(absolute, env)
        if reason:
            findings.dangerous(f"reads {absolute}: {reason}")


def _secret_reason(path: str, env: Env) -> str | None:
    home, own = Path(env.home), Path(env.hermes_home) if env.hermes_home else None
    directory, name = posixpath.split(path)
    if GLOB.search(name):
        return next((reason for sample in _SECRET_SAMPLES if fnmatch.fnmatchcase(sample, name)
                     and (reason := secret_path_reason(Path(directory, sample), home, hermes_home=own))), None)
    return secret_path_reason(Path(path), home, hermes_home=own)


def _named_at_run_time(program: Word) -> bool:
    """A program word the shell fills in when it runs (``$x``, ``$(…)``, ``{rm,-rf,~}``): no rule
    can know what runs, so the line is never let through on the program's name. The exception is
    ``eval "$(ssh-agent -s)"``-style setup, where a known environment printer writes the code."""
    if BRACE_LIST.search(program.text):
        return True
    if program.substitutions and program.text.startswith("$(") and all(
        len(commands) == 1 and look_through(commands[0].words).name in ENVIRONMENT_PRINTERS
        for commands in program.substitutions
    ):
        return False
    return program.expands or bool(program.substitutions)


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


def _follow_cd(invocation: Invocation, env: Env, findings: Findings) -> None:
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
    env.cwd = resolved(target.text, env) or env.cwd


def _program_running_assignments(invocation: Invocation) -> list[str]:
    """Names assigned on the line (``X=1 cmd``, ``env X=1 cmd``) that change what ends up running."""
    return [name for name in invocation.assigned if _RUNS_PROGRAMS.fullmatch(name)]


def _assess_piped_scripts(
    analysed: list[tuple[Command, Invocation]], env: Env, findings: Findings, depth: int
) -> None:
    """``echo 'rm -rf ~' | sh``: what an interpreter reads from a pipe is a program no rule saw —
    but when ``echo``/``printf`` writes it from literal words, it is read like any command line."""
    for command, invocation in analysed:
        scheduler = invocation.chain[-1:] in (["at"], ["batch"])
        if not (_reads_stdin(invocation) or scheduler):
            continue
        feeding = [other for other, _ in analysed if feeds(other, command)]
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


def _reads_stdin(invocation: Invocation) -> bool:
    return reads_program_from_stdin(invocation.name, invocation.args)


def _runs_downloaded_code(command: Command, invocation: Invocation) -> bool:
    """``bash <(curl …)``, ``sh -c "$(curl …)"``, ``eval "$(wget -O- …)"`` and the like."""
    if not any(family(name) in CODE_RUNNERS for name in invocation.chain):
        return False
    return any(
        look_through(inner.words).name in DOWNLOADERS
        for word in command.words
        for commands in word.substitutions
        for inner in commands
    )


def _shell_input(command: Command, invocation: Invocation) -> list[str]:
    """Here-documents and here-strings a shell (or ``at``) reads its commands from (``bash <<EOF``)."""
    scheduler = invocation.chain[-1:] in (["at"], ["batch"])
    if not scheduler and (family(invocation.name) != "sh" or not _reads_stdin(invocation)):
        return []
    return [command.heredoc, *(target.text for op, target in command.redirects if op == "<<<")]


def _assess_downloads_piped(analysed: list[tuple[Command, Invocation]], findings: Findings) -> None:
    downloads = [command for command, invocation in analysed if invocation.name in DOWNLOADERS]
    for command, invocation in analysed:
        if _reads_stdin(invocation) and any(feeds(download, command) for download in downloads):
            findings.dangerous(f"pipes a download into {invocation.name}")


def _assess_fork_bombs(parse: Parse, findings: Findings) -> None:
    """A function that calls itself in a pipeline or in the background multiplies forever."""
    for command in parse.commands:
        name = command.function
        if name is None or not command.words or command.words[0].text != name:
            continue
        if command.background or any(parse.pipeline_sizes.get(pipeline, 1) > 1 for pipeline, _ in command.pipes):
            findings.catastrophic("fork bomb")


def _assess_sql(analysed: list[tuple[Command, Invocation]], findings: Findings) -> None:
    for command, invocation in analysed:
        if invocation.payloads:
            continue  # the payload was analysed as commands of its own
        here_strings = [target.text for op, target in command.redirects if op == "<<<"]
        text = "\n".join([" ".join(word.text for word in command.words), command.heredoc, *here_strings])
        reasons = list(sql_reasons(text))
        if reasons and invocation.name in TEXT_ONLY:
            feeds_a_program = any(
                feeds(command, other) and other_invocation.name not in TEXT_ONLY
                for other, other_invocation in analysed
            )
            if not feeds_a_program:
                continue
        for reason in reasons:
            findings.dangerous(reason)


_WHITESPACE = re.compile(r"\s")


def _assess_unknown_program(call: Call) -> None:
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
        if not worth_seeing(head) or (seen_words and not spoken):
            continue
        call.findings.opaque.append(f"{call.words[0].text} may run {head}, and acp-hermes has no rules for it")
        if spoken:
            call.rate_line(text)
        else:
            seen_words = True
            call.rate_words(call.words[index:])

