"""The network: remote shells and copies, downloaders, and the command-line clients of hosted services.

``ssh`` runs what follows the host on another machine (``ssh localhost rm -rf ~`` is this one): judged
as if run here, and never seen in full; ``-o ProxyCommand=…`` and ``scp -S`` run a program here. The
programs here need the network; the downloaders' output piped into a shell is downloaded code.
"""

from __future__ import annotations

import re

from acp_hermes.permissions.shell.arguments import names, skip_options
from acp_hermes.permissions.shell.programs.base import Family, key_shape
from acp_hermes.permissions.shell.rating import Call

_SSH_VALUES = "BbcDEeFIiJLlmOopQRSWw"
# ssh configuration that names a local program: ``ssh -o ProxyCommand='…' host`` runs it here.
_SSH_COMMAND_KEYS = re.compile(r"(?i)(?:proxycommand|localcommand|knownhostscommand)\s*[= ]\s*(.*)", re.S)


def _check_ssh(call: Call) -> None:
    """ssh runs what follows the host on another machine (``ssh localhost rm -rf ~`` is this one):
    judged as if run here, and never seen in full. ``-o …Command=…`` and scp's ``-S`` run a program
    here; ``-F`` reads a configuration that may name one."""
    args = call.args
    for index, arg in enumerate(args):
        following = args[index + 1] if index + 1 < len(args) else ""
        value = arg[2:] if arg.startswith("-o") and len(arg) > 2 else (following if arg == "-o" else "")
        named = _SSH_COMMAND_KEYS.match(value)
        if named:
            call.findings.dangerous(f"{call.name} -o {value.split('=')[0].split()[0]} runs a program here")
            call.rate_line(named.group(1))
        elif arg == "-S" and call.name != "ssh" and following:
            call.findings.dangerous(f"{call.name} -S runs a program")
            call.rate_line(following)
        elif arg.startswith("-F"):
            call.findings.opaque.append(f"{call.name} -F reads a configuration that may name programs")
    if call.name != "ssh":
        return
    texts = [word.text for word in call.words]
    remote = texts[skip_options(texts, _SSH_VALUES, frozenset()) + 1 :]
    if remote:
        call.findings.opaque.append("runs a command on another machine (ssh)")
        call.rate_line(" ".join(remote))


DOWNLOADERS = frozenset({"curl", "wget", "fetch", "http", "https", "xh"})
_GH_GROUPS = (
    "pr issue repo release run workflow gist auth codespace secret variable label cache project extension "
    "ssh-key gpg-key config search org ruleset attestation"
)
FAMILY = Family(
    checks=dict.fromkeys(("ssh", "scp", "sftp"), _check_ssh),
    shapes={
        "gh": key_shape(nested=_GH_GROUPS, options="-R --repo"),
        "glab": key_shape(nested="mr issue repo ci release variable auth", options="-R --repo"),
        "aws": key_shape(depth=2, options="--profile --region --output --endpoint-url --query"),
        "gcloud": key_shape(depth=4, options="--project --account --configuration --format"),
        "az": key_shape(depth=4, options="--subscription --output -o"),
    },
    network_programs=names(
        "curl wget ssh scp sftp telnet nc ncat netcat ftp aria2c http https xh gh glab aws gcloud az"
    ),
)
