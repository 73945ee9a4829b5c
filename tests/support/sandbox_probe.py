"""Runs commands in a session sandbox as whoever starts this script, and prints what happened as JSON.

The boundary tests start it as the test's own user and, where the tests run as root, again as an
unprivileged user (``setpriv``), so the same sandbox is checked from both sides.

    python -m tests.support.sandbox_probe '{"workspace": …, "home": …, "hermes": …, "commands": [...]}'

Optional keys: ``environ`` (what the session's allowlist is built from), ``process_environ`` (added to
this process's own environment, as the agent's secrets are), ``network``, ``launch`` (``direct``, the
default: spawned as ``LocalEditor.run_command`` spawns it; ``terminal``: the command line an editor's
terminal is given, started with this process's environment).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def main() -> int:
    spec = json.loads(sys.argv[1])
    from acp_hermes_tools.local_io import LocalEditor
    from acp_hermes_tools.sandbox import SessionSandbox, hidden_paths

    home, workspace = Path(spec["home"]), Path(spec["workspace"])
    sandbox = SessionSandbox(
        enabled=True, writable=(workspace,), hidden=hidden_paths(home, Path(spec["hermes"])),
        network_allowed=False, session_id="probe", home=home, quarantine=Path(spec["hermes"]) / "quarantine",
        environ=spec.get("environ", {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home)}),
    )
    if not sandbox.available:
        print(json.dumps({"unavailable": sandbox.status.detail}))
        return 0
    results = []
    os.environ.update(spec.get("process_environ", {}))  # the agent's own environment, secrets and all
    editor = LocalEditor(shell="/bin/sh")
    for command in spec["commands"]:
        confinement = sandbox.confinement(network=bool(spec.get("network")))
        if spec.get("launch", "direct") == "terminal":  # the one command line an editor's terminal is given
            done = subprocess.run(editor.argv(command, confinement), cwd=workspace, capture_output=True, text=True,
                                  timeout=60, check=False)
        else:  # as the agent spawns it itself (LocalEditor.run_command)
            with editor.launch(command, confinement) as launch:
                done = subprocess.run(launch.argv, env=launch.env, pass_fds=launch.pass_fds, cwd=workspace,
                                      capture_output=True, text=True, timeout=60, check=False)
        moved = [str(item.path) for item in sandbox.audit(confinement)]
        results.append({"code": done.returncode, "out": done.stdout, "err": done.stderr, "moved": moved})
    sandbox.discard()
    print(json.dumps({"results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
