"""Start-up stays cheap (DESIGN.md invariant 8): a server that answers ``initialize`` imports
neither the model SDK nor the schema validator nor a single tool module; a turn imports only the
parts of the model SDK it uses.

The real server runs under Python's import tracing (``PYTHONPROFILEIMPORTTIME``), which writes
one line per imported module to stderr, and is asked only to initialize before stdin closes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.acp_harness import raw_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply

HEAVY = ("anthropic", "jsonschema", "httpx", "mcp", "mcp_types")
TOOL_MODULES = tuple(f"acp_hermes_tools.{name}" for name in (
    "files", "terminal", "todo", "memory", "session_search", "search", "diffs", "registry"))
RULE_TABLES = ("acp_hermes.permissions.shell.analysis", "acp_hermes.permissions.shell.programs",
               "acp_hermes_tools.sensitive_paths")
# A module name as the import trace prints it, after its timings. The trace is not parsed line by line:
# the state.db thread imports at the same time, and two threads' trace lines can interleave mid-line.
_TRACED = re.compile(r"\|\s*([A-Za-z_][\w.]*)(?=\s|$)")


def imported_modules(stderr: str) -> set[str]:
    return {match.group(1) for match in _TRACED.finditer(stderr)}


@pytest.mark.anyio
async def test_initialize_imports_no_model_sdk_validator_or_tool(tmp_path: Path) -> None:
    # Quiet logs: a log line written while the interpreter traces imports could split a trace line.
    env = {"PYTHONPROFILEIMPORTTIME": "1", "ACP_HERMES_LOG_LEVEL": "WARNING"}
    async with raw_agent(tmp_path, None, env=env) as agent:
        response = await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert response["result"]["agentInfo"]["name"] == "acp-hermes"
    modules = imported_modules(agent.stderr_path.read_text(encoding="utf-8", errors="replace"))
    assert {"acp", "acp_hermes.adapter.server", "acp_hermes.core.session"} <= modules  # the tracing worked
    loaded = {m for m in modules if m.split(".")[0] in HEAVY or m in TOOL_MODULES or m in RULE_TABLES}
    assert loaded == set()


# What ``import anthropic`` would load and a turn does not use: the beta and admin API resources,
# the cloud-provider clients, the tool runners.
UNUSED_SDK_PARTS = ("anthropic.resources.beta", "anthropic.resources.organization", "anthropic.lib.vertex",
                    "anthropic.lib.bedrock", "anthropic.lib.aws", "anthropic.lib.foundry", "anthropic.lib.tools")


@pytest.mark.anyio
async def test_a_turn_loads_only_the_parts_of_the_model_sdk_it_uses(tmp_path: Path,
                                                                   fake_anthropic: FakeAnthropic) -> None:
    """The SDK is imported lazily (``model.lazy_packages``): its client and Messages code, not the
    trees its ``__init__`` files would import (~0.6 s of CPU)."""
    fake_anthropic.script(text_reply("Hello."))
    fake_anthropic.script_auxiliary(text_reply("Greeting"))
    env = {"PYTHONPROFILEIMPORTTIME": "1", "ACP_HERMES_LOG_LEVEL": "WARNING"}
    async with raw_agent(tmp_path, fake_anthropic, env=env) as agent:
        await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        created = await agent.request("session/new", {"cwd": str(tmp_path / "workspace"), "mcpServers": []})
        session_id = created["result"]["sessionId"]
        done = await agent.request("session/prompt", {"sessionId": session_id,
                                                      "prompt": [{"type": "text", "text": "Hi"}]}, timeout=60)
        assert done["result"]["stopReason"] == "end_turn"
    modules = imported_modules(agent.stderr_path.read_text(encoding="utf-8", errors="replace"))
    # The tracing worked. (It times ``import`` statements: a module the lazy hook imports with
    # ``importlib.import_module`` has no line of its own, but everything it imports does.)
    assert {"anthropic._base_client", "anthropic.resources.messages.batches"} <= modules
    assert {m for m in modules if m.startswith(UNUSED_SDK_PARTS)} == set()
