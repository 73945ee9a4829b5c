"""Notices, quotas and the JetBrains AIR profile on the wire: what the agent advertises, what it reads
from the client's requests, and ``quota/read``.

Each is sent only to a client that asked (``adapter.client.ClientAbilities``): ``session.notices``
for ``notice`` updates, ``session.quotas`` for ``quota_update``, ``quota/read`` and the
``quotaExceeded`` error, and AIR's ``_meta.jetbrains.air`` capabilities for the file-change report
and async tasks. docs/editor-extensions.md describes them for client authors.
"""

from __future__ import annotations

import re
from typing import Any

from acp_hermes.adapter.render import QUOTA_EXCEEDED_CODE, quota_pools

QUOTA_READ_METHOD = "quota/read"
TASK_STOP_METHOD = "session/async_task/stop"  # ``_session/async_task/stop`` on the wire

# AIR reads the agent's AIR extensions from the answer to ``initialize``'s top-level ``_meta``.
AIR_CAPABILITIES = ("agentFileChangeReport", "asyncTasks", "nativeSubagentSessions")
AIR_META = {"jetbrains": {"air": {"version": 1, "capabilities": list(AIR_CAPABILITIES)}}}
QUOTAS_CAPABILITY = {"quotas": {"update": "quota_update", "methods": [QUOTA_READ_METHOD],
                                "exceededErrorCode": QUOTA_EXCEEDED_CODE}}

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def file_report_request(params: dict[str, Any]) -> str | None:
    """The ``requestId`` of a prompt's ``_meta.jetbrains.air.agentFileChangeReportRequest``
    (``{version: 1, requestId}``, nothing else), or None when it asks for none or is malformed."""
    meta = params.get("_meta")
    air = ((meta or {}).get("jetbrains") or {}).get("air") if isinstance(meta, dict) else None
    request = air.get("agentFileChangeReportRequest") if isinstance(air, dict) else None
    if not isinstance(request, dict) or set(request) != {"version", "requestId"} or request["version"] != 1:
        return None
    request_id = request["requestId"]
    return request_id if isinstance(request_id, str) and _REQUEST_ID.fullmatch(request_id) else None


def quota_read_result(pools: Any) -> dict[str, Any]:
    """The answer to ``quota/read``: the session's pools as they stand."""
    return {"pools": quota_pools(pools)}
