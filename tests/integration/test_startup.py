"""Start-up stays cheap (DESIGN.md invariant 8): a server that answers ``initialize`` imports
neither the model SDK nor the schema validator nor a single tool module.

The real server runs under Python's import tracing (``PYTHONPROFILEIMPORTTIME``), which writes
one line per imported module to stderr, and is asked only to initialize before stdin closes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.acp_harness import raw_agent

HEAVY = ("anthropic", "jsonschema", "httpx", "mcp", "mcp_types")
TOOL_MODULES = tuple(f"acp_hermes_tools.{name}" for name in (
    "files", "terminal", "todo", "memory", "session_search", "search", "diffs", "registry"))
RULE_TABLES = ("acp_hermes.permissions.command_risk", "acp_hermes_tools.sensitive_paths")
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
