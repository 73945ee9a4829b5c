"""tar and zip: the commands their options run, and which of tar's options a grant covers.

``tar --to-command``, ``--checkpoint-action=exec=…``, ``-I`` and ``zip --unzip-command`` run commands;
``tar -f host:file`` starts a remote shell. Old-style ``tar xzf a.tgz`` is read as ``-x -z -f a.tgz``.
"""

from __future__ import annotations

from collections.abc import Sequence

from acp_hermes.permissions.shell.options import spec
from acp_hermes.permissions.shell.programs.base import Family
from acp_hermes.permissions.shell.rating import Call

# tar options whose value is a command it runs (or a program it starts).
_TAR_RUNS = ("--checkpoint-action", "--to-command", "--use-compress-program", "-I", "--rsh-command", "--info-script",
             "--new-volume-script", "-F")


def _check_tar(call: Call) -> None:
    args = call.args
    for index, arg in enumerate(args):
        option, has_value, value = arg.partition("=")
        if option not in _TAR_RUNS:
            continue
        value = value if has_value else (args[index + 1] if index + 1 < len(args) else "")
        call.findings.dangerous(f"tar {option} runs a command")
        call.rate_line(value.removeprefix("exec=").removeprefix("exec:"))


def _check_zip(call: Call) -> None:
    if any(arg in ("-TT", "--unzip-command") or arg.startswith("--unzip-command=") for arg in call.args):
        call.findings.dangerous("zip --unzip-command runs a command")


def _local_archive(value: str) -> bool:
    """``host:file`` makes tar run a remote shell."""
    return ":" not in value


_TAR = spec(  # not -C (another directory), -I/--use-compress-program, --to-command, --checkpoint-action …
    "-t --list -x --extract --get -c --create -d --diff --compare -v --verbose -z --gzip --gunzip --ungzip -j "
    "--bzip2 -J --xz --zstd --lzma --lzip --lzop -a --auto-compress -O --to-stdout -k --keep-old-files "
    "--skip-old-files --keep-newer-files -m --touch -p --preserve-permissions --same-permissions "
    "--no-same-owner --no-same-permissions --numeric-owner -h --dereference --exclude-vcs --exclude-vcs-ignores "
    "--wildcards --no-wildcards --anchored --no-anchored --totals -W --verify --one-file-system --no-recursion "
    "--recursion --null --force-local --show-transformed-names --full-time --utc -w --interactive",
    "--exclude -X --exclude-from -T --files-from --strip-components --transform --xform --owner --group --mode "
    "--mtime --sort --format -H --blocking-factor -b --record-size",
    skipped="-C --directory -I --use-compress-program -F --info-script --new-volume-script -g "
    "--listed-incremental -K --starting-file -N --newer --after-date -L --tape-length -V --label",
    checks={"-f": _local_archive, "--file": _local_archive},
)


def _old_style_tar(args: Sequence[str]) -> list[str]:
    """``tar xzf a.tgz dir`` → ``tar -x -z -f a.tgz dir``: value letters take the next words in turn."""
    if not args or args[0].startswith("-"):
        return list(args)
    words, rest = [], list(args[1:])
    for letter in args[0]:
        option = "-" + letter
        words.append(option)
        if rest and (option in _TAR.valued or option in _TAR.skipped or option in _TAR.checks):
            words.append(rest.pop(0))
    return words + rest


FAMILY = Family(
    checks={**dict.fromkeys(("tar", "gtar", "bsdtar"), _check_tar), "zip": _check_zip},
    options=dict.fromkeys(("tar", "gtar"), _TAR),
    prepare=dict.fromkeys(("tar", "gtar"), _old_style_tar),
)
