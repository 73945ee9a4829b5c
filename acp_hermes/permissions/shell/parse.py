"""A quote-aware shell parser: the simple commands a line runs.

``parse_commands`` splits a line into the simple commands it runs — across ``;``, ``&&``, ``||``,
pipes, ``&``, newlines, subshells, ``$( … )``, backticks and process substitutions, also within
``${…}`` and arithmetic — so quoted prose (``git commit -m "rm -rf /"``) is not mistaken for a
command. It knows shell syntax only; what the programs do is ``programs``' business. ``Lines`` is one
analysis's parser: each text it is asked about (the line, the ``bash -c`` payloads in it) is parsed
once, whichever rule asks. Pure functions of their arguments (no I/O).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

# Nesting beyond this limit is never needed by a real command, only by an attempt to hide one, so a
# line that exceeds it is marked as unanalysable rather than half-parsed.
_MAX_NESTING = 40  # nested brackets and substitutions

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


class Lines:
    """The parses of one analysis: each text is parsed once, however many rules read it."""

    def __init__(self) -> None:
        self._parses: dict[str, Parse] = {}

    def parse(self, text: str) -> Parse:
        found = self._parses.get(text)
        if found is None:
            found = self._parses[text] = parse_commands(text)
        return found


def feeds(first: Command, second: Command) -> bool:
    """Whether ``first`` feeds ``second`` through a pipe."""
    stages = dict(first.pipes)
    return any(pipeline in stages and stages[pipeline] < stage for pipeline, stage in second.pipes)
