"""The system: processes, power, services, schedules, disks and filesystems, and the basic builtins.

``kill -1`` and ``kill 1``, ``pkill``, ``shutdown``/``reboot`` (also ``systemctl poweroff``, ``init 0``),
``crontab -r``, partitioning and wiping tools, and ``mkfs``. ``echo``, ``test``, ``which``, ``id`` and
the like only print.
"""

from __future__ import annotations

from acp_hermes.permissions.shell.arguments import has_flag, names, operands_of, subcommand
from acp_hermes.permissions.shell.options import spec
from acp_hermes.permissions.shell.programs.base import ANY, OPTIONS, SIMPLE, Family, key_shape
from acp_hermes.permissions.shell.programs.files import check_deletes
from acp_hermes.permissions.shell.rating import RAW_DISK, Call, absolute


def _check_kill(call: Call) -> None:
    args, pids, index = call.args, [], 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            pids.extend(args[index + 1 :])
            break
        if arg in ("-s", "-n"):
            index += 2
            continue
        if arg.startswith("-") and (index == 0 or arg[1:].isalpha()):
            index += 1  # the signal
            continue
        pids.append(arg)
        index += 1
    if "-1" in pids:
        call.findings.dangerous("kills every process")
    if "1" in pids:
        call.findings.dangerous("kills init (pid 1)")


def _check_kill_by_name(call: Call) -> None:
    call.findings.dangerous(f"kills processes by name ({call.name})")


def _check_power(call: Call) -> None:
    call.findings.dangerous("shuts down or reboots the machine")


def _check_systemctl(call: Call) -> None:
    sub, _ = subcommand(call.args, frozenset({"-H", "--host", "-M", "--machine"}))
    if sub in ("poweroff", "reboot", "halt", "kexec"):
        _check_power(call)


def _check_init(call: Call) -> None:
    if call.args[:1] in (["0"], ["6"]):
        _check_power(call)


def _check_crontab(call: Call) -> None:
    if has_flag(call.args, "r"):
        call.findings.dangerous("removes all cron jobs")


_PARTITIONERS = frozenset({"fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "cgdisk", "parted", "gparted"})
_WIPERS = frozenset({"wipefs", "blkdiscard", "shred", "sgdisk", "mkswap", "newfs"})


def _check_disk_tool(call: Call) -> None:
    args = call.args
    if call.name in _PARTITIONERS and has_flag(args, "", "-l", "--list"):
        return  # only lists partitions
    wipes = {  # without these flags wipefs and sgdisk only print
        "wipefs": has_flag(args, "a", "--all") and not has_flag(args, "n", "--no-act"),
        "sgdisk": has_flag(args, "Zo", "--zap-all", "--clear"),
    }.get(call.name, call.name in _WIPERS)
    for operand in operands_of(args):
        path = absolute(operand, call.env) or operand
        if wipes and RAW_DISK.match(path):
            call.findings.catastrophic(f"wipes a raw disk ({call.name} {path})")
            return
    if call.name == "shred":
        call.findings.dangerous("shred (unrecoverable overwrite)")
        check_deletes(call)
    elif call.name != "mkswap":
        call.findings.dangerous(f"disk partitioning or wiping tool ({call.name})")


def makes_filesystem(name: str) -> bool:
    """``mkfs``, ``mkfs.ext4``, ``mke2fs``: formats what it is given."""
    return name.startswith("mkfs") or name == "mke2fs"


# Every word only shapes what is printed or tested: no option of theirs reaches anything.
PRINTERS = frozenset({"echo", "test", "[", "[[", "true", "false", ":"})
_WHICH = spec("-a --all -s --skip-alias --skip-functions --skip-dot --skip-tilde --show-dot --show-tilde")

FAMILY = Family(
    checks={
        "kill": _check_kill,
        **dict.fromkeys(("killall", "killall5", "pkill"), _check_kill_by_name),
        **dict.fromkeys(("shutdown", "reboot", "halt", "poweroff"), _check_power),
        "systemctl": _check_systemctl,
        **dict.fromkeys(("init", "telinit"), _check_init),
        "crontab": _check_crontab,
        **dict.fromkeys(_PARTITIONERS | _WIPERS, _check_disk_tool),
    },
    options={
        "which": _WHICH,
        "printf": spec(trailing=True),  # not -v (assigns a shell variable, PATH among them)
    },
    shapes={
        "systemctl": key_shape(options="-H --host -M --machine"),
        **dict.fromkeys(names("tmux openssl direnv launchctl"), SIMPLE),
    },
    reads={
        **dict.fromkeys(names("echo true false test [ [[ : which type whoami id groups uname nproc arch tty printenv "
                              "locale sleep"), ANY),
        "printf": OPTIONS,
    },
)
