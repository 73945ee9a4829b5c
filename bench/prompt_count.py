"""How many permission questions a task costs: the offline demo's task and a scripted 30-command task.

    .venv/bin/python bench/prompt_count.py
    .venv/bin/python bench/prompt_count.py --server "/path/to/other/.venv/bin/python -m acp_hermes"

Method. The real server is driven over stdio (the ACP SDK's client, as an editor does) against the
scripted model, in a fresh ``HERMES_HOME`` and workspace each run, with the OS sandbox on where
this machine has one. The client answers every permission question "allow once" (never "always",
so each question counts) and records it. Two tasks:

* the offline demo's story (``acp_hermes.testing.demo_model``: plan, read, patch, run the tests),
  in ``default`` and in ``accept-edits`` mode;
* 30 everyday commands in ``accept-edits`` mode in a small git repository with a Python package
  and a Makefile: looking around, searching, running tests and builds, making and removing files,
  committing and branching, one download and one write to ``/tmp``.

It prints the questions per task and, for the 30 commands, which ones asked and why. Run it with
``--server`` against an older build to compare; the aim is fewer questions, never at the cost of
what the sandbox must hold.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply  # noqa: E402

COMMANDS = (
    "ls -la",
    "git status",
    "cat README.md",
    "grep -rn 'def ' src",
    "find . -name '*.py' -not -path './.git/*'",
    "wc -l src/app.py tests/test_app.py",
    "head -20 src/app.py",
    "python3 -m pytest -q -p no:cacheprovider tests || true",
    "sed -n 1,10p src/app.py",
    "mkdir -p build",
    "echo built > build/out.txt",
    "python3 -c 'print(1 + 1)'",
    "git diff",
    "git log --oneline -5",
    "cp src/app.py build/app.py",
    "touch build/stamp",
    "rm build/stamp",
    "make test",
    "git add -A",
    "git commit -qm wip",
    "git branch feature",
    "git checkout -q feature",
    "ls build",
    "rm -rf build",
    "echo scratch > /tmp/acp-hermes-bench-scratch.txt",
    "curl -sS --max-time 2 https://example.com -o /dev/null || true",
    "git stash list",
    "python3 --version",
    "tar -czf src.tgz src",
    "date",
)


def make_project(workspace: Path) -> None:
    (workspace / "src").mkdir(parents=True)
    (workspace / "tests").mkdir()
    (workspace / "src" / "app.py").write_text("def add(a, b):\n    return a + b\n")
    (workspace / "tests" / "test_app.py").write_text("def test_add():\n    assert 1 + 1 == 2\n")
    (workspace / "README.md").write_text("# app\n")
    (workspace / "Makefile").write_text("test:\n\tpython3 -m pytest -q -p no:cacheprovider tests || true\n")
    for command in (["git", "init", "-q"], ["git", "config", "user.email", "b@example.com"],
                    ["git", "config", "user.name", "Bench"], ["git", "add", "-A"], ["git", "commit", "-qm", "start"]):
        subprocess.run(command, cwd=workspace, check=True, capture_output=True)


async def count_commands(server: tuple[str, ...]) -> list[tuple[str, str]]:
    """(command, question title) for each of the 30 commands that asked, in accept-edits mode."""
    from tests.support.acp_harness import EditorClient, choose, running_agent

    with tempfile.TemporaryDirectory(prefix="acp-hermes-prompts-") as scratch, FakeAnthropic() as fake:
        root = Path(scratch)
        make_project(root / "workspace")
        replies = [tool_reply("terminal", {"command": command}, id=f"toolu_{n:02d}")
                   for n, command in enumerate(COMMANDS)]
        fake.script(*replies, text_reply("done"))
        fake.script_auxiliary(text_reply("Bench"))
        client = EditorClient(policy=choose("allow_once"))
        async with running_agent(root, fake, client=client, command=server) as agent:
            session_id = await agent.new_session()
            await agent.conn.set_session_mode(session_id=session_id, mode_id="accept-edits")
            if await agent.prompt(session_id, "work through the list") != "end_turn":
                raise RuntimeError("the task did not end")
        return [(COMMANDS[int(request["toolCall"]["toolCallId"].removeprefix("toolu_"))],
                 str(request["toolCall"].get("title", ""))) for request in client.permission_requests]


async def count_demo(server: tuple[str, ...], mode: str) -> int:
    """Questions the offline demo's story asks in ``mode``."""
    from acp_hermes.testing.demo_model import DEFAULT_PROMPT, start_demo_model, write_sample_project
    from tests.support.acp_harness import EditorClient, choose, running_agent

    model = start_demo_model()
    try:
        with tempfile.TemporaryDirectory(prefix="acp-hermes-demo-prompts-") as scratch:
            root = Path(scratch)
            write_sample_project(root / "workspace")
            client = EditorClient(policy=choose("allow_once"))
            env = {"ANTHROPIC_BASE_URL": model.base_url, "ANTHROPIC_API_KEY": "demo-key",
                   "HERMES_MODEL": "offline-demo"}
            async with running_agent(root, None, client=client, env=env, command=server) as agent:
                session_id = await agent.new_session()
                await agent.conn.set_session_mode(session_id=session_id, mode_id=mode)
                if await agent.prompt(session_id, DEFAULT_PROMPT) != "end_turn":
                    raise RuntimeError("the demo did not end")
            return len(client.permission_requests)
    finally:
        model.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=f"{sys.executable} -m acp_hermes", help="the agent command to measure")
    args = parser.parse_args(argv)
    server = tuple(shlex.split(args.server))
    from acp_hermes_tools.sandbox import detect

    print(f"sandbox: {detect().detail}")
    for mode in ("default", "accept-edits"):
        print(f"offline demo, {mode}: {anyio.run(count_demo, server, mode)} question(s)")
    asked: list[tuple[str, str]] = anyio.run(count_commands, server)
    print(f"30 commands, accept-edits: {len(asked)} question(s)")
    for command, title in asked:
        print(f"  {command}\n      {title}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
