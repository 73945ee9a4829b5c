"""find and fd: what they delete, write and run per result, and which of their words a grant covers.

``find -exec``/``-ok`` and ``fd -x``/``-X`` run a command per result: it is judged as if it stood on the
line, wrappers and shells included. ``-delete`` (or an ``-exec rm``) from a vital directory is refused.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from acp_hermes.permissions.shell.arguments import names, program_name
from acp_hermes.permissions.shell.options import spec
from acp_hermes.permissions.shell.parse import Word
from acp_hermes.permissions.shell.programs.base import OPTIONS, Family
from acp_hermes.permissions.shell.rating import Call, vital_path

_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_DELETERS = frozenset({"rm", "rmdir", "unlink", "shred"})


def _find_actions(words: Sequence[Word]) -> Iterator[list[Word]]:
    """The commands ``find -exec … ;`` runs."""
    index = 1
    while index < len(words):
        if words[index].text in _FIND_ACTIONS:
            end = index + 1
            while end < len(words) and words[end].text not in (";", "+"):
                end += 1
            if end > index + 1:
                yield list(words[index + 1 : end])
            index = end + 1
        else:
            index += 1


_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls"})


def _check_find(call: Call) -> None:
    args = call.args
    for index, arg in enumerate(args[:-1]):
        if arg in _FIND_WRITES:
            call.writes(args[index + 1])
    deletes = "-delete" in args
    for action in _find_actions(call.words):
        call.rate_words(action)
        deletes = deletes or program_name(action[0].text) in _DELETERS
    if not deletes:
        return
    index = 0
    while index < len(args) and args[index] in ("-H", "-L", "-P"):
        index += 1
    starts = []
    for arg in args[index:]:
        if arg.startswith(("-", "(", "!")):
            break
        starts.append(arg)
    vital = [where for where in (vital_path(start, call.env) for start in starts) if where]
    for where in vital:
        call.findings.catastrophic(f"deletes everything under {where} (find)")
    if not vital:
        call.findings.dangerous("bulk delete (find)")


def _check_fd(call: Call) -> None:
    """``fd -x cmd`` / ``fd -X cmd`` run a command per result, like ``find -exec``."""
    args = call.args
    for index, arg in enumerate(args):
        if arg in ("-x", "--exec", "-X", "--exec-batch") and index + 1 < len(args):
            end = next((i for i in range(index + 1, len(args)) if args[i] == ";"), len(args))
            call.rate_words([Word(word) for word in args[index + 1 : end]])


_FIND = spec(  # not -exec -execdir -ok -okdir -delete -fprint -fprint0 -fprintf -fls
    "-H -L -P -E -X -d -s -x -empty -prune -print -print0 -ls -not -a -o -and -or -readable -writable "
    "-executable -xdev -mount -depth -follow -nouser -nogroup -true -false -quit -daystart -noleaf "
    "-ignore_readdir_race -noignore_readdir_race -nowarn -warn -help -version",
    "-name -iname -path -ipath -wholename -iwholename -lname -ilname -type -xtype -maxdepth -mindepth -mtime "
    "-mmin -atime -amin -ctime -cmin -used -newer -anewer -cnewer -size -regex -iregex -regextype -perm -user "
    "-group -uid -gid -links -inum -samefile -fstype -context -printf "
    + " ".join(f"-newer{x}{y}" for x in "acmB" for y in "acmBt"),
    style="words",
    greedy=True,
)
_FIND_RUNNERS = names("-exec -execdir -ok -okdir")


def _find_words(args: Sequence[str]) -> list[str]:
    """find's words without ``--`` (it ends only the options before the paths: ``find -- . -delete``
    deletes) and without the commands of ``-exec``/``-ok`` (up to ``;`` or ``+``), which are not its own."""
    words: list[str] = []
    in_command = False
    for word in args:
        if in_command:
            in_command = word not in (";", "+")
        elif word != "--":
            words.append(word)
            in_command = word in _FIND_RUNNERS
    return words


FAMILY = Family(
    checks={"find": _check_find, **dict.fromkeys(("fd", "fdfind"), _check_fd)},
    options={"find": _FIND},
    prepare={"find": _find_words},
    reads=dict.fromkeys(("find", "fd", "fdfind"), OPTIONS),
)
