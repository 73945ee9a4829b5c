"""Frames around text the model must read as data, and how that text is kept from closing them.

Recall rides in ``<memory-context>``, a background job's output in ``<job-output>``, an attached file in
``<attachment>``, and so on. What is inside may have been written by anyone (a web page, a job, a stored
fact), and a model takes a closing tag for one however it is spelt: ``</MEMORY-CONTEXT>``,
``</memory-context >``, ``&lt;/memory-context&gt;``, ``＜/memory‐context＞``. So a frame's tags are
looked for in a *reading* of the text: HTML character references decoded (nested ones too, as
``&amp;lt;``), the injection scanner's folding (``memory.scan.reading``: hidden characters dropped,
full-width forms and look-alike letters folded), angle brackets, slashes and dashes that imitate ASCII
ones folded to them, case ignored, whitespace allowed inside the tag and between the words of its
name, a backslash before the slash, attributes. Every tag of the frame found that way, opening or
closing, is replaced in the original text by a bracketed stand-in (``[/memory-context]``) that no
reader takes for a tag. ``framed`` puts the tags around text made safe that way.

Matching errs on the side of a tag: a stand-in where a tag was not meant costs nothing.
"""

from __future__ import annotations

import functools
import html
import re

from acp_hermes_memory.scan import reading as scanner_reading
from acp_hermes_memory.text import one_line

_REFERENCE = re.compile(r"&(?:#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)")  # as html.unescape finds them
_DECODINGS = 3  # how deep nested references are decoded: &amp;amp;lt; is still "<" to a patient reader
_LOOK_ALIKES = str.maketrans({
    **dict.fromkeys("‹˂ᐸ❮⟨〈《❬⧼", "<"), **dict.fromkeys("›˃ᐳ❯⟩〉》❭⧽", ">"),
    **dict.fromkeys("∕⁄⧸╱⟋", "/"), **dict.fromkeys("‐‑‒–—―−⁃﹘─➖", "-"),
})  # what NFKD leaves alone (it already folds ＜, ﹤, ／, －)
_LETTERS = {"i": "[il1|]", "l": "[il1|]", "o": "[o0]"}  # letters a digit or a stroke stands in for
ATTRIBUTE_CHARS = 300


def framed(name: str, text: str, /, **attributes: str) -> str:
    """``<name key="value">``, ``text`` unable to close it, ``</name>``; values one line, escaped."""
    shown = "".join(f' {key}="{html.escape(one_line(neutralised(value, name), ATTRIBUTE_CHARS))}"'
                    for key, value in attributes.items())
    return f"<{name}{shown}>\n{neutralised(text, name)}\n</{name}>"


def has_tag(text: str, name: str) -> bool:
    """Whether ``text`` holds a tag (opening or closing) of the frame ``name``, however it is spelt."""
    return _tag(name).search(_whole_reading(text)) is not None


def neutralised(text: str, name: str) -> str:
    """``text`` with every tag of the frame ``name`` in it replaced by a stand-in that is no tag."""
    pattern = _tag(name)
    if pattern.search(_whole_reading(text)) is None:
        return text  # most text: one C-speed reading and one search
    text = _stand_ins(text, pattern, name)
    # A stand-in holds no "<" or "&", so it cannot make a tag with what is around it; checked all the same,
    # as the reading character by character might differ from the whole text's in a way not foreseen.
    return text if pattern.search(_whole_reading(text)) is None else _no_brackets(text)


@functools.cache
def _tag(name: str) -> re.Pattern[str]:
    """A tag of the frame ``name`` in a reading: ``<``, maybe ``/``, the name, maybe attributes, maybe ``>``."""
    words = [word for word in re.split(r"[\s_.-]+", name.lower()) if word]
    spelt = r"[\s_.-]*".join("".join(_LETTERS.get(char, re.escape(char)) for char in word) for word in words)
    return re.compile(rf"<\s*(\\?/)?\s*{spelt}(?![a-z0-9])(?:\s*/?\s*>|\s[^<>]{{0,200}}>)?")


def _whole_reading(text: str) -> str:
    for _ in range(_DECODINGS):
        if "&" not in text:
            break
        decoded = html.unescape(text)
        if decoded == text:
            break
        text = decoded
    return scanner_reading(text).lower().translate(_LOOK_ALIKES)


def _stand_ins(text: str, pattern: re.Pattern[str], name: str) -> str:
    """One pass: each tag found in the reading replaced, in the original, by its stand-in."""
    read, starts, ends = _reading_with_origins(text)
    spans: list[tuple[int, int, bool]] = []  # (start, end, closing) in ``text``
    for match in pattern.finditer(read):
        start, end = starts[match.start()], ends[match.end() - 1]
        if spans and start < spans[-1][1]:  # two tags read out of one reference: one stand-in for both
            start = spans.pop()[0]
        spans.append((start, end, match.group(1) is not None))
    out, last = [], 0
    for start, end, closing in spans:
        out.append(text[last:start])
        out.append(f"[/{name}]" if closing else f"[{name}]")
        last = end
    out.append(text[last:])
    return "".join(out)


def _reading_with_origins(text: str) -> tuple[str, list[int], list[int]]:
    """The reading of ``text`` and, for each of its characters, where in ``text`` it comes from
    (start and end): a decoded reference comes from all of it."""
    chars = list(text)
    starts = list(range(len(text)))
    ends = list(range(1, len(text) + 1))
    for _ in range(_DECODINGS):
        current = "".join(chars)
        if "&" not in current:
            break
        chars, starts, ends, changed = _decoded(current, starts, ends)
        if not changed:
            break
    read: list[str] = []
    read_starts: list[int] = []
    read_ends: list[int] = []
    for char, start, end in zip(chars, starts, ends, strict=True):
        folded = _fold(char)
        read.append(folded)
        read_starts.extend([start] * len(folded))
        read_ends.extend([end] * len(folded))
    return "".join(read), read_starts, read_ends


def _decoded(text: str, starts: list[int], ends: list[int]) -> tuple[list[str], list[int], list[int], bool]:
    chars: list[str] = []
    new_starts: list[int] = []
    new_ends: list[int] = []
    last, changed = 0, False
    for match in _REFERENCE.finditer(text):
        chars.extend(text[last:match.start()])
        new_starts.extend(starts[last:match.start()])
        new_ends.extend(ends[last:match.start()])
        value = html.unescape(match.group(0))
        if value == match.group(0):  # not a reference after all: its characters stay themselves
            chars.extend(value)
            new_starts.extend(starts[match.start():match.end()])
            new_ends.extend(ends[match.start():match.end()])
        else:
            changed = True
            chars.extend(value)
            new_starts.extend([starts[match.start()]] * len(value))
            new_ends.extend([ends[match.end() - 1]] * len(value))
        last = match.end()
    chars.extend(text[last:])
    new_starts.extend(starts[last:])
    new_ends.extend(ends[last:])
    return chars, new_starts, new_ends, changed


@functools.lru_cache(maxsize=4_096)
def _fold(char: str) -> str:
    return scanner_reading(char).lower().translate(_LOOK_ALIKES)


def _no_brackets(text: str) -> str:
    """The last resort: nothing in the text reads as ``<``, ``>`` or ``&`` any more."""
    return "".join("[" if "<" in _fold(char) else "]" if ">" in _fold(char) else "＆" if char == "&" else char
                   for char in text)
