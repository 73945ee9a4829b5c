"""Wrappers and runners: programs that run the command after their own words.

``sudo``, ``env``, ``timeout``, ``xargs``, ``nohup``, tracers, namespace and privilege tools, line
editors, supervisors …: each runs the command that follows its options, and so is looked through,
never trusted by its own name. ``look_through`` finds what a simple command finally runs, the shell
code it hands over as text (``bash -c``, ``eval``, ``trap``, ``watch``), the files wrappers write on the
way (``time -o``) and what cannot be seen at all (``tmux``, ``at``, editors told to run commands).
``unwrap_for_reading`` is the stricter view of the read-only verdict: only wrappers known not to
write, with only their harmless options. Pure functions of their arguments (no I/O).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from acp_hermes.permissions.shell.arguments import names, program_name, skip_options
from acp_hermes.permissions.shell.parse import Word
from acp_hermes.permissions.shell.programs.interpreters import SHELLS

_MAX_WRAPPERS = 16  # more is never needed by a real command, only by an attempt to hide one
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=", re.S)
# Programs that run what follows as another user, root above all.
ELEVATORS = frozenset({"sudo", "doas", "su", "pkexec", "run0"})


@dataclass(frozen=True)
class _Wrapper:
    """A program that runs the command given after its options (and ``operands`` more words)."""

    short_values: str = ""  # short options that take a value
    long_values: frozenset[str] = frozenset()
    operands: int = 0
    writes: frozenset[str] = frozenset()  # options whose value is a file it writes (``time -o``, ``strace -o``)
    commands: frozenset[str] = frozenset()  # options whose value is a command it runs too (``rlwrap -z``)


def _wrapper(short_values: str = "", long_values: str = "", operands: int = 0, *, writes: str = "",
             commands: str = "") -> _Wrapper:
    return _Wrapper(short_values, names(long_values), operands, names(writes), names(commands))


_WRAPPERS: dict[str, _Wrapper] = {
    "sudo": _wrapper("CDghpRrTtUu", "--chdir --close-from --group --host --prompt --chroot --role --type --user"),
    "doas": _wrapper("Cu"),
    "pkexec": _wrapper("", "--user"),
    "run0": _wrapper("ugDp", "--user --group --nice --chdir --setenv --unit --property --description --slice "
                     "--background --machine"),
    "nohup": _wrapper(),
    "time": _wrapper("fo", "--format --output", writes="-o --output"),
    "nice": _wrapper("n", "--adjustment"),
    "timeout": _wrapper("ks", "--kill-after --signal", operands=1),
    "xargs": _wrapper("adEILnPs", "--arg-file --delimiter --max-args --max-procs --max-chars --process-slot-var"),
    "exec": _wrapper("a"),
    "command": _wrapper(),
    "builtin": _wrapper(),
    "stdbuf": _wrapper("eio", "--input --output --error"),
    "setsid": _wrapper(),
    "ionice": _wrapper("cn", "--class --classdata"),
    "taskset": _wrapper(operands=1),
    "chrt": _wrapper(operands=1),
    "unbuffer": _wrapper(),
    "caffeinate": _wrapper("tw"),
    # Multi-call binaries: ``busybox rm -rf /`` is ``rm -rf /``.
    "busybox": _wrapper(),
    "toybox": _wrapper(),
    # Tracers, debuggers of processes, namespace and privilege tools, session helpers: each runs the
    # command that follows its options, and so must be looked through, not trusted by its own name.
    "strace": _wrapper("abeEIoOpPsSuUX", "--output", writes="-o --output"),
    "ltrace": _wrapper("aAeDFlnopsuwx", "--output", writes="-o --output"),
    "valgrind": _wrapper(writes="--log-file --xml-file"),
    "unshare": _wrapper("GRSw"),
    "chroot": _wrapper("", "--userspec --groups", operands=1),
    "runuser": _wrapper("ugGsw", "--user --group --supp-group --shell --whitelist-environment"),
    "setpriv": _wrapper("", "--reuid --regid --ruid --euid --rgid --egid --groups --inh-caps --ambient-caps "
                        "--bounding-set --securebits --pdeathsig --selinux-label --apparmor-profile "
                        "--landlock-access --landlock-rule --seccomp-filter"),
    "nsenter": _wrapper("tSG", "--target --setuid --setgid"),
    "systemd-run": _wrapper("upEMH", "--unit --property --description --slice --setenv --uid --gid --machine "
                            "--host --working-directory --on-active --on-boot --on-startup --on-unit-active "
                            "--on-unit-inactive --on-calendar --timer-property --nice --service-type"),
    "firejail": _wrapper(),
    "fakeroot": _wrapper("lfsi", "--lib --faked"),
    "dbus-run-session": _wrapper("", "--config-file --dbus-daemon"),
    "xvfb-run": _wrapper("nsfepw", "--server-num --server-args --auth-file --error-file --xauth-protocol --wait"),
    "catchsegv": _wrapper(),
    "entr": _wrapper(),
    "flock": _wrapper("wE", "--timeout --conflict-exit-code", operands=1),
    "numactl": _wrapper("imCNpP"),
    "prlimit": _wrapper("p", "--pid"),
    "cgexec": _wrapper("g"),
    "eatmydata": _wrapper(),
    "nocache": _wrapper("n"),
    "torsocks": _wrapper(),
    "proxychains": _wrapper("f"),
    "proxychains4": _wrapper("f"),
    # Line editors, output and lock helpers, fake roots and personalities, process supervisors:
    # each runs the command after its options, whatever it does around it.
    "rlwrap": _wrapper("bCDefFgHlLMOPqsStwz", "--break-chars --command-name --histsize --history-no-dupes --file "
                       "--history-format --forget-matching --history-filename --logfile --multi-line-ext "
                       "--pre-given --quote-characters --substitute-prompt --set-term-name --polling --filter "
                       "--extra-char-after-completion --extra-char-before-completion",
                       writes="-l --logfile -H --history-filename", commands="-z --filter"),
    "chronic": _wrapper(),
    "ifne": _wrapper(),
    "proot": _wrapper("rbmqwkivRS", "--rootfs --bind --mount --qemu --pwd --cwd --kernel-release --change-id "
                      "--verbose", commands="-q --qemu"),
    "fakechroot": _wrapper("ecl", "--environment --config-dir --lib --elfloader"),
    "faketime": _wrapper("", "--date-prog", operands=1),
    "schroot": _wrapper("cud", "--chroot --user --directory"),
    "lckdo": _wrapper("W", operands=1),
    "setlock": _wrapper(operands=1),
    "with-lock-ex": _wrapper(operands=1),
    "envdir": _wrapper(operands=1),
    "setuidgid": _wrapper(operands=1),
    "envuidgid": _wrapper(operands=1),
    "softlimit": _wrapper("acdflmoprst"),
    "chpst": _wrapper("uUbe/nlLmdopfcrt"),
    "gosu": _wrapper(operands=1),
    "su-exec": _wrapper(operands=1),
    "tini": _wrapper("pe"),
    "dumb-init": _wrapper("r", "--rewrite"),
    "nq": _wrapper(),
    "tsp": _wrapper("LDN"),
    "dtach": _wrapper("nAcaper"),
    "abduco": _wrapper("nAcae"),
    "setarch": _wrapper(operands=1),
    **dict.fromkeys(("linux32", "linux64", "i386", "x86_64", "uname26"), _wrapper()),
    **dict.fromkeys(("ccache", "sccache", "distcc", "icecc"), _wrapper()),
    "systemd-inhibit": _wrapper("", "--what --who --why --mode"),
    "dbus-launch": _wrapper("", "--config-file --autolaunch"),
    "sshpass": _wrapper("pfdP"),
    "coproc": _wrapper(),  # bash's keyword: runs the command beside the shell
}
# Builtins that declare variables for the rest of the line: what they assign counts like ``X=1 cmd``.
_DECLARERS = frozenset({"export", "declare", "typeset", "local", "readonly"})
# Runners whose subcommand takes a name before the command it runs (``direnv exec DIR cmd``).
_RUN_AFTER: dict[tuple[str, str], int] = {("direnv", "exec"): 1, ("rustup", "run"): 1, ("podman", "unshare"): 0,
                                          ("buildah", "unshare"): 0}
_NIX_SHELLS = frozenset({"develop", "shell"})  # ``nix develop -c cmd``, ``nix shell pkgs -c cmd``
# Programs that take a shell command string in an option (``script -c 'make'``): it is looked into.
_COMMAND_OPTIONS: dict[str, tuple[str, str]] = {
    "script": ("-c", "--command"),
    "flock": ("-c", "--command"),
    "runuser": ("-c", "--command"),
    "su": ("-c", "--command"),
}
# Programs that keep or replay commands beyond the one line the user is shown — a terminal
# multiplexer, the job scheduler, editors and debuggers told to run commands: what they finally
# run cannot be seen in full, so a line with them is never let through on their name.
_OPAQUE: dict[str, str] = {
    **dict.fromkeys(("tmux", "screen"), "keeps commands running in a terminal of its own"),
    **dict.fromkeys(("at", "batch"), "schedules commands to run later"),
    **dict.fromkeys(("vim", "vi", "nvim", "ex", "view", "vimdiff", "gvim", "rvim"), "editor commands"),
    **dict.fromkeys(("gdb", "lldb"), "debugger commands"),
    "emacs": "editor commands",
    "expect": "a script of commands",
}
_OPAQUE_ALWAYS = frozenset({"tmux", "screen", "at", "batch"})
_OPAQUE_CODE_OPTIONS = names("-c --cmd -S -s -ex -iex --eval-command --init-eval-command -x --command --eval -l "
                             "--load --script -o -batch-silent")
_TMUX_VALUES = names("-c -e -F -f -L -l -n -S -s -t -x -y -w -h")
_BANG = re.compile(r"\s*:?\s*(?:silent!?\s+)?(?:!|shell\s+)(.*)", re.S)
_LOOKED_THROUGH = frozenset({*_WRAPPERS, *_COMMAND_OPTIONS, *_OPAQUE, *SHELLS, *_DECLARERS, "eval", "su", "script",
                             "sg", "entr", "parallel", "sem", "watch", "env", "command", "trap", "alias"})


@dataclass
class Invocation:
    """What a simple command runs once wrappers are looked through."""

    argv: list[Word] = field(default_factory=list)
    chain: list[str] = field(default_factory=list)  # every program on the way, outermost first
    payloads: list[str] = field(default_factory=list)  # shell code handed over as text (bash -c, eval …)
    too_deep: bool = False  # more wrappers than _MAX_WRAPPERS: what finally runs is unknown
    opaque: list[str] = field(default_factory=list)  # why what finally runs cannot all be seen
    writes: list[str] = field(default_factory=list)  # files a wrapper on the way writes (``time -o out``)
    # Names assigned on the way — ``X=1 cmd``, ``env X=1 cmd``, ``timeout 5 env X=1 cmd`` — as each
    # sets the environment of what finally runs.
    assigned: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return program_name(self.argv[0].text) if self.argv else ""

    @property
    def args(self) -> list[str]:
        return [word.text for word in self.argv[1:]]


def looked_through(name: str) -> bool:
    """Whether ``look_through`` has a rule for ``name``: a wrapper, shell, opaque or command-taking program."""
    return name in _LOOKED_THROUGH


def look_through(words: Sequence[Word]) -> Invocation:
    invocation = Invocation()
    rest = list(words)
    for _ in range(_MAX_WRAPPERS):
        while rest and (assignment := _ASSIGNMENT.match(rest[0].text)):
            invocation.assigned.append(assignment.group().rstrip("+="))
            rest = rest[1:]
        if not rest:
            break
        name = program_name(rest[0].text)
        invocation.chain.append(name)
        payload: str | None = None
        texts = [word.text for word in rest]
        if name == "script":
            invocation.writes += _script_files(texts)
        if name in _DECLARERS:  # ``export PATH=…; ls`` sets what ``PATH=… ls`` sets
            invocation.assigned += [match.group().rstrip("+=") for text in texts[1:]
                                    if (match := _ASSIGNMENT.match(text))]
            break
        if name == "trap":  # the action runs later, when the signal comes
            operands = [text for text in texts[1:] if text not in ("--", "-p", "-l", "-P")]
            payload = operands[0] if len(operands) > 1 and operands[0] != "-" else ""
        elif name == "alias":  # what each alias stands for runs wherever its name is used
            payload = "\n".join(text.partition("=")[2] for text in texts[1:] if "=" in text)
        elif name == "nix" and texts[1:2] and texts[1] in _NIX_SHELLS and ("-c" in texts or "--command" in texts):
            start = next(index for index, text in enumerate(texts) if text in ("-c", "--command"))
            rest = rest[start + 1 :]
            continue
        elif len(texts) > 1 and (name, texts[1]) in _RUN_AFTER:
            start = 1 + skip_options(texts[1:], "", frozenset())
            rest = rest[min(start + _RUN_AFTER[name, texts[1]], len(rest)) :]
            continue
        elif name in SHELLS:
            payload = _shell_payload(rest)
            if payload is None:
                break
        elif name == "eval":
            payload = " ".join(word.text for word in rest[1:])
        elif name in _COMMAND_OPTIONS and (
            code := _command_option([word.text for word in rest[1:]], *_COMMAND_OPTIONS[name])
        ) is not None:
            payload = code
        elif name in ("su", "script"):
            rest = []  # an interactive shell: nothing more on the line runs
        elif name == "sg":
            operands = [word.text for word in rest[2:] if word.text != "-c"]
            payload = " ".join(operands)
        elif name == "entr" and any(w.text.startswith("-") and "s" in w.text[1:] for w in rest[1:2]):
            start = skip_options([word.text for word in rest], "", frozenset())
            payload = rest[start].text if start < len(rest) else ""
        elif name in ("parallel", "sem"):  # sem is parallel --semaphore
            rest, payload = _parallel_command(rest)
            if payload is None:
                continue
        elif name in _OPAQUE and (name in _OPAQUE_ALWAYS or _code_option_values([w.text for w in rest[1:]])):
            invocation.opaque.append(f"{name}: {_OPAQUE[name]}")
            invocation.payloads.extend(_opaque_payloads(name, [word.text for word in rest[1:]]))
            rest = []
            break
        elif name == "watch":
            start = skip_options([word.text for word in rest], "n", frozenset({"--interval"}))
            payload = " ".join(word.text for word in rest[start:])
        elif name == "env":
            rest, payload = _env_command(rest)
        elif name == "command" and any(word.text in ("-v", "-V") for word in rest[1:2]):
            rest = []  # only asks where a program is
        elif name in _WRAPPERS:
            wrapper = _WRAPPERS[name]
            start = skip_options(texts, wrapper.short_values, wrapper.long_values)
            invocation.writes += _option_values(texts[:start], wrapper.writes, wrapper.short_values)
            invocation.payloads += [code for code in _option_values(texts[:start], wrapper.commands,
                                                                    wrapper.short_values) if code.strip()]
            rest = rest[min(start + wrapper.operands, len(rest)) :]
            continue
        else:
            break
        if payload is not None:
            if payload.strip():
                invocation.payloads.append(payload)
            rest = []
            break
    else:
        invocation.too_deep, rest = True, []
    invocation.argv = rest
    return invocation


def _option_values(words: Sequence[str], wanted: frozenset[str], short_values: str) -> list[str]:
    """The values ``words[1:]`` (options only) give the options in ``wanted``: ``-o out``, ``-fo out``,
    ``-oout``, ``--output out``, ``--output=out``; ``short_values`` are the letters that take one."""
    values = []
    for index, word in enumerate(words[1:], start=1):
        following = words[index + 1] if index + 1 < len(words) else ""
        if word.startswith("--"):
            name, equals, attached = word.partition("=")
            if name in wanted:
                values.append(attached if equals else following)
            continue
        for position, letter in enumerate(word[1:], start=1):
            if letter in short_values:
                if "-" + letter in wanted:
                    values.append(word[position + 1 :] or following)
                break
    return [value for value in values if value]


_SCRIPT_LOGS = names("-B --log-io -I --log-in -O --log-out -T --log-timing")


def _script_files(words: Sequence[str]) -> list[str]:
    """The files ``script`` writes: its typescript (the operand) and the logs its options name."""
    start = skip_options(words, "cEBIOTm", names("--command --echo --log-io --log-in --log-out --log-timing "
                                                 "--logging-format"))
    files = _option_values(words[:start], _SCRIPT_LOGS | {"--timing"}, "cEBIOTm")
    files += [word[2:] for word in words[1:start] if word.startswith("-t") and len(word) > 2]
    return files + list(words[start : start + 1])


def _command_option(args: Sequence[str], short: str, long: str) -> str | None:
    """The value of ``-c``/``--command`` also where ``-c`` closes a cluster (``su -lc 'make'``)."""
    for index, arg in enumerate(args):
        if arg == "--":
            return None
        if arg == long or (arg.startswith("-") and not arg.startswith("--") and arg.endswith(short[1])):
            return args[index + 1] if index + 1 < len(args) else ""
        if arg.startswith(long + "="):
            return arg[len(long) + 1 :]
    return None


def _parallel_command(words: list[Word]) -> tuple[list[Word], str | None]:
    """GNU parallel's command with its first input filled in (``parallel rm -rf ::: ~`` runs ``rm -rf ~``):
    as words to look through further, or as a shell string when it was given as one."""
    texts = [word.text for word in words]
    start = skip_options(texts, "jSaCdEINnPs", names("--jobs --sshlogin --arg-file --colsep --delimiter --max-args "
                                                       "--replace --tmpdir --joblog --results --id --semaphorename "
                                                       "--timeout"))
    end = next((index for index in range(start, len(words)) if texts[index] in (":::", "::::", ":::+")), len(words))
    inputs = [Word(text) for text in texts[end + 1 :] if text not in (":::", "::::", ":::+")][:1]
    command = list(words[start:end])
    if len(command) == 1 and " " in command[0].text:
        return [], command[0].text.replace("{}", inputs[0].text if inputs else "")
    return command + inputs, None


def _opaque_payloads(name: str, args: list[str]) -> list[str]:
    """What can be read of the commands an opaque program is told to run (``vim -c '!rm -rf ~'``,
    ``gdb -ex 'shell …'``, ``tmux new 'make'``), so a catastrophic one is still refused."""
    if name in ("tmux", "screen"):
        operands, index = [], 0
        while index < len(args):
            if args[index] in _TMUX_VALUES:
                index += 2
                continue
            if not args[index].startswith("-"):
                operands.append(args[index])
            index += 1
        operands = operands[1:] if name == "tmux" else operands  # tmux's first operand is its own command
        return [" ".join(operands)] if operands else []
    found = []
    for value in _code_option_values(args):
        match = _BANG.fullmatch(value)
        if match and match.group(1).strip():
            found.append(match.group(1))
    return found


def _code_option_values(args: list[str]) -> list[str]:
    """The values of an editor's or debugger's options that carry commands (``-c``, ``-ex``, ``+cmd``)."""
    values = []
    for index, arg in enumerate(args):
        if arg.startswith("+") and not arg[1:].isdigit():
            values.append(arg[1:])
        elif arg in _OPAQUE_CODE_OPTIONS and index + 1 < len(args):
            values.append(args[index + 1])
        elif arg.partition("=")[0] in _OPAQUE_CODE_OPTIONS and "=" in arg:
            values.append(arg.partition("=")[2])
    return values


def _shell_payload(words: Sequence[Word]) -> str | None:
    """The command string of ``sh -c '…'`` (also ``-lc``, ``-ec``), or None when it runs a script."""
    has_code = False
    index = 1
    while index < len(words):
        text = words[index].text
        if text in ("-o", "-O", "+o", "+O", "--rcfile", "--init-file"):
            index += 2
        elif text == "--":
            index += 1
            break
        elif text.startswith("--"):
            index += 1
        elif len(text) > 1 and text[0] in "-+":
            has_code = has_code or (text[0] == "-" and "c" in text[1:])
            index += 1
        else:
            break
    if has_code and index < len(words):
        return words[index].text
    return None


def _env_command(words: list[Word]) -> tuple[list[Word], str | None]:
    """``env [options] [NAME=value …] command``; ``-S 'cmd args'`` hands over a command string."""
    index = 1
    while index < len(words):
        text = words[index].text
        if text == "--":
            index += 1
            break
        if text.startswith(("-S", "--split-string")):
            attached = text[2:] if text.startswith("-S") else text.partition("=")[2]
            rest = words[index + 1 :] if attached else words[index + 2 :]
            value = attached or (words[index + 1].text if index + 1 < len(words) else "")
            return [], " ".join([value, *(word.text for word in rest)])
        if text in ("-u", "-C", "--unset", "--chdir"):
            index += 2
        elif text.startswith("-"):
            index += 1
        else:
            break
    return words[index:], None


def chain_reasons(chain: Sequence[str]) -> list[str]:
    """Why the wrappers on the way make a line dangerous: running as root, or as a system service."""
    reasons = []
    for name in chain:
        if name in ELEVATORS:
            reasons.append(f"runs as root ({name})")
        elif name == "systemd-run":
            reasons.append("runs a command as a system service, outside the agent's control (systemd-run)")
    return reasons


# ---------------------------------------------------------------------------------------------
# The read-only view: only wrappers known not to write
# ---------------------------------------------------------------------------------------------

_MAX_READ_WRAPPERS = 8


@dataclass(frozen=True)
class _ReadWrapper:
    """A program that runs the command after its options; only these options keep it from writing."""

    flags: frozenset[str] = frozenset()
    valued: frozenset[str] = frozenset()  # take an inert value, attached or as the next word
    operands: int = 0  # words before the command (timeout's duration)


# Not ``time -o`` (writes), ``nohup`` (may write nohup.out), ``sudo``, ``env -S`` (a command string) …
_READ_WRAPPERS: dict[str, _ReadWrapper] = {
    "command": _ReadWrapper(names("-p")),
    "builtin": _ReadWrapper(),
    "time": _ReadWrapper(names("-p")),
    "nice": _ReadWrapper(valued=names("-n --adjustment")),
    "timeout": _ReadWrapper(names("--preserve-status --foreground -v --verbose"),
                            names("-s --signal -k --kill-after"), 1),
    "stdbuf": _ReadWrapper(valued=names("-i -o -e --input --output --error")),
    "env": _ReadWrapper(names("-i --ignore-environment -0 --null"), names("-u --unset")),
    "xargs": _ReadWrapper(
        names("-0 --null -r --no-run-if-empty -t --verbose -x --exit -o --open-tty"),
        names("-a --arg-file -d --delimiter -E -I -L -n --max-args -P --max-procs -s --max-chars"),
    ),
}
# Shells whose ``-c`` string is read like the line itself; zsh reads ~/.zshenv even then.
_READ_SHELLS = names("sh bash dash")
_SHELL_OPTION = re.compile(r"-[ceuxvfC]+|--norc|--noprofile")
_SHELL_SETTINGS = names("pipefail errexit nounset xtrace noglob noclobber")
# Variables that change only how programs print, never what runs or where they read configuration.
_HARMLESS_VARIABLE = re.compile(
    r"LC_[A-Z]+|LANG|LANGUAGE|TZ|NO_COLOR|FORCE_COLOR|CLICOLOR|CLICOLOR_FORCE|COLUMNS|LINES"
)
_NAMED_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=", re.S)


@dataclass
class Unwrapped:
    """A simple command seen through its wrappers: the program's words, or the shell code it runs."""

    argv: list[Word]
    payload: str | None = None
    xargs: bool = False  # its arguments also come from standard input


def unwrap_for_reading(words: Sequence[Word]) -> Unwrapped | None:
    """The program a command runs through the wrappers known not to write, or None when anything on the
    way is not known to be harmless (an assignment, a wrapper or option, a word the shell splits)."""
    rest, xargs = list(words), False
    for _ in range(_MAX_READ_WRAPPERS):
        while rest and (assignment := _NAMED_ASSIGNMENT.match(rest[0].text)):
            if not _HARMLESS_VARIABLE.fullmatch(assignment.group(1)):
                return None
            rest = rest[1:]
        if not rest:
            return Unwrapped([], xargs=xargs)
        name = program_name(rest[0].text)
        if name in _READ_SHELLS:
            payload = _strict_shell_payload(rest)
            return None if payload is None or xargs else Unwrapped([], payload)
        wrapper = _READ_WRAPPERS.get(name)
        if wrapper is None:
            return Unwrapped(rest, xargs=xargs)
        if name == "command" and rest[1:2] and rest[1].text in ("-v", "-V"):
            return Unwrapped([], xargs=xargs)  # only asks where a program is
        start = _after_options(wrapper, [word.text for word in rest])
        if start is None or any(word.expands for word in rest[1:start]):
            return None  # an expansion there splits into words: options, or the program itself
        rest, xargs = rest[start:], xargs or name == "xargs"
    return None


def _after_options(wrapper: _ReadWrapper, words: list[str]) -> int | None:
    """Index of the wrapped command in ``words`` (``words[0]`` is the wrapper), or None when an
    option is not one of the wrapper's harmless ones."""
    index = 1
    while index < len(words):
        word = words[index]
        if word == "--":
            index += 1
            break
        if not word.startswith("-") or word == "-":
            break
        index += 1
        if word.startswith("--"):
            name, has_value, _ = word.partition("=")
            if name in wrapper.valued and not has_value:
                index += 1
            elif name not in wrapper.flags and name not in wrapper.valued:
                return None
            continue
        for position, letter in enumerate(word[1:], start=1):
            option = "-" + letter
            if option in wrapper.valued:
                index += 0 if position < len(word) - 1 else 1  # the rest of the word, or the next one
                break
            if option not in wrapper.flags:
                return None
    index += wrapper.operands
    return index if index <= len(words) else None


def _strict_shell_payload(words: Sequence[Word]) -> str | None:
    """The command string of ``bash -c '…'`` with options that change nothing else, else None
    (a script, standard input, a login or interactive shell reading its start-up files)."""
    index, has_code = 1, False
    while index < len(words):
        text = words[index].text
        if text in ("-o", "+o") and index + 1 < len(words) and words[index + 1].text in _SHELL_SETTINGS:
            index += 2
        elif _SHELL_OPTION.fullmatch(text):
            has_code = has_code or (not text.startswith("--") and "c" in text)
            index += 1
        else:
            break
    if not has_code or index >= len(words):
        return None
    return words[index].text
