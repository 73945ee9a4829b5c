"""Compaction in a scripted 200-turn session through the real stdio server with a small context window.

What survives repeated compaction, how large prompts get, and the prompt cache over the whole session.

    .venv/bin/python bench/long_session.py                 # 200 turns, a 30,000-token window
    .venv/bin/python bench/long_session.py --turns 400 --window 40000

The server runs as an editor starts it (``python -m acp_hermes`` over stdio, driven through
tests/support/acp_harness.py) against the scripted model with the provider's prefix cache simulated
(``FakeAnthropic(simulate_cache=True)``), configured with ``context_windows: {claude-sonnet-5-5: N}``
so the automatic compaction (default threshold: half the window) runs several times. The learning
loop is off so that every streamed request belongs to the conversation or to a compaction.

Early turns plant three facts: a name, a decision and a file path. Turn 1 only states the task (the
first exchange is the compaction's head, kept verbatim, so a fact there would never reach a summary);
turns 2 and 3 carry the facts. Every later turn is text, one in four a tool turn (read_file, todo,
search_files: two model requests). The model is scripted with callables, so the ordering of the
requests the product makes cannot break the script:

* conversation requests: the hidden memory flush before each compaction (its last user message
  holds ``compression.FLUSH_INSTRUCTION``) is answered "Nothing to save."; anything else gets the
  next reply of the scenario;
* auxiliary requests: the compaction summary (its prompt holds ``<conversation>``) is written the
  way a model doing its job would: the lines of the previous summary are kept, each planted fact
  found in the conversation to condense is added under its section of the template, and a line of
  progress names the turns condensed; anything else (the session title) gets a short title.

Reported: the compactions (``tool_call`` updates titled "Compacting conversation"), the largest
prompt of any request (conversation, flush or summary; all input tokens, as the simulated provider
counts them) against the window, whether each fact is in the last summary and in the last
conversation request's messages, the share of all input tokens of the session (every request,
compactions included) read from the cache, and the wall time.

Targets: at least one compaction; no prompt larger than the window; every fact in the last summary
and in the last request; >= 85 % of all input tokens read from the cache.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the harness and the fake model live in tests/, which is not installed
    sys.path.insert(0, str(ROOT))

from acp_hermes.core.compression import FLUSH_INSTRUCTION, SUMMARY_TEMPLATE  # noqa: E402
from acp_hermes.testing.scripted_model import HttpError, ModelRequest, Reply  # noqa: E402
from tests.support.fake_anthropic import FakeAnthropic, text_reply, texts_of, tool_reply  # noqa: E402

if TYPE_CHECKING:
    from tests.support.acp_harness import AgentProcess

TURNS = 200
WINDOW = 30_000
MODEL = "claude-sonnet-5-5"
TARGET_READ_SHARE = 0.85
SOURCE_FILES = 4
CARD_TITLE = "Compacting conversation"
FLUSH_REPLY = "Nothing to save."

# fact -> the summary section it belongs under
FACTS: dict[str, str] = {
    "the user is called Ada Quint": "## Critical Context",
    "we chose recursive descent for the parser": "## Key Decisions",
    "config lives in conf/app.toml": "## Relevant Files",
}
SECTIONS = [line for line in SUMMARY_TEMPLATE.splitlines() if line.startswith("#")]
PROGRESS_SECTION = "### Done"


# ----------------------------------------------------------------------------------------------------
# The scenario


@dataclass(frozen=True)
class Turn:
    prompt: str
    replies: tuple[Reply, ...]


def prepare_workspace(workspace: Path) -> None:
    """A few small source files for the read and search turns."""
    for number in range(SOURCE_FILES):
        body = "\n".join(
            f"def parse_{number}_{line}(tokens):\n    return {{'node': 'rule_{line}', 'consumed': {line}}}\n"
            for line in range(6)
        )
        path = workspace / "src" / f"parser_{number}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")


def _answer(number: int, module: str) -> Reply:
    detail = " ".join(
        f"Point {n}: rule {number}.{n} in {module} consumes its tokens greedily and returns a node;"
        for n in range(1, 9)
    )
    return text_reply(f"Turn {number}: here is what I found. {detail} Nothing else needs to change yet.", chunks=4)


def scenario(turns: int) -> list[Turn]:
    out = []
    for number in range(1, turns + 1):
        module = f"src/parser_{number % SOURCE_FILES}.py"
        answer = _answer(number, module)
        filler = "Please keep the answer focused on the grammar rules and the error recovery of each rule. "
        if number == 1:
            out.append(Turn("Turn 1: we are writing a parser for our small configuration language. " + filler,
                            (answer,)))
            continue
        if number == 2:
            out.append(Turn(f"Turn 2: before we start, note for later: {_fact(0)}. " + filler, (answer,)))
            continue
        if number == 3:
            out.append(Turn(f"Turn 3: decision: {_fact(1)}. Also, {_fact(2)}. " + filler, (answer,)))
            continue
        kind = number % 4
        if kind == 1:
            replies: tuple[Reply, ...] = (tool_reply("read_file", {"path": module}), answer)
            prompt = f"Turn {number}: please read {module} and tell me what its rules return. "
        elif kind == 2:
            todos = [{"id": str(n), "content": f"Step {n} of turn {number}", "status": "pending"} for n in range(3)]
            replies = (tool_reply("todo", {"todos": todos}), answer)
            prompt = f"Turn {number}: plan the clean-up of {module} in three steps. "
        elif kind == 3:
            replies = (tool_reply("search_files", {"pattern": f"parse_{number % SOURCE_FILES}_"}), answer)
            prompt = f"Turn {number}: where are the rules of parser {number % SOURCE_FILES} defined? "
        else:
            replies = (answer,)
            prompt = f"Turn {number}: summarise what we have looked at so far in two sentences. "
        out.append(Turn(prompt + filler, replies))
    return out


def _fact(index: int) -> str:
    return list(FACTS)[index]


# ----------------------------------------------------------------------------------------------------
# The scripted model


@dataclass
class Model:
    """The callables answering both scripts, and what they saw."""

    turns: deque[Reply] = field(default_factory=deque)
    flushes: int = 0
    summaries: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def conversation(self, request: ModelRequest) -> Reply:
        messages = request.body.get("messages") or []
        if messages and FLUSH_INSTRUCTION in texts_of(messages[-1]):
            self.flushes += 1
            return text_reply(FLUSH_REPLY)
        if not self.turns:
            self.errors.append(f"conversation request {request.index} beyond the scenario")
            return HttpError(500, "bench: scenario exhausted", error_type="api_error",
                             headers={"x-should-retry": "false"})
        return self.turns.popleft()

    def auxiliary(self, request: ModelRequest) -> Reply:
        text = "\n".join(texts_of(request.body.get("messages") or []))
        if "<conversation>" not in text:
            return text_reply("Parser for the configuration language")
        summary = summarise(text)
        self.summaries.append(summary)
        return text_reply(summary)


def summarise(prompt: str) -> str:
    """What a diligent summariser writes: the previous summary's lines kept, new facts and progress added."""
    sections: dict[str, list[str]] = {heading: [] for heading in SECTIONS}
    previous = re.search(r"<previous-summary>\n(.*?)\n</previous-summary>", prompt, re.S)
    if previous:
        heading = SECTIONS[0]
        for line in previous.group(1).splitlines():
            if line.strip() in sections:
                heading = line.strip()
            elif line.strip() and line.strip() != "None.":
                sections[heading].append(line)
    conversation = prompt.split("<conversation>", 1)[1].split("</conversation>", 1)[0]
    for fact, heading in FACTS.items():
        line = f"- {fact[0].upper()}{fact[1:]}."
        if fact in conversation and line not in sections[heading]:
            sections[heading].append(line)
    turns = sorted({int(n) for n in re.findall(r"User: Turn (\d+):", conversation)})
    if turns:
        sections[PROGRESS_SECTION].append(f"- Turns {turns[0]}–{turns[-1]}: read, planned and searched the parser "
                                          "modules; no code changed yet.")
    if not sections["## Goal"]:
        sections["## Goal"].append("Write a parser for the user's configuration language.")
    return "\n".join(f"{heading}\n" + ("\n".join(lines) if lines else "None.") for heading, lines in sections.items())


def _fact_in(fact: str, text: str) -> bool:
    return fact.lower() in text.lower()


# ----------------------------------------------------------------------------------------------------
# The run


@dataclass
class Figures:
    turns: int
    window: int
    wall_seconds: float
    compactions: list[int]  # the turn each compaction ran in
    failed_compactions: int
    flushes: int
    max_prompt: dict[str, int]  # per request kind: the largest prompt in tokens
    total_input: int
    cache_read: int
    facts_in_summary: dict[str, bool]
    facts_in_last_request: dict[str, bool]
    errors: list[str]
    turn_peaks: list[int]  # per turn: the largest conversation prompt

    @property
    def read_share(self) -> float:
        return self.cache_read / self.total_input if self.total_input else 0.0

    def misses(self) -> list[str]:
        out = []
        if not self.compactions:
            out.append("no compaction happened")
        if self.failed_compactions:
            out.append(f"{self.failed_compactions} compactions failed")
        if max(self.max_prompt.values(), default=0) > self.window:
            out.append("a prompt exceeded the window")
        if not all(self.facts_in_summary.values()):
            out.append("a fact is missing from the last summary")
        if not all(self.facts_in_last_request.values()):
            out.append("a fact is missing from the last request")
        if self.read_share < TARGET_READ_SHARE:
            out.append(f"cache-read share below {TARGET_READ_SHARE:.0%}")
        out.extend(self.errors)
        return out


async def play(agent: AgentProcess, fake: FakeAnthropic, model: Model, turns: Sequence[Turn]) -> tuple[list[int],
                                                                                                      list[int]]:
    session_id = await agent.new_session()
    compactions: list[int] = []
    peaks: list[int] = []
    assert fake.cache is not None
    for number, turn in enumerate(turns, start=1):
        model.turns.extend(turn.replies)
        cards = len([u for u in agent.updates(session_id, "tool_call") if u.get("title") == CARD_TITLE])
        start = len(fake.requests)
        stop = await agent.prompt(session_id, turn.prompt)
        if stop != "end_turn":
            raise RuntimeError(f"turn {number} ended with {stop!r}")
        if model.turns:
            raise RuntimeError(f"turn {number} left {len(model.turns)} scripted replies unused")
        now = len([u for u in agent.updates(session_id, "tool_call") if u.get("title") == CARD_TITLE])
        compactions.extend([number] * (now - cards))
        requests, accounts = fake.requests, fake.cache.accounts
        peaks.append(max((accounts[i].total for i in range(start, len(requests)) if requests[i].get("stream")),
                         default=0))
        if number == 1:
            await agent.wait_for_update(session_id, "session_info_update")
    return compactions, peaks


async def run(turn_count: int, window: int) -> Figures:
    from tests.support.acp_harness import running_agent, write_config

    model = Model()
    with tempfile.TemporaryDirectory(prefix="acp-hermes-long-") as scratch, FakeAnthropic(simulate_cache=True) as fake:
        root = Path(scratch)
        prepare_workspace(root / "workspace")
        write_config(root / "hermes-home", f"context_windows:\n  {MODEL}: {window}\nlearning_loop: false\n")
        # One dispatcher per request, whatever it is: the callables decide, so the order cannot break.
        fake.script(*[model.conversation] * (turn_count * 4))
        fake.script_auxiliary(*[model.auxiliary] * (turn_count + 10))
        started = time.perf_counter()
        async with running_agent(root, fake) as agent:
            compactions, peaks = await play(agent, fake, model, scenario(turn_count))
            cards = [u for u in agent.updates(kind="tool_call") if u.get("title") == CARD_TITLE]
            finals = {u["toolCallId"]: u.get("status") for u in agent.updates(kind="tool_call_update")
                      if u.get("toolCallId") in {c["toolCallId"] for c in cards} and u.get("status")}
        wall = time.perf_counter() - started

        assert fake.cache is not None
        requests, accounts = fake.requests, fake.cache.accounts
        errors = list(model.errors)
        if len(accounts) != len(requests):
            errors.append(f"{len(requests)} requests but {len(accounts)} cache accounts")
        max_prompt: dict[str, int] = {"conversation": 0, "flush": 0, "summary": 0, "title": 0}
        for body, account in zip(requests, accounts, strict=False):
            if body.get("stream"):
                kind = "flush" if FLUSH_INSTRUCTION in texts_of(body["messages"][-1]) else "conversation"
            else:
                kind = "summary" if "<conversation>" in "\n".join(texts_of(body.get("messages"))) else "title"
            max_prompt[kind] = max(max_prompt[kind], account.total)
        last_summary = model.summaries[-1] if model.summaries else ""
        last_request = "\n".join(texts_of(fake.stream_requests[-1]["messages"]))
        return Figures(
            turns=turn_count, window=window, wall_seconds=wall, compactions=compactions,
            failed_compactions=sum(1 for status in finals.values() if status != "completed"),
            flushes=model.flushes, max_prompt=max_prompt,
            total_input=sum(a.total for a in accounts), cache_read=sum(a.cache_read_input_tokens for a in accounts),
            facts_in_summary={fact: _fact_in(fact, last_summary) for fact in FACTS},
            facts_in_last_request={fact: _fact_in(fact, last_request) for fact in FACTS},
            errors=errors, turn_peaks=peaks,
        )


def report(figures: Figures) -> str:
    mark = {True: "yes", False: "NO"}
    largest = max(figures.max_prompt.values())
    lines = [
        f"{figures.turns} turns, window {figures.window:,} tokens, wall time {figures.wall_seconds:.1f} s "
        f"({figures.wall_seconds / figures.turns * 1000:.0f} ms a turn)",
        "",
        "compactions in turns " + (", ".join(map(str, figures.compactions)) or "none"),
        "",
        f"{'measure':<44} {'value':>22}",
        f"{'compactions (cards)':<44} {len(figures.compactions):>22}",
        f"{'  failed':<44} {figures.failed_compactions:>22}",
        f"{'memory flushes answered':<44} {figures.flushes:>22}",
    ]
    for kind, tokens in figures.max_prompt.items():
        lines.append(f"{'largest prompt, ' + kind + ' (tokens)':<44} {tokens:>22,}")
    verdict = "ok" if largest <= figures.window else "EXCEEDS"
    lines.append(f"{'largest prompt of any request / window':<44} {f'{largest / figures.window:.1%} ({verdict})':>22}")
    for fact in FACTS:
        both = f"{mark[figures.facts_in_summary[fact]]} / {mark[figures.facts_in_last_request[fact]]}"
        lines.append(f"{'“' + fact + '”':<44} {both:>22}")
    lines.append(f"{'  (in last summary / in last request)':<44}")
    share = f"{figures.read_share:.1%} of {figures.total_input:,}"
    lines.append(f"{'cache-read share of all input tokens':<44} {share:>22}")
    misses = figures.misses()
    lines.append("")
    lines.append("all targets met" if not misses else "MISSED: " + "; ".join(misses))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--turns", type=int, default=TURNS, help=f"turns to play (default {TURNS})")
    parser.add_argument("--window", type=int, default=WINDOW, help=f"context window in tokens (default {WINDOW:,})")
    parser.add_argument("--per-turn", action="store_true", help="also print each turn's largest prompt")
    args = parser.parse_args(argv)
    if args.turns < 3:
        parser.error("--turns must be at least 3 (the facts are planted in turns 2 and 3)")
    figures: Figures = anyio.run(run, args.turns, args.window)
    if args.per_turn:
        print(f"{'turn':>4} {'largest prompt':>14}")
        for number, tokens in enumerate(figures.turn_peaks, start=1):
            print(f"{number:>4} {tokens:>14,}")
        print()
    print(report(figures))
    return 0 if not figures.misses() else 1


if __name__ == "__main__":
    sys.exit(main())
