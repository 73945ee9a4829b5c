"""A quote-aware shell parser: what a command line really runs, for the risk rules.

Kept apart from ``command_risk`` because parsing and judging are separate jobs: this module
knows shell syntax and the habits of wrappers and interpreters, ``risk`` knows which commands
are dangerous. ``parse_commands`` splits a line into the simple commands it runs — across ``;``,
``&&``, ``||``, pipes, ``&``, newlines, subshells, ``$( … )``, backticks and process
substitutions, also within ``${…}`` and arithmetic — so quoted prose (``git commit -m "rm -rf /"``)
is not mistaken for a command.
``look_through`` sees past wrappers (``sudo``, ``env``, ``timeout``, ``xargs``, ``bash -c '…'``,
``eval`` …) and ``program_source`` tells where an interpreter reads its program from. Pure
functions of their arguments (no I/O).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

# Nesting beyond these limits is never needed by a real command, only by an attempt to hide
# one, so a line that exceeds them is marked as unanalysable rather than half-parsed.
_MAX_NESTING = 40  # nested brackets and substitutions
_MAX_WRAPPERS = 16


def names(text: str) -> frozenset[str]:
    """A set of names written as one space-separated string, to keep rule tables compact."""
    return frozenset(text.split())


# ---------------------------------------------------------------------------------------------
# Parsing: a command line into the simple commands it runs
# ---------------------------------------------------------------------------------------------

_OPERATORS = (
    ";;&", "&>>", "<<<", "<<-",
    "&&", "||", ";;", ";&", "|&", "&>", ">>", ">|", ">&", "<<", "<&", "<>",
    ";", "&", "|", "(", ")", "<", ">",
)  # fmt: skip
_REDIRECTS = frozenset({"&>>", "<<<", "<<-", "&>", ">>", ">|", ">&", "<<", "<&", "<>", "<", ">"})
_SEPARATORS = frozenset({";", "\n", "&", "&&", "||", ";;", ";&", ";;&"})
_WORD_BREAK = frozenset(" \t\r\n;&|()<>")
_FD_PREFIX = re.compile(r"\d+(?=[<>])")
_PARAMETER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9?#@*$!-]")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=", re.S)
_SKIPPED_KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "esac", "!", "}"})
_ANSI_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "'": "'", '"': '"', "\\": "\\"}


@dataclass(eq=False)
class Word:
    """One shell word: ``text`` has quotes removed; expansions stay as written (``$HOME``)."""

    text: str = ""
    quoted: bool = False
    expands: bool = False
    substitutions: list[list[Command]] = field(default_factory=list)


@dataclass(eq=False)
class Command:
    """A simple command. ``pipes`` holds (pipeline id, stage) for every pipeline it is part of."""

    pipes: tuple[tuple[int, int], ...]
    function: str | None
    words: list[Word] = field(default_factory=list)
    redirects: list[tuple[str, Word]] = field(default_factory=list)
    background: bool = False
    heredoc: str = ""


@dataclass
class Parse:
    commands: list[Command] = field(default_factory=list)
    pipeline_sizes: dict[int, int] = field(default_factory=dict)
    broken: bool = False  # unbalanced quotes or brackets, stray operators
    too_deep: bool = False  # nesting beyond _MAX_NESTING; the rest was not parsed
    nesting: int = 0
    dynamic: bool = False  # substitutions, here-docs, functions, case: what runs is not all on the line
    # Each ``((`` found to open a subshell, by text and position: it is tried as arithmetic only once,
    # or nesting them would double the work at every level.
    subshells: set[tuple[str, int]] = field(default_factory=set)
    pending_heredocs: list[tuple[Command, Word, bool]] = field(default_factory=list)


@dataclass(frozen=True)
class _Token:
    kind: Literal["word", "op", "eof"]
    value: str = ""
    word: Word | None = None

    def is_op(self, value: str) -> bool:
        return self.kind == "op" and self.value == value

    def is_keyword(self, value: str) -> bool:
        word = self.word
        return word is not None and not word.quoted and not word.expands and word.text == value


@dataclass(frozen=True)
class _Scope:
    pipes: tuple[tuple[int, int], ...] = ()
    function: str | None = None

    def at(self, pipeline: int, stage: int) -> _Scope:
        return _Scope((*self.pipes, (pipeline, stage)), self.function)


class _Parser:
    """Recursive descent over one text; nested substitutions share the same ``Parse``."""

    def __init__(self, text: str, result: Parse, pos: int = 0) -> None:
        self.text = text
        self.result = result
        self.pos = pos
        self._lookahead: _Token | None = None

    # -- tokens --------------------------------------------------------------------------------

    def peek(self) -> _Token:
        if self._lookahead is None:
            self._lookahead = self._lex()
        return self._lookahead

    def take(self) -> _Token:
        token = self.peek()
        self._lookahead = None
        return token

    def _lex(self) -> _Token:
        text, end = self.text, len(self.text)
        while self.pos < end:
            char = text[self.pos]
            if char in " \t\r":
                self.pos += 1
            elif text.startswith("\\\n", self.pos):
                self.pos += 2
            elif char == "#":
                newline = text.find("\n", self.pos)
                self.pos = end if newline < 0 else newline
            else:
                break
        if self.pos >= end:
            return _Token("eof")
        if text[self.pos] == "\n":
            self.pos += 1
            self._read_heredocs()
            return _Token("op", "\n")
        if text.startswith(("<(", ">("), self.pos):
            return self._read_word()
        fd = _FD_PREFIX.match(text, self.pos)
        start = fd.end() if fd else self.pos
        for op in _OPERATORS:
            if text.startswith(op, start):
                self.pos = start + len(op)
                return _Token("op", op)
        return self._read_word()

    def _read_word(self) -> _Token:
        word = Word()
        parts: list[str] = []
        text, end = self.text, len(self.text)
        if text.startswith(("<(", ">("), self.pos):
            start = self.pos
            self.pos += 1
            word.substitutions.append(self._substitution())
            parts.append(text[start : self.pos])
            word.expands = True
        while self.pos < end:
            char = text[self.pos]
            if char in _WORD_BREAK:
                break
            if char == "\\":
                if not text.startswith("\\\n", self.pos):
                    parts.append(text[self.pos + 1 : self.pos + 2])
                    word.quoted = True
                self.pos += 2
            elif char == "'":
                close = text.find("'", self.pos + 1)
                if close < 0:
                    self.result.broken = True
                    close = end
                parts.append(text[self.pos + 1 : close])
                self.pos = close + 1
                word.quoted = True
            elif char == '"':
                self._read_double_quoted(word, parts)
            elif text.startswith("$'", self.pos):
                self._read_ansi_quoted(word, parts)
            elif text.startswith('$"', self.pos):
                self.pos += 1
                self._read_double_quoted(word, parts)
            elif not self._read_expansion(word, parts):
                parts.append(char)
                self.pos += 1
        self.pos = min(self.pos, end)
        word.text = "".join(parts)
        return _Token("word", word.text, word)

    def _read_double_quoted(self, word: Word, parts: list[str]) -> None:
        text, end = self.text, len(self.text)
        word.quoted = True
        self.pos += 1
        while self.pos < end:
            char = text[self.pos]
            if char == '"':
                self.pos += 1
                return
            if char == "\\" and self.pos + 1 < end and text[self.pos + 1] in '$`"\\\n':
                if text[self.pos + 1] != "\n":
                    parts.append(text[self.pos + 1])
                self.pos += 2
            elif char in "$`" and self._read_expansion(word, parts, quoted=True):
                continue
            else:
                parts.append(char)
                self.pos += 1
        self.result.broken = True

    def _read_ansi_quoted(self, word: Word, parts: list[str]) -> None:
        text, end = self.text, len(self.text)
        word.quoted = True
        index = self.pos + 2
        while index < end and text[index] != "'":
            if text[index] == "\\" and index + 1 < end:
                escaped = text[index + 1]
                parts.append(_ANSI_ESCAPES.get(escaped, "\\" + escaped))
                index += 2
            else:
                parts.append(text[index])
                index += 1
        if index >= end:
            self.result.broken = True
        self.pos = index + 1

    def _read_expansion(self, word: Word, parts: list[str], *, quoted: bool = False) -> bool:
        """``$…`` and backquote forms; returns False for a ``$`` that is just a character. ``quoted``:
        inside double quotes, where single quotes in a ``${…}`` no longer stop a substitution."""
        text, start = self.text, self.pos
        if text.startswith("$(", start):
            if not (text.startswith("(", start + 2) and self._arithmetic(word, start + 1)):
                self.pos += 1
                word.substitutions.append(self._substitution())
        elif text.startswith("${", start):
            self.pos += 2
            self._read_enclosed(word, "}", quoted=quoted)
        elif text.startswith("`", start):
            body = self._backquoted_body()
            first = len(self.result.commands)
            _Parser(body, self.result).nested_list(_Scope())
            word.substitutions.append(self.result.commands[first:])
            self.result.dynamic = True
        else:
            parameter = _PARAMETER.match(text, start + 1) if text.startswith("$", start) else None
            if parameter is None:
                return False
            self.pos = parameter.end()
        parts.append(text[start : self.pos])
        word.expands = True
        return True

    def _substitution(self) -> list[Command]:
        """The commands of the ``( … )`` at ``pos``: they run, so they are analysed like any other."""
        self.result.dynamic = True
        first = len(self.result.commands)
        inner = _Parser(self.text, self.result, self.pos + 1)
        inner.nested_list(_Scope(), end=")")
        self.pos = inner.pos
        return self.result.commands[first:]

    def _arithmetic(self, word: Word, at: int) -> bool:
        """The ``((…))`` whose first ``(`` is at ``at``, read as arithmetic where the shell reads it so:
        only when the inner ``(`` closes right before a second ``)`` — ``$((ls) | wc)`` and
        ``((ls); pwd)`` run commands. Otherwise False, with what was read undone, to be read again as a
        subshell. The substitutions inside run (``(( $(rm -rf ~) ))``), so they are parsed into ``word``."""
        result, pos = self.result, self.pos
        if (self.text, at) in result.subshells:
            return False
        undo = (len(result.commands), len(word.substitutions), result.broken, list(result.pending_heredocs))
        self.pos = at + 2
        if self._read_enclosed(word, ")", quoted=True, nests="(") and self.text.startswith(")", self.pos):
            self.pos += 1
            return True
        if result.too_deep:
            return True  # nothing more is read
        result.subshells.add((self.text, at))
        del result.commands[undo[0] :], word.substitutions[undo[1] :]
        result.broken, result.pending_heredocs[:], self.pos = undo[2], undo[3], pos
        return False

    def _read_enclosed(self, word: Word, closing: str, *, quoted: bool, nests: str = "") -> bool:
        """Read on past the ``closing`` of a ``${…}`` or ``((…))`` (``pos`` just inside it), matching
        quotes and nested forms as the shell does; ``nests`` opens one more level (``${`` ends at its
        first ``}``). Substitutions inside run (``${x:-$(rm -rf ~)}``), so they are parsed into ``word``
        — also in single quotes where those do not quote: in arithmetic and within double quotes
        (``"${x:-'$(id)'}"`` runs ``id``). False when it never closes."""
        result, text, end = self.result, self.text, len(self.text)
        if result.nesting >= _MAX_NESTING:
            result.broken = result.too_deep = True
            self.pos = end
            return False
        result.nesting += 1
        try:
            depth, parts = 1, list[str]()
            while self.pos < end:
                char = text[self.pos]
                if char == "\\":
                    self.pos += 2
                elif char == "'":
                    close = text.find("'", self.pos + 1)
                    close = end if close < 0 else close
                    if quoted:
                        _Parser(text[self.pos + 1 : close], result).expand(word)
                    self.pos = close + 1
                elif char == '"':
                    self._read_double_quoted(word, parts)
                elif text.startswith("$'", self.pos):
                    self._read_ansi_quoted(word, parts)
                elif not (char in "$`" and self._read_expansion(word, parts, quoted=quoted)):
                    depth += (char in nests) - (char == closing)
                    self.pos += 1
                    if depth == 0:
                        return True
            result.broken = True
            self.pos = end
            return False
        finally:
            result.nesting -= 1

    def _backquoted_body(self) -> str:
        text, index, body = self.text, self.pos + 1, []
        while index < len(text):
            char = text[index]
            if char == "\\" and index + 1 < len(text) and text[index + 1] in "$`\\":
                body.append(text[index + 1])
                index += 2
            elif char == "`":
                self.pos = index + 1
                return "".join(body)
            else:
                body.append(char)
                index += 1
        self.result.broken = True
        self.pos = len(text)
        return "".join(body)

    def _read_heredocs(self) -> None:
        text, end = self.text, len(self.text)
        while self.result.pending_heredocs:
            command, delimiter_word, strip_tabs = self.result.pending_heredocs.pop(0)
            delimiter = delimiter_word.text
            lines = []
            while self.pos < end:
                newline = text.find("\n", self.pos)
                newline = end if newline < 0 else newline
                line = text[self.pos : newline]
                self.pos = min(newline + 1, end)
                if strip_tabs:
                    line = line.lstrip("\t")
                if line == delimiter:
                    break
                lines.append(line)
            command.heredoc = "\n".join(lines)
            if not delimiter_word.quoted:  # ``<<EOF``: the shell expands the body, substitutions run
                _Parser(command.heredoc, self.result).expand_heredoc(command)

    def expand_heredoc(self, command: Command) -> None:
        """The substitutions in an unquoted here-document's body run like any others: parse them."""
        word = Word()
        self.expand(word)
        for commands in word.substitutions:
            for inner in commands:
                inner.pipes = command.pipes + inner.pipes

    def expand(self, word: Word) -> None:
        """Parse into ``word`` the substitutions of a text the shell expands whatever quotes it holds
        (a here-document's body, single quotes in arithmetic): they run like any others."""
        text, end, parts = self.text, len(self.text), list[str]()
        while self.pos < end:
            if text[self.pos] == "\\":
                self.pos += 2
            elif not (text[self.pos] in "$`" and self._read_expansion(word, parts, quoted=True)):
                self.pos += 1

    # -- grammar -------------------------------------------------------------------------------

    def nested_list(self, scope: _Scope, end: str | None = None, *, body: bool = False) -> None:
        """``parse_list`` (or one function ``body``) one level deeper, bounded so that no input can
        exhaust the stack; what lies deeper is left unparsed and the line counts as unanalysable."""
        result = self.result
        if result.nesting >= _MAX_NESTING:
            result.broken = result.too_deep = True
            self.pos, self._lookahead = len(self.text), None
            return
        result.nesting += 1
        try:
            if body:
                self._element(scope)
            else:
                self.parse_list(scope, end)
        finally:
            result.nesting -= 1

    def parse_list(self, scope: _Scope, end: str | None = None) -> None:
        started = False
        while True:
            token = self.peek()
            if token.kind == "eof":
                if end is not None:
                    self.result.broken = True
                return
            if token.is_op(")"):
                self.take()
                if end == ")":
                    return
                self.result.broken = True
            elif end == "}" and token.is_keyword("}"):
                self.take()
                return
            elif token.kind == "op" and token.value in _SEPARATORS:
                self.take()
                if token.value in ("&&", "||") and (not started or self._at_end_of_list()):
                    self.result.broken = True
            elif token.kind == "op" and token.value in ("|", "|&"):
                self.take()
                self.result.broken = True
            else:
                first, before = len(self.result.commands), (self.pos, token)
                started = True
                self._pipeline(scope)
                if (self.pos, self._lookahead) == before:  # nothing consumed: skip the stray token
                    self.take()
                    self.result.broken = True
                if self.peek().is_op("&"):
                    for command in self.result.commands[first:]:
                        command.background = True

    def _at_end_of_list(self) -> bool:
        """After ``&&``, ``||`` or ``|``: skip newlines and tell whether a command is missing."""
        while self.peek().is_op("\n"):
            self.take()
        token = self.peek()
        return token.kind == "eof" or (token.kind == "op" and token.value in _SEPARATORS | {")", "|", "|&"})

    def _pipeline(self, scope: _Scope) -> None:
        pipeline = len(self.result.pipeline_sizes)
        self.result.pipeline_sizes[pipeline] = 1
        stage = 0
        self._element(scope.at(pipeline, stage))
        while self.peek().kind == "op" and self.peek().value in ("|", "|&"):
            self.take()
            if self._at_end_of_list():
                self.result.broken = True
            stage += 1
            self.result.pipeline_sizes[pipeline] = stage + 1
            self._element(scope.at(pipeline, stage))

    def _element(self, scope: _Scope) -> None:
        token = self.peek()
        if token.is_op("("):
            self.take()
            arithmetic = Word()
            if self.text.startswith("(", self.pos) and self._arithmetic(arithmetic, self.pos - 1):
                self._adopt(arithmetic, scope)
                return
            self.nested_list(scope, ")")
            self._group_redirects(scope)
        elif token.is_keyword("{"):
            self.take()
            self.nested_list(scope, "}")
            self._group_redirects(scope)
        else:
            self._simple_command(scope)

    def _group_redirects(self, scope: _Scope) -> None:
        if self.peek().kind == "op" and self.peek().value in _REDIRECTS:
            command = Command(scope.pipes, scope.function)
            self.result.commands.append(command)
            while self.peek().kind == "op" and self.peek().value in _REDIRECTS:
                self._redirect(command, self.take().value, scope)

    def _simple_command(self, scope: _Scope) -> None:
        command = Command(scope.pipes, scope.function)
        self.result.commands.append(command)
        while True:
            token = self.peek()
            if token.kind == "eof":
                return
            if token.kind == "op":
                if token.value in _REDIRECTS:
                    self._redirect(command, self.take().value, scope)
                    continue
                if token.value != "(":
                    return
                self.take()
                if len(command.words) == 1 and not command.redirects and self.peek().is_op(")"):
                    self.take()
                    self.result.commands.remove(command)
                    self._function(command.words[0].text, scope)
                    return
                self.result.broken = True
                self.nested_list(scope, ")")
                continue
            self.take()
            word = token.word or Word()
            self._adopt(word, scope)
            if not command.words and not command.redirects and not word.quoted and not word.expands:
                if self._keyword(word.text, command, scope):
                    return
                if word.text in _SKIPPED_KEYWORDS or word.text in ("{", "case"):
                    continue
            command.words.append(word)

    def _keyword(self, keyword: str, command: Command, scope: _Scope) -> bool:
        """Handle a reserved word at command position; True when it ended the command."""
        if keyword == "{":
            self.nested_list(scope, "}")
        elif keyword in ("for", "select"):  # the header names a variable and a word list, runs nothing
            while self.peek().kind == "word":
                self._adopt(self.take().word or Word(), scope)
            return True
        elif keyword == "case":
            self.result.dynamic = True
            while self.peek().kind == "word" and not self.peek().is_keyword("in"):
                self._adopt(self.take().word or Word(), scope)
            if self.peek().is_keyword("in"):
                self.take()
        elif keyword == "function" and self.peek().kind == "word":
            name = self.take().value
            if self.peek().is_op("("):
                self.take()
                if self.peek().is_op(")"):
                    self.take()
            self.result.commands.remove(command)
            self._function(name, scope)
            return True
        return False

    def _function(self, name: str, scope: _Scope) -> None:
        self.result.dynamic = True
        while self.peek().is_op("\n"):
            self.take()
        self.nested_list(_Scope(scope.pipes, name), body=True)

    def _redirect(self, command: Command, op: str, scope: _Scope) -> None:
        token = self.peek()
        if token.kind != "word" or token.word is None:
            self.result.broken = True
            return
        self.take()
        self._adopt(token.word, scope)
        command.redirects.append((op, token.word))
        if op in ("<<", "<<-"):
            self.result.pending_heredocs.append((command, token.word, op == "<<-"))
            self.result.dynamic = True

    @staticmethod
    def _adopt(word: Word, scope: _Scope) -> None:
        """Commands substituted into a word run in the enclosing command's pipelines."""
        for commands in word.substitutions:
            for command in commands:
                command.pipes = scope.pipes + command.pipes
                command.function = command.function or scope.function


def parse_commands(text: str) -> Parse:
    result = Parse()
    _Parser(text, result).parse_list(_Scope())
    return result


# ---------------------------------------------------------------------------------------------
# Looking through wrappers
# ---------------------------------------------------------------------------------------------


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
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh"})
_LOOKED_THROUGH = frozenset({*_WRAPPERS, *_COMMAND_OPTIONS, *_OPAQUE, *_SHELLS, *_DECLARERS, "eval", "su", "script",
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


def program_name(text: str) -> str:
    return posixpath.basename(text).lower()


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
        elif name in _SHELLS:
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


def skip_options(words: Sequence[str], short_values: str, long_values: frozenset[str]) -> int:
    """Index of the first operand after ``words[0]``'s options (value-taking ones consume it)."""
    index = 1
    while index < len(words):
        word = words[index]
        if word == "--":
            return index + 1
        if word.startswith("--"):
            index += 2 if "=" not in word and word in long_values else 1
            continue
        if not word.startswith("-") or word == "-":
            break
        index += 1
        for position, flag in enumerate(word[1:], start=1):
            if flag in short_values:
                if position == len(word) - 1:
                    index += 1
                break
    return index


def option_value(args: Sequence[str], short: str, long: str) -> str | None:
    for index, arg in enumerate(args):
        if arg in (short, long):
            return args[index + 1] if index + 1 < len(args) else None
        if arg.startswith(long + "="):
            return arg[len(long) + 1 :]
    return None


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


# ---------------------------------------------------------------------------------------------
# Interpreters: where they read their program from
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reader:
    code: str = ""  # short options whose argument is the program or a module (python -c, -m)
    values: str = ""  # short options that take a value
    long_code: frozenset[str] = frozenset()
    long_values: frozenset[str] = frozenset()
    stdin: str = ""  # short options that read the program from stdin (sh -s)


@dataclass(frozen=True)
class Source:
    """Where an interpreter's program comes from: stdin, a script, or a code/module option."""

    kind: Literal["stdin", "script", "option"]
    flag: str = ""
    value: str = ""
    after: int = 0  # index in the arguments of the first one after ``value``


READERS: dict[str, Reader] = {
    "sh": Reader(code="c", values="oO", long_values=frozenset({"--rcfile", "--init-file"}), stdin="s"),
    "python": Reader(code="cm", values="WX"),
    "perl": Reader(code="eE", values="I"),
    "ruby": Reader(code="e", values="rI"),
    "node": Reader(
        code="ep",
        values="r",
        long_code=frozenset({"--eval", "--print"}),
        long_values=frozenset({"--require", "--import", "--loader", "--experimental-loader", "--input-type"}),
    ),
    "php": Reader(code="rf", values="dc"),
    "lua": Reader(code="e", values="l"),
    "source": Reader(),
}
_PYTHON = re.compile(r"python[0-9.]*|pypy[0-9.]*|py")


def family(name: str) -> str:
    if _PYTHON.fullmatch(name):
        return "python"
    if name in _SHELLS:
        return "sh"
    if name == ".":
        return "source"
    return {"nodejs": "node"}.get(name, name)


def program_source(reader: Reader, args: Sequence[str]) -> Source:
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in ("-", "/dev/stdin"):
            return Source("stdin")
        if arg == "--":
            index += 1
            break
        if arg.startswith("--"):
            name, has_value, value = arg.partition("=")
            if name in reader.long_code:
                if has_value:
                    return Source("option", name, value, index + 1)
                return Source("option", name, args[index + 1] if index + 1 < len(args) else "", index + 2)
            index += 2 if name in reader.long_values and not has_value else 1
            continue
        if len(arg) > 1 and arg[0] in "-+":
            index += 1
            for position, letter in enumerate(arg[1:], start=1):
                attached = arg[position + 1 :]
                if arg[0] == "-" and letter in reader.code:
                    if attached:
                        return Source("option", f"-{letter}", attached, index)
                    return Source("option", f"-{letter}", args[index] if index < len(args) else "", index + 1)
                if letter in reader.stdin:
                    return Source("stdin")
                if letter in reader.values:
                    if not attached:
                        index += 1
                    break
            continue
        break
    if index < len(args) and args[index] not in ("-", "/dev/stdin"):
        return Source("script", value=args[index], after=index + 1)
    return Source("stdin")
