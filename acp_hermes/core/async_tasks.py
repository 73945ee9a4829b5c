"""Stopping one piece of a session's background work by the editor's hand: a background job (by its
``job-N`` id) or a delegated child (by its session id).

The user asks through the editor (JetBrains AIR's async tasks), outside any turn and outside the
model's tools, so no permission is asked: it is the user's own action on work the agent started for
them. A job's end is then told as any job's end (``core.job_notices``); a child's cancel ends its
task, which its parent's ``delegate_task`` call reports.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acp_hermes.core.session import Session

log = logging.getLogger(__name__)


async def stop_task(session: Session, task_id: str) -> bool:
    """Stop ``task_id`` of ``session``: True when it was running and is stopped now (a child: told to stop)."""
    from acp_hermes_tools.context import JOB_STOP_GRACE_SECONDS
    from acp_hermes_tools.local_io import stop_group
    from acp_hermes_tools.terminal import background_jobs

    for child in session.services.children.children_of(session.id):
        if child.id == task_id:
            log.info("session %s: the user stopped child %s", session.id, task_id)
            child.cancel()
            return True
    job = background_jobs(session.services.tools).find(task_id)
    if job is None or job.exit_code is not None:
        return False
    log.info("session %s: the user stopped background job %s", session.id, task_id)
    await stop_group(job.process, JOB_STOP_GRACE_SECONDS)
    return True
