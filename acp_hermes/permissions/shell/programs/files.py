"""File commands: what they delete, overwrite, move away or change the mode of, and their grant tables.

``rm`` (every operand a delete, ``-r`` of a vital directory refused), ``cp``/``mv``/``ln``/``install``/
``tee`` (what they overwrite; ``mv`` also what it moves away), ``chmod``/``chown`` of trees, ``dd``
onto a disk, ``rsync --delete``; the listing commands (``ls``, ``stat``, ``du`` …) only read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from acp_hermes.permissions.shell.arguments import has_flag, names, operands_of, option_value
from acp_hermes.permissions.shell.options import Line, spec
from acp_hermes.permissions.shell.programs.base import ANY, OPTIONS, Family
from acp_hermes.permissions.shell.rating import HARMLESS_TARGETS, RAW_DISK, Call, absolute, outside_project, vital_path

# ---------------------------------------------------------------------------------------------
# Risk
# ---------------------------------------------------------------------------------------------


def _check_rm(call: Call) -> None:
    """rm (every operand is a delete: ``rm ~/.bashrc``), rm -r, and rimraf (npm's rm -rf)."""
    args = call.args
    if call.name == "rm" and not has_flag(args, "rR", "--recursive"):
        check_deletes(call)
        return
    if has_flag(args, "", "--no-preserve-root"):
        call.findings.catastrophic("rm --no-preserve-root")
    vital = [where for where in (vital_path(target, call.env) for target in operands_of(args)) if where]
    for where in vital:
        call.findings.catastrophic(f"recursive delete of {where}")
    if not vital:
        call.findings.dangerous("recursive delete")
        check_deletes(call)


def check_deletes(call: Call) -> None:
    """rm, unlink, shred: each operand is removed (or overwritten), like a write of that path."""
    for target in operands_of(call.args, frozenset({"-n", "--iterations", "-s", "--size", "--random-source"})):
        call.writes(target, deletes=True)


def _check_truncate(call: Call) -> None:
    """``truncate -s0 ~/.bashrc`` empties the file: a write of every operand."""
    for target in operands_of(call.args, frozenset({"-s", "--size", "-r", "--reference"})):
        call.writes(target)


def _check_sponge(call: Call) -> None:
    """moreutils' sponge writes its input to the file it is given."""
    for target in operands_of(call.args):
        call.writes(target)


def _check_dd(call: Call) -> None:
    for arg in call.args:
        if not arg.startswith("of="):
            continue
        target = arg[3:]
        path = absolute(target, call.env) or target
        if RAW_DISK.match(path):
            call.findings.catastrophic(f"dd onto a raw disk ({path})")
        elif path not in HARMLESS_TARGETS:
            call.findings.dangerous(f"dd overwrites {target}")
            call.writes(target)


_WRECKING_MODES = frozenset(
    {"777", "0777", "000", "0000", "a+rwx", "ugo+rwx", "a=rwx", "a-rwx", "ugo-rwx", "o+w", "a+w"}
)


def _check_ownership(call: Call) -> None:
    """chmod/chown/chgrp: recursive changes of vital or foreign trees, world-writable trees."""
    args = call.args
    if call.name == "chmod":  # a dash word is an option only if it is one of chmod's own
        options = [a for a in args if a.startswith("--") or re.fullmatch(r"-[cfvR]+", a)]
        operands = [a for a in args if a not in options]
    else:
        options = [a for a in args if a.startswith("-")]
        operands = [a for a in args if not a.startswith("-")]
    if not has_flag(options, "R", "--recursive"):
        return
    reference = any(option.startswith("--reference") for option in options)
    setting, paths = (None, operands) if reference else (operands[:1], operands[1:])
    vital = [where for where in (vital_path(path, call.env) for path in paths) if where]
    for where in vital:
        call.findings.catastrophic(f"recursive {call.name} of {where}")
    if vital:
        return
    if call.name == "chmod" and setting and setting[0] in _WRECKING_MODES:
        call.findings.dangerous(f"recursive chmod {setting[0]}")
    if any(outside_project(path, call.env) for path in paths):
        call.findings.dangerous(f"recursive {call.name} outside the project")


def _check_copy(call: Call) -> None:
    """cp/mv/install/ln/tee: what they overwrite; mv also what it moves away."""
    operands = operands_of(call.args, frozenset({"-t", "--target-directory", "-S", "--suffix", "-m", "--mode"}))
    if call.name == "tee":
        targets = operands
    else:
        directory = option_value(call.args, "-t", "--target-directory")
        targets = [directory] if directory else operands[-1:]
        if call.name == "mv":
            sources = operands if directory else operands[:-1]
            for source in sources:
                where = vital_path(source, call.env)
                if where:
                    call.findings.catastrophic(f"moves {where} away")
                else:  # what is moved away is gone from where it was: ``mv ~/.bashrc x``
                    call.writes(source, deletes=True)
    for target in targets:
        call.writes(target)


_RSYNC_DELETES = ("--delete", "--del", "--delete-before", "--delete-during", "--delete-delay", "--delete-after",
                  "--delete-excluded", "--remove-source-files")


def _check_rsync(call: Call) -> None:
    args = call.args
    operands = operands_of(args, frozenset({"-e", "--rsh", "--exclude", "--include", "--filter", "-f"}))
    if any(":" in operand.split("/", 1)[0] for operand in operands):
        call.findings.network = True  # host:path
    for index, arg in enumerate(args):  # the remote shell it starts runs here: judged as if on the line
        option, has_value, value = arg.partition("=")
        if option in ("-e", "--rsh") and (has_value or index + 1 < len(args)):
            call.rate_line(value if has_value else args[index + 1])
    if len(operands) > 1 and ":" not in operands[-1].split("/", 1)[0]:
        call.writes(operands[-1])
    if not operands or not has_flag(args, "", *_RSYNC_DELETES):
        return
    destination = operands[-1]
    where = vital_path(destination, call.env)
    if where:
        call.findings.dangerous(f"rsync --delete onto {where}")
    elif outside_project(destination, call.env) and call.env.roots:
        call.findings.dangerous("rsync --delete outside the workspace")


# ---------------------------------------------------------------------------------------------
# The options a grant covers
# ---------------------------------------------------------------------------------------------


def _date_sets_clock(line: Line) -> Iterable[str]:
    """An operand other than ``+FORMAT`` sets the clock (unless BSD's ``-j`` says not to)."""
    return () if "-j" in line.options else [word for word in line.operands if not word.startswith("+")]


_LS = spec(
    "-a --all -A --almost-all --author -b --escape -B --ignore-backups -c -C --color -d --directory -D --dired "
    "-f -F --classify --file-type --full-time -g --group-directories-first -G --no-group -h --human-readable "
    "--si -H --dereference-command-line --dereference-command-line-symlink-to-dir --hyperlink -i --inode -k "
    "--kibibytes -l -L --dereference -m -n --numeric-uid-gid -N --literal -o -p -q --hide-control-chars "
    "--show-control-chars -Q --quote-name -r --reverse -R --recursive -s --size -S -t -u -U -v -x -X -Z "
    "--context -1 --zero -@ -e -O -P -T -W",
    "--block-size --format --hide --indicator-style -I --ignore --quoting-style --sort --time --time-style "
    "--tabsize -w --width",
)
_TREE = spec(  # not -o (writes its output to a file)
    "-a -d -l -f -x -q -N -Q -p -u -g -s -h --si --du -D -F --inodes --device -v -t -c -U -r --dirsfirst "
    "--filesfirst -n -C -A -S -J -X -i --noreport --gitignore --ignore-case --matchdirs --prune",
    "-L -P -I --filelimit --charset --timefmt --sort -H -T",
    style="letters",  # tree gives -L in -Lo the next word, then reads o as an option
)
_DU = spec(
    "-a --all --apparent-size -b --bytes -c --total -D --dereference-args -H -h --human-readable --inodes -k "
    "-L --dereference -l --count-links -m -P --no-dereference -S --separate-dirs --si -s --summarize -x "
    "--one-file-system -0 --null --time",
    "-B --block-size -d --max-depth -t --threshold --time-style --exclude -X --exclude-from --files0-from",
)
_DF = spec(
    "-a --all -h --human-readable -H --si -i --inodes -k -l --local --output -P --portability --sync --no-sync "
    "--total -T --print-type",
    "-B --block-size -t --type -x --exclude-type",
)
_STAT = spec("-L --dereference -f --file-system -t --terse -x -s -l -r -n -q", "-c --format --printf --cached")
_FILE = spec(  # not -z (decompresses with external programs), -C (writes), -m (another magic file)
    "-b --brief -i --mime --mime-type --mime-encoding -L --dereference -h --no-dereference -s --special-files "
    "-k --keep-going -r --raw -0 --print0 -N --no-pad -n --no-buffer -E --extension --apple -I",
    "-e --exclude -P --parameter -F --separator -f --files-from",
)
# Everyday file commands: their operands name what they act on (free, as for every program); of
# their options only those that change neither where they write nor what runs are listed.
_MKDIR = spec("-p --parents -v --verbose", "-m --mode")
_TOUCH = spec("-a -c --no-create -m -h --no-dereference", "-d --date -t")
_COPY = spec("-a --archive -r -R --recursive -p -v --verbose -f --force -i --interactive -n --no-clobber -u "
              "--update -L --dereference -P --no-dereference -T --no-target-directory -l --link -s --symbolic-link "
              "--preserve --parents")
_MOVE = spec("-f --force -i --interactive -n --no-clobber -u --update -v --verbose -T --no-target-directory")
_RM = spec("-f --force -i -I -d --dir -v --verbose")  # not -r: a recursive delete is always asked anyway
_LN = spec("-s --symbolic -f --force -n --no-dereference -v --verbose -r --relative -T --no-target-directory -i")
_CD = spec("-L -P -e -@")
_PWD = spec("-L -P")
_BASENAME = spec("-a --multiple -z --zero", "-s --suffix")
_DIRNAME = spec("-z --zero")
_REALPATH = spec(
    "-e --canonicalize-existing -m --canonicalize-missing -L --logical -P --physical -q --quiet -s --strip "
    "--no-symlinks -z --zero",
    "--relative-to --relative-base",
)
_READLINK = spec(
    "-f --canonicalize -e --canonicalize-existing -m --canonicalize-missing -n --no-newline -q --quiet -s "
    "--silent -v --verbose -z --zero"
)
_DATE = spec(  # not -s/--set; an operand other than +FORMAT sets the clock too
    "-u --utc --universal -R --rfc-email --debug -j",
    "-d --date -f --file -r --reference --rfc-3339 -v",
    attached="-I",
    skipped="-s --set",
    operands=_date_sets_clock,
)

FAMILY = Family(
    checks={
        **dict.fromkeys(("rm", "rimraf"), _check_rm),
        "unlink": check_deletes,
        "truncate": _check_truncate,
        "sponge": _check_sponge,
        "dd": _check_dd,
        **dict.fromkeys(("chmod", "chown", "chgrp"), _check_ownership),
        **dict.fromkeys(("cp", "mv", "install", "ln", "tee"), _check_copy),
        "rsync": _check_rsync,
    },
    options={
        "ls": _LS,
        "tree": _TREE,
        "du": _DU,
        "df": _DF,
        "stat": _STAT,
        "file": _FILE,
        "pwd": _PWD,
        "cd": _CD,
        "mkdir": _MKDIR,
        "touch": _TOUCH,
        "cp": _COPY,
        "mv": _MOVE,
        "rm": _RM,
        "ln": _LN,
        "basename": _BASENAME,
        "dirname": _DIRNAME,
        "realpath": _REALPATH,
        "readlink": _READLINK,
        "date": _DATE,
    },
    reads={
        **dict.fromkeys(names("ls stat du df pwd cd basename dirname realpath readlink"), ANY),
        **dict.fromkeys(names("tree file date"), OPTIONS),
    },
)
