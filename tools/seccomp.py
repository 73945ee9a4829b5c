"""The seccomp filter bubblewrap loads into every sandboxed command: no host sockets, no way around it.

``--unshare-net`` takes away the network, but not sockets that live in the file system: through the
read-only ``/`` a command could still reach the user's ssh-agent, the D-Bus session bus
(``systemd-run --user`` is a full escape), ``/var/run/docker.sock`` (root), ``/dev/log`` or X11.
Mounts cannot hide every such path, so the filter allows only the sockets commands need and refuses
the rest with ``EACCES``:

- ``socket`` for the internet families (``AF_INET``, ``AF_INET6``; the network namespace decides
  whether they reach anything) and ``AF_NETLINK`` with the routing protocol only (what name lookup
  and ``ip`` read). Not ``AF_UNIX``, and no other family (``AF_VSOCK`` reaches a VM's host).
- ``socketpair`` only for an ``AF_UNIX`` stream or sequenced-packet pair: programs that talk to
  their own children keep working, and such a socket is connected from birth, so ``connect`` fails
  and a ``sendto``/``sendmsg`` address is refused or ignored by the kernel. A datagram pair is
  refused: it could ``sendto`` any named or abstract datagram socket.

So there is no way to a Unix socket outside, whatever call, address or name is tried afterwards.
Around those rules: ``io_uring_setup`` is refused (io_uring can create sockets without the calls
the filter watches), the kernel keyring calls are refused (a session keyring may hold Kerberos
tickets and other secrets), and so are system calls of an ABI the filter does not check (x32 on
x86-64; a 32-bit process gets the same checks through its own table, with ``socketcall`` refused
since its arguments are out of a filter's reach).

Hand-written classic BPF, on purpose: the official libseccomp Python bindings are not on PyPI,
the ctypes wrappers that are have not been maintained for years, and the program is a few dozen
instructions whose every path the unit tests run through a real kernel. The program is written
once per process to a private file, and bubblewrap gets it as a descriptor (``--seccomp``): opened
by acp-hermes for a command it spawns itself, by a one-line shell in front of bubblewrap
(``LAUNCHER``) in the command line an editor's terminal runs.
"""

from __future__ import annotations

import errno
import functools
import os
import platform
import struct
from pathlib import Path

from acp_hermes_memory.values import value
from acp_hermes_tools import temp_dirs

# struct seccomp_data: the system call number, the audit architecture, then six 64-bit arguments.
_NR, _ARCH = 0, 4
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K, _AND_K = 0x20, 0x15, 0x35, 0x06, 0x54
_ALLOW = 0x7FFF0000
_KILL_PROCESS = 0x80000000
_AF_UNIX, _AF_INET, _AF_INET6, _AF_NETLINK = 1, 2, 10, 16
_SOCK_STREAM, _SOCK_SEQPACKET, _SOCK_TYPE_MASK = 1, 5, 0xF  # the type argument also carries flags
_NETLINK_ROUTE = 0
_X32_BIT = 0x40000000


def _argument(index: int) -> int:
    """The offset of the low half of ``args[index]`` (little-endian machines only)."""
    return 16 + 8 * index


def _errno(number: int) -> int:
    return 0x00050000 | number


@value
class Abi:
    """One system call table the filter checks: its audit architecture and the numbers it needs."""

    audit_arch: int
    socket: int
    socketpair: int
    io_uring_setup: int
    keyring: tuple[int, ...]  # add_key, request_key, keyctl
    socketcall: int | None = None  # i386 multiplexes sockets through one call
    x32_bit: bool = False  # x86-64 also accepts x32 calls, marked by bit 30 of the number


_X86_64 = Abi(0xC000003E, 41, 53, 425, (248, 249, 250), x32_bit=True)
_I386 = Abi(0x40000003, 359, 360, 425, (286, 287, 288), socketcall=102)
_AARCH64 = Abi(0xC00000B7, 198, 199, 425, (217, 218, 219))
_ARM = Abi(0x40000028, 281, 288, 425, (309, 310, 311))
# The machine's own table first, then the compatibility table its kernel also runs.
ABIS: dict[str, tuple[Abi, ...]] = {"x86_64": (_X86_64, _I386), "aarch64": (_AARCH64, _ARM)}


class _Program:
    """Classic BPF with forward jumps to named labels, resolved when the program is packed."""

    def __init__(self) -> None:
        self._code: list[tuple[int, str | int, str | int, int]] = []
        self._labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self._labels[name] = len(self._code)

    def load(self, offset: int) -> None:
        self._code.append((_LD_W_ABS, 0, 0, offset))

    def jump(self, code: int, k: int, yes: str | int, no: str | int) -> None:
        self._code.append((code, yes, no, k))

    def mask(self, k: int) -> None:
        self._code.append((_AND_K, 0, 0, k))

    def ret(self, action: int) -> None:
        self._code.append((_RET_K, 0, 0, action))

    def pack(self) -> bytes:
        packed = bytearray()
        for index, (code, yes, no, k) in enumerate(self._code):
            packed += struct.pack("=HBBI", code, self._offset(index, yes), self._offset(index, no), k)
        return bytes(packed)

    def _offset(self, index: int, target: str | int) -> int:
        if isinstance(target, int):
            return target
        offset = self._labels[target] - index - 1
        if not 0 <= offset <= 255:
            raise ValueError(f"jump to {target} out of reach")
        return offset


def filter_program(abis: tuple[Abi, ...]) -> bytes:
    """The filter for a machine whose kernel runs ``abis``; any other architecture is killed."""
    program = _Program()
    program.load(_ARCH)
    for index, abi in enumerate(abis):
        program.jump(_JEQ_K, abi.audit_arch, f"abi{index}", 0)
    program.ret(_KILL_PROCESS)
    for index, abi in enumerate(abis):
        refused = [abi.io_uring_setup, *abi.keyring, *([abi.socketcall] if abi.socketcall is not None else [])]
        program.label(f"abi{index}")
        program.load(_NR)
        if abi.x32_bit:
            program.jump(_JGE_K, _X32_BIT, "deny_nosys", 0)
        program.jump(_JEQ_K, abi.socket, "socket", 0)
        program.jump(_JEQ_K, abi.socketpair, "socketpair", 0)
        for number in refused:
            program.jump(_JEQ_K, number, "deny_perm", 0)
        program.ret(_ALLOW)
    # The argument checks are the same for every table: its arguments sit at the same offsets.
    program.label("socket")  # socket(family, type, protocol): the families commands need
    program.load(_argument(0))
    program.jump(_JEQ_K, _AF_INET, "allow", 0)
    program.jump(_JEQ_K, _AF_INET6, "allow", 0)
    program.jump(_JEQ_K, _AF_NETLINK, 0, "deny_access")
    program.load(_argument(2))
    program.jump(_JEQ_K, _NETLINK_ROUTE, "allow", "deny_access")
    program.label("socketpair")  # socketpair(family, type, …): an AF_UNIX pair connected from birth
    program.load(_argument(0))
    program.jump(_JEQ_K, _AF_UNIX, 0, "deny_access")
    program.load(_argument(1))
    program.mask(_SOCK_TYPE_MASK)
    program.jump(_JEQ_K, _SOCK_STREAM, "allow", 0)
    program.jump(_JEQ_K, _SOCK_SEQPACKET, "allow", "deny_access")
    program.label("allow")
    program.ret(_ALLOW)
    program.label("deny_access")
    program.ret(_errno(errno.EACCES))
    program.label("deny_perm")
    program.ret(_errno(errno.EPERM))
    program.label("deny_nosys")
    program.ret(_errno(errno.ENOSYS))
    return program.pack()


def machine_abis() -> tuple[Abi, ...] | None:
    """The system call tables of this machine, or None where the filter does not know them."""
    if platform.system() != "Linux" or struct.pack("=H", 1) != b"\x01\x00":
        return None
    return ABIS.get(platform.machine().lower())


@functools.cache
def filter_file() -> Path | None:
    """This machine's filter, written once per process to a private file (None: no filter here).

    The file's directory is hidden inside the sandbox like the agent's own home, so no sandboxed
    command can rewrite the filter the next one loads.
    """
    abis = machine_abis()
    if abis is None:
        return None
    directory = temp_dirs.make("seccomp")  # named after this process: removed at exit, or by a later start
    path = directory / "filter.bpf"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o400)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(filter_program(abis))
    return path


# In an editor terminal's command line: opens the filter on descriptor 3 and starts bubblewrap; the shell
# is replaced by bubblewrap (exec), so signals and the exit status pass straight through.
LAUNCHER = 'exec 3<"$1" || exit 125; shift; exec "$@"'
