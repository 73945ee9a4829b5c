"""Threat scanning for every piece of text that is about to feed a prompt.

Memory entries, skills, context files (AGENTS.md, SOUL.md, ...), subdirectory hints and recall
summaries all end up in front of the model, so they all go through this one scanner. It looks
for prompt injection, exfiltration and persistence tricks, and for invisible or bidi control
characters that hide text from the human reading the same file.

Scopes nest, from least to most suspicious of the text: ``all`` (patterns that are never
legitimate in something we load), ``context`` (adds role hijacking, C2 and anti-forensics, used
for context files a project ships and for tool output) and ``strict`` (adds everything that is merely risky to
*persist*, used for memory and skill content the agent writes itself).

Matching happens on normalised text, case-insensitively: zero-width and bidi controls removed,
Unicode tag characters read as the ASCII they hide, NFKC applied (full-width letters and other
compatibility forms fold to ASCII) and Cyrillic, Greek and Armenian look-alike letters folded to
the Latin ones they imitate. Every quantifier
that can run over a long stretch of text is bounded and every pattern starts with a literal,
so a scan is linear in the text it looks at.

Window: patterns run over the first ``MAX_SCAN_CHARS`` plus the last ``MAX_SCAN_CHARS``
characters (the whole text when it is shorter than both together). The head is what a
truncating loader keeps, the tail is where an appended payload lands; a caller that puts more
than that into a prompt should scan what it actually loads. Invisible characters are looked for
in the whole text: that check is a single character class and costs next to nothing.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from typing import Literal

from memory.values import value

Scope = Literal["all", "context", "strict"]

MAX_SCAN_CHARS = 65_536
EXCERPT_CHARS = 80

_LEVEL: dict[str, int] = {"all": 0, "context": 1, "strict": 2}


@value
class Finding:
    """One threat found: which pattern, and the (normalised) text that matched it."""

    pattern_id: str
    excerpt: str


@value
class _Pattern:
    pattern_id: str
    level: int
    source: str

    @property
    def regex(self) -> re.Pattern[str]:
        return _compile(self.source)


@functools.cache
def _compile(source: str) -> re.Pattern[str]:
    """Compiled on first use: all of them take ~15 ms, which server start-up should not pay."""
    return re.compile(source, re.IGNORECASE)


def _words(most: int) -> str:
    """Up to ``most`` filler words between two key words (bounded, so no runaway backtracking)."""
    return rf"(?:\S+\s+){{0,{most}}}"


def _pattern(pattern_id: str, scope: Scope, *alternatives: str) -> _Pattern:
    source = "|".join(f"(?:{alternative})" for alternative in alternatives)
    return _Pattern(pattern_id, _LEVEL[scope], source)


# Building blocks shared by several patterns.
_SECRET_VAR = r"\$\{?[a-z0-9_]{0,40}?(?:key|token|secret|passw(?:or)?d|credential)"
_COMMAND_SUBSTITUTION = r"\$\((?:cat|printenv|env)\b"
_SECRET_FILE = (
    r"(?:\.env(?:\.local|\.prod|\.production)?(?![\w.-])|\.netrc\b|\.pgpass\b|\.npmrc\b|\.pypirc\b"
    r"|[/.-]credentials\b|\bcredentials\.(?:json|ya?ml|toml|csv)\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b)"
)
_LEAKY_VALUE = rf"(?:{_SECRET_VAR}|{_COMMAND_SUBSTITUTION})"
_URL_WITH_SECRET = rf"https?://[^\s\"'<>]{{0,150}}?{_LEAKY_VALUE}"
_ARGUMENT = r"(?:\"[^\"\n]{0,150}?|'[^'\n]{0,150}?|[^\s\"']{0,150}?)"
_AGENT_FILES = (
    r"(?:AGENTS\.md|CLAUDE\.md|GEMINI\.md|HERMES\.md|SOUL\.md|copilot-instructions\.md"
    r"|\.hermes\.md|\.cursorrules|\.clinerules|\.windsurfrules|\.cursor/rules)"
)
_AGENT_VARS = r"(?:claude|codex|hermes|(?<!ssh_)agent|openai|anthropic)"
_WRITE_VERBS = (
    r"\b(?:edit|modify|change|update|overwrite|rewrite|replace|patch|append|write|add|insert|delete|remove)\b"
)
_C2_PEER = r"(?:c2|c&c|controller|operator|master|mothership|command\s+server|(?:remote\s+)?control\s+server)"
_HOME = r"(?:~|\$\{?home\}?|/home/[^/\s]{1,64}|/root|/users/[^/\s]{1,64})"

_PATTERNS: tuple[_Pattern, ...] = (
    # --- scope "all": never legitimate in anything we load into a prompt ---
    _pattern(
        "prompt_injection",
        "all",
        rf"\b(?:ignore|forget|skip)\s+{_words(4)}(?:all|any|every|your|previous|prior|above|earlier|preceding)"
        rf"\s+{_words(3)}(?:instructions|directives|guidelines|system\s+prompt)\b",
    ),
    _pattern(
        "sys_prompt_override",
        "all",
        r"\b(?:override|overwrite)\s+(?:the\s+|your\s+|this\s+)?system\s+(?:prompt|instructions|message)\b",
        r"\bsystem\s+prompt\s+override\b",
        r"\bnew\s+system\s+prompt\s*:",
    ),
    _pattern(
        "disregard_rules",
        "all",
        rf"\bdisregard\s+{_words(3)}(?:your|all|any|previous|prior|above|earlier|preceding|these|those)"
        rf"\s+{_words(3)}(?:instructions|directives|guidelines|rules|polic(?:y|ies)|training|programming)\b",
    ),
    _pattern(
        "bypass_restrictions",
        "all",
        r"\b(?:bypass|circumvent|evade|get\s+around)\s+(?:(?:all|any|your|the|of|these|those|its|my)\s+){0,3}"
        r"(?:safety\s+|security\s+|content\s+|ethical\s+|usage\s+)?"
        r"(?:restrictions|guardrails|safeguards|filters|polic(?:y|ies)|guidelines)\b",
    ),
    _pattern(
        "html_comment_injection",
        "all",
        r"<!--(?:(?!<!--)[^>]){0,300}?(?:\b(?:ignore|disregard|forget|override)\s+(?:all|any|previous|prior|above|the|these|your)\b"
        r"|\bsystem\s+prompt\b|\b(?:assistant|agent|ai|llm|model|claude|hermes)\s+(?:must|should|shall|will)\b"
        r"|\bdo\s+not\s+(?:tell|mention|reveal|inform)\b|\b(?:secret|hidden)\s+instructions?\b)",
    ),
    _pattern(
        "hidden_div",
        "all",
        r"<(?:div|span|p|section)\b[^<>]{0,300}?style\s*=\s*[\"'][^\"'>]{0,300}?"
        r"(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?![.\d])|opacity\s*:\s*0(?![.\d]))",
        r"<(?:div|span|p|section)\b[^<>]{0,300}?\shidden\b",
    ),
    _pattern(
        "translate_execute",
        "all",
        rf"\btranslate\s+{_words(8)}into\s+{_words(4)}(?:and|then)\s+(?:execute|run|eval(?:uate)?)\s+"
        r"(?:it|them|this|that|the\s+(?:result|output|code|command)s?)\b",
    ),
    _pattern(
        "deception_hide",
        "all",
        r"\b(?:do\s+not|don[’']?t|never)\s+(?:tell|inform|notify|alert)\s+(?:the\s+)?user\b(?![’']s|\s+to\b)",
        r"\bwithout\s+(?:telling|informing|notifying|alerting)\s+(?:the\s+)?user\b",
        r"\b(?:keep|hide)\s+(?:this|it|these\s+\w+)\s+(?:secret\s+|hidden\s+)?from\s+the\s+user\b",
    ),
    _pattern(
        "exfil_curl",
        "all",
        rf"\bcurl\b[^\n]{{0,200}}?(?:{_URL_WITH_SECRET}"
        rf"|\s(?:-d|--data(?:-[a-z]+)?|-F|--form|--json)[\s=]*{_ARGUMENT}"
        rf"(?:{_LEAKY_VALUE}|@[^\s\"']{{0,100}}?{_SECRET_FILE})"
        rf"|\s(?:-T|--upload-file)[\s=]*[^\s\"']{{0,100}}?{_SECRET_FILE})",
    ),
    _pattern(
        "exfil_wget",
        "all",
        rf"\bwget\b[^\n]{{0,200}}?(?:{_URL_WITH_SECRET}"
        rf"|\s--(?:post|body)-data[\s=]*{_ARGUMENT}{_LEAKY_VALUE}"
        rf"|\s--(?:post|body)-file[\s=]*[^\s\"']{{0,100}}?{_SECRET_FILE})",
    ),
    _pattern(
        "read_secrets",
        "all",
        rf"\b(?:cat|bat|less|head|tail|base64|xxd|strings|hexdump)\s+(?:-\S+\s+){{0,4}}"
        rf"[^\s|;&<>]{{0,120}}?{_SECRET_FILE}",
    ),
    # --- scope "context": also applied to context files, hints and recall summaries ---
    _pattern(
        "role_hijack",
        "context",
        r"\byou\s+are\s+(?:\S+\s+){0,2}?now\s+(?:a|an|the|my|our)\s",
        r"\byou\s+are\s+no\s+longer\s+(?:an?\s+ai|an?\s+assistant|bound|restricted|limited|claude|hermes)\b",
        r"\bfrom\s+now\s+on,?\s+you\s+(?:are|will\s+be|act\s+as)\b",
    ),
    _pattern(
        "role_pretend",
        "context",
        r"\bpretend\s+(?:that\s+)?(?:you\s+(?:are|were|have)|to\s+be)\b",
        r"\b(?:act|behave|respond)\s+as\s+(?:if\s+you\s+(?:are|were|have|had)\b"
        r"|an?\s+(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue)\b)",
        r"\broleplay\s+as\b",
    ),
    _pattern(
        "leak_system_prompt",
        "context",
        r"\b(?:reveal|print|output|show|repeat|leak|dump|disclose|display|share|echo|tell\s+me|give\s+me)\s+"
        r"(?:me\s+)?(?:all\s+of\s+|back\s+)?(?:your|the)\s+"
        r"(?:full\s+|entire\s+|complete\s+|original\s+|hidden\s+|initial\s+|exact\s+)?"
        r"(?:system\s+(?:prompt|message|instructions)|initial\s+instructions|hidden\s+instructions)\b",
    ),
    _pattern(
        "remove_filters",
        "context",
        r"\b(?:remove|disable|turn\s+off|deactivate|drop|lift)\s+(?:(?:all|any|of|the)\s+){0,2}"
        r"(?:your\s+(?:\S+\s+)?(?:filters|guardrails|restrictions|safeguards|safety|censorship|limits)"
        r"|(?:safety|content|ethical|moral)\s+(?:filters?|guardrails|restrictions|checks|guidelines|limits)"
        r"|guardrails|censorship|safeguards)\b",
    ),
    _pattern(
        "fake_update",
        "context",
        r"\b(?:system|admin(?:istrator)?|developer|root)\s+override\s*:",
        r"\bsystem\s+(?:directives?|instructions?)\s*:",
        r"\b(?:new|updated|revised)\s+(?:system\s+)?instructions\s+(?:from|by)\s+"
        r"(?:anthropic|openai|nous|the\s+(?:developers?|administrators?|admins?|system|operator))\b",
        r"\byour\s+(?:instructions|system\s+prompt|guidelines|rules)\s+(?:have|has)\s+(?:just\s+)?(?:been\s+)?"
        r"(?:updated|changed|replaced|revised)\b",
        r"\[\s*(?:system|admin)\s+(?:update|notice|message)\s*\]",
    ),
    _pattern(
        "identity_override",
        "context",
        r"\b(?:name\s+yourself|call\s+yourself|refer\s+to\s+yourself\s+as)\b",
        r"\byour\s+new\s+(?:name|identity)\s+is\b",
        r"\byour\s+(?:true|real)\s+(?:name|identity|self)\s+is\b",
        r"\byou\s+will\s+(?:now\s+)?(?:be\s+called|identify\s+as)\b",
    ),
    _pattern(
        "c2_register",
        "context",
        r"\bregister\s+(?:yourself|itself|this\s+(?:agent|machine|host|instance))\s+(?:as|with|at)\b",
        r"\bregister\s+as\s+an?\s+(?:node|bot|implant|zombie)\b",
    ),
    _pattern(
        "c2_beacon",
        "context",
        r"\b(?:send|emit|transmit)\s+(?:a\s+|periodic\s+|regular\s+)?(?:heartbeats?|beacons?|check-?ins?)\s+"
        rf"(?:back\s+)?to\s+(?:the\s+|your\s+|our\s+)?{_C2_PEER}\b",
        rf"\bbeacon\s+(?:back\s+)?(?:home|to\s+(?:the\s+)?{_C2_PEER})\b",
    ),
    _pattern(
        "c2_tasks",
        "context",
        r"\b(?:pull|fetch|poll|get|retrieve|download|receive)\s+(?:\S+\s+){0,2}"
        rf"(?:tasks|commands|jobs|instructions|orders|payloads?)\s+from\s+(?:the\s+|your\s+|our\s+)?{_C2_PEER}\b",
    ),
    _pattern(
        "c2_network",
        "context",
        r"\b(?:connect|join|report)\s+(?:back\s+)?(?:to\s+)?(?:the\s+)?"
        r"(?:botnet|c2\s+(?:network|server|channel)|c&c\s+(?:network|server)|command[\s-]+and[\s-]+control)\b",
    ),
    _pattern(
        "c2_explicit",
        "context",
        r"\byou\s+must\s+(?:immediately\s+|now\s+|first\s+|always\s+)?"
        r"(?:register\s+(?:with|at|to)\b|beacon\b|check\s+in\s+(?:with|to)\b|report\s+(?:back|home)\b"
        r"|connect\s+back\b|phone\s+home\b)",
    ),
    _pattern(
        "anti_forensic_oneliner",
        "context",
        r"\bhistory\s+-c\b",
        r"\bunset\s+histfile\b",
        r"\bhistfile=/dev/null\b",
        r"\bhistsize=0\b",
        r"\bset\s+\+o\s+history\b",
        r"\brm\s+(?:-\S+\s+){0,3}\S{0,100}?\.(?:bash|zsh|sh|python)_history\b",
        r">\s{0,5}[^\s>]{0,100}?\.(?:bash|zsh)_history\b",
        r">\s{0,5}/var/log/\S",
        r"\bwevtutil\s+cl\b",
        r"\bclear-eventlog\b",
    ),
    _pattern(
        "anti_forensic_disk",
        "context",
        r"\bdd\s+if=/dev/(?:zero|u?random)\s+of=/dev/(?:sd|nvme|hd|disk|mapper|xvd|vd)",
        r"\bshred\s+(?:-\S+\s+){0,4}(?:/dev/|/var/log\b|\S{0,100}?\.log\b)",
        r"\bwipefs\s+(?:-\S+\s+){0,3}/dev/",
        r"\brm\s+-\S{0,5}r\S{0,5}\s+(?:-\S+\s+){0,2}/var/log\b",
    ),
    _pattern(
        "env_var_unset_agent",
        "context",
        rf"\bunset\s+(?:-[fv]\s+)?(?:[a-z_][a-z0-9_]{{0,60}}\s+){{0,6}}[a-z0-9_]{{0,40}}?{_AGENT_VARS}",
        rf"\benv\s+(?:-\S+\s+){{0,4}}-u\s*[a-z0-9_]{{0,40}}?{_AGENT_VARS}",
        rf"\bdel\s+os\.environ\[\s*[\"'][a-z0-9_]{{0,40}}?{_AGENT_VARS}",
        rf"\bos\.environ\.pop\(\s*[\"'][a-z0-9_]{{0,40}}?{_AGENT_VARS}",
    ),
    _pattern(
        "known_c2_framework",
        "context",
        r"\b(?:cobalt\s*strike|meterpreter|metasploit|msfvenom|brainworm|poshc2"
        r"|sliver\s+(?:c2|implant|beacon|server|client)|havoc\s+(?:c2|demon|framework|teamserver)"
        r"|mythic\s+(?:c2|agent|framework|server)|covenant\s+(?:c2|grunt)|empire\s+(?:c2|stager|agent|listener))\b",
    ),
    # --- scope "strict": risky to persist in memory or skills ---
    _pattern(
        "send_to_url",
        "strict",
        rf"\b(?:send|post|upload|transmit|forward|exfiltrate|submit|report|leak)\s+{_words(8)}"
        r"(?:to|at|via|into)\s+(?:this\s+|the\s+following\s+|the\s+|a\s+)?"
        r"(?:url|endpoint|webhook|server|address|site)?\s{0,3}:?\s{0,3}<?https?://",
    ),
    _pattern(
        "context_exfil",
        "strict",
        r"\b(?:send|post|upload|share|leak|exfiltrate|forward)\s+"
        r"(?:(?:the|this|your|all|of|entire|full|whole|current)\s+){0,4}"
        r"(?:conversation|chat\s+(?:history|log)|context\s+window|system\s+prompt|memor(?:y|ies)"
        r"|session\s+(?:history|transcript|log)|transcripts?|api\s+keys?|secrets|credentials"
        r"|environment\s+variables)\s+(?:to|with|into)\b",
    ),
    _pattern("ssh_backdoor", "strict", r"\bauthorized_keys\b"),
    _pattern(
        "ssh_access",
        "strict",
        rf"{_HOME}[/\\]\.ssh\b",
        r"%userprofile%[/\\]\.ssh\b",
        r"\bid_(?:rsa|dsa|ecdsa|ed25519)\b",
    ),
    _pattern(
        "hermes_env",
        "strict",
        rf"{_HOME}/\.hermes/\.env\b",
        r"\$\{?hermes_home\}?/\.env\b",
    ),
    _pattern(
        "agent_config_mod",
        "strict",
        rf"{_WRITE_VERBS}[^\n.;!?]{{0,80}}?(?:\./)?{_AGENT_FILES}",
        rf">>?\s{{0,5}}[^\s>]{{0,80}}?{_AGENT_FILES}",
        rf"\btee\s+(?:-a\s+)?\S{{0,80}}?{_AGENT_FILES}",
    ),
    _pattern(
        "hermes_config_mod",
        "strict",
        rf"(?:{_WRITE_VERBS}|\bset\b)[^\n;!?]{{0,80}}?\.hermes/(?:acp-hermes/)?"
        r"(?:config\.ya?ml|permissions\.ya?ml|\.env|SOUL\.md)",
        r">>?\s{0,5}[^\s>]{0,80}?\.hermes/",
    ),
    _pattern(
        "hardcoded_secret",
        "strict",
        r"(?:api[_-]?key|access[_-]?key|secret[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret"
        r"|token|secret|password|passwd)[\"']?\s{0,5}[=:]\s{0,5}[\"'][a-z0-9+/=_.-]{20}",
    ),
)

# Characters that hide or reorder text for the human reader while the model still reads them:
# zero-width characters, bidi controls, and the Unicode tag block (U+E0000-E007F), which spells
# out ASCII invisibly.
_INVISIBLE = (
    "\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff\u061c\u180e"
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
_TAGS = (0xE0000, 0xE007F)
_INVISIBLE_RE = re.compile(f"[{_INVISIBLE}\\U{_TAGS[0]:08X}-\\U{_TAGS[1]:08X}]")
# Normalising removes the zero-width and bidi controls and reads tag characters as the ASCII they
# encode, so a payload spelt in tags is matched like visible text.
_UNHIDE: dict[int, str | None] = {
    **dict.fromkeys(map(ord, _INVISIBLE)),
    **{tag: chr(tag - _TAGS[0]) if 0x20 <= tag - _TAGS[0] < 0x7F else None for tag in range(_TAGS[0], _TAGS[1] + 1)},
}
# Letters of other scripts that look like Latin ones (NFKC leaves them alone): Cyrillic, Greek
# and Armenian look-alikes fold to the Latin letter a reader would see.
_CONFUSABLES = str.maketrans(
    "аАвВеЕзЗһҺіІјЈкКмМнНоОрРсСтТуУхХѕЅԁԛԝӏɑαΑβΒεΕηΗιΙκΚμΜνΝοΟρΡτΤυΥχΧζΖօսոհց",
    "aAbBeE33hHiIjJkKmMhHoOpPcCtTyYxXsSdqwlaaABBeEnHiIkKuMvNoOpPtTuYxXzZounhg",
)

PATTERN_IDS: tuple[str, ...] = tuple(p.pattern_id for p in _PATTERNS)


def scan(text: str, scope: Scope = "strict") -> list[Finding]:
    """Every threat in ``text`` for ``scope``: one finding per pattern id, in a stable order."""
    return list(_findings(text, scope))


def first_threat(text: str, scope: Scope = "strict") -> str | None:
    """The id of the first threat found, or None; stops at the first hit."""
    return next((finding.pattern_id for finding in _findings(text, scope)), None)


def guard_context_text(label: str, text: str, scope: Scope = "context") -> str:
    """``text`` unchanged when it is clean, otherwise a one-line marker that replaces it all.

    Whole-file replacement on purpose: cutting out the matching lines would leave the rest of
    a hostile file in the prompt.
    """
    ids = [finding.pattern_id for finding in _findings(text, scope)]
    if not ids:
        return text
    return f"[BLOCKED: {label} contained potential prompt injection ({', '.join(ids)}). Content not loaded.]"


def _findings(text: str, scope: Scope) -> Iterator[Finding]:
    level = _LEVEL[scope]
    windows = [_normalise(window) for window in _windows(text)]
    for pattern in _PATTERNS:
        if pattern.level > level:
            continue
        for window in windows:
            match = pattern.regex.search(window)
            if match is not None:
                yield Finding(pattern.pattern_id, _excerpt(match.group(0)))
                break
    yield from _invisible_findings(text)


def _windows(text: str) -> list[str]:
    if len(text) <= 2 * MAX_SCAN_CHARS:
        return [text]
    # Scanned apart, so nothing matches across the unscanned middle.
    return [text[:MAX_SCAN_CHARS], text[-MAX_SCAN_CHARS:]]


def _normalise(text: str) -> str:
    if text.isascii():  # nothing to fold, nothing hidden: most text, and a C-speed check
        return text
    return unicodedata.normalize("NFKC", text.translate(_UNHIDE)).translate(_CONFUSABLES)


def _excerpt(matched: str) -> str:
    collapsed = " ".join(matched.split())
    if len(collapsed) <= EXCERPT_CHARS:
        return collapsed
    return collapsed[: EXCERPT_CHARS - 1] + "…"


def _invisible_findings(text: str) -> Iterator[Finding]:
    first_seen: dict[str, int] = {}
    tags = ""
    for match in _INVISIBLE_RE.finditer(text):
        char, index = match.group(0), match.start()
        if char == "\ufeff" and index == 0:  # a byte-order mark is how some editors start a file
            continue
        if _TAGS[0] <= ord(char) <= _TAGS[1]:
            tags += _UNHIDE.get(ord(char)) or ""
            char = "\U000e0000"  # the tag block is one finding, however many of its characters
        first_seen.setdefault(char, index)
    for char in sorted(first_seen):
        if char == "\U000e0000":
            hidden = " ".join(tags.split())[:EXCERPT_CHARS]
            yield Finding("invisible_unicode_tags", f"tag characters from character {first_seen[char]}: {hidden!r}")
            continue
        code = f"U+{ord(char):04X}"
        name = unicodedata.name(char, "unnamed")
        yield Finding(f"invisible_unicode_{code}", f"{code} ({name}) at character {first_seen[char]}")
