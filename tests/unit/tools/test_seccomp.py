"""The seccomp program, run through a classic-BPF interpreter for every system call table it knows.

The boundary tests load it into a real kernel on this machine; here each table's every path is
walked, including the ones this machine cannot run (32-bit, aarch64).
"""

from __future__ import annotations

import errno
import struct

import pytest

from acp_hermes_tools.seccomp import _ALLOW, _KILL_PROCESS, ABIS, Abi, _errno, filter_program

AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, AF_VSOCK = 1, 2, 10, 16, 17, 40
SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET = 1, 2, 3, 5
SOCK_NONBLOCK, SOCK_CLOEXEC = 0o4000, 0o2000000
NETLINK_ROUTE, NETLINK_AUDIT = 0, 9


def run_filter(program: bytes, arch: int, number: int, *args: int) -> int:
    """What the kernel would do with this system call: a minimal interpreter of the instructions used."""
    arguments = [*args, *[0] * (6 - len(args))]
    data = struct.pack("=iIQ", number, arch, 0) + struct.pack("=6Q", *arguments)
    code = [struct.unpack_from("=HBBI", program, offset) for offset in range(0, len(program), 8)]
    accumulator, pc = 0, 0
    while True:
        op, yes, no, k = code[pc]
        if op == 0x20:
            accumulator = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif op == 0x54:
            accumulator &= k
            pc += 1
        elif op == 0x15:
            pc += 1 + (yes if accumulator == k else no)
        elif op == 0x35:
            pc += 1 + (yes if accumulator >= k else no)
        elif op == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected instruction {op:#x}")


REFUSED = _errno(errno.EACCES)


@pytest.mark.parametrize("machine", sorted(ABIS))
def test_every_table_allows_only_the_sockets_commands_need(machine: str) -> None:
    abis = ABIS[machine]
    program = filter_program(abis)
    assert len(program) % 8 == 0 and len(program) // 8 < 64
    for abi in abis:
        arch = abi.audit_arch

        def socket(family: int, kind: int = SOCK_STREAM, protocol: int = 0, *, abi: Abi = abi, arch: int = arch) -> int:
            return run_filter(program, arch, abi.socket, family, kind, protocol)

        def pair(family: int, kind: int, *, abi: Abi = abi, arch: int = arch) -> int:
            return run_filter(program, arch, abi.socketpair, family, kind, 0)

        assert socket(AF_INET) == _ALLOW and socket(AF_INET6, SOCK_DGRAM) == _ALLOW  # the network namespace decides
        assert socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE) == _ALLOW  # name lookup, `ip`
        for refused in (socket(AF_UNIX), socket(AF_UNIX, SOCK_DGRAM), socket(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT),
                        socket(AF_PACKET, SOCK_RAW), socket(AF_VSOCK), socket(AF_UNIX | 1 << 32)):
            assert refused == REFUSED
        for kind in (SOCK_STREAM, SOCK_SEQPACKET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK):
            assert pair(AF_UNIX, kind) == _ALLOW  # connected from birth: no address can be reached
        for family, kind in ((AF_UNIX, SOCK_DGRAM), (AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC), (AF_INET, SOCK_STREAM)):
            assert pair(family, kind) == REFUSED  # a datagram pair could sendto() any named socket
        assert run_filter(program, arch, abi.io_uring_setup) == _errno(errno.EPERM)
        for number in abi.keyring:
            assert run_filter(program, arch, number) == _errno(errno.EPERM)
        if abi.socketcall is not None:
            assert run_filter(program, arch, abi.socketcall) == _errno(errno.EPERM)
        assert run_filter(program, arch, 1) == _ALLOW  # anything else runs
        if abi.x32_bit:
            assert run_filter(program, arch, 0x40000000 | 39) == _errno(errno.ENOSYS)
    assert run_filter(program, 0xDEADBEEF, 1) == _KILL_PROCESS  # an architecture it does not check


def test_a_program_too_long_to_jump_over_is_refused() -> None:
    many = Abi(0xC000003E, 41, 53, 425, tuple(range(1000, 1300)))
    with pytest.raises(ValueError, match="out of reach"):
        filter_program((many,))
