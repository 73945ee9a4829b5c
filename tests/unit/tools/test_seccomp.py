"""The seccomp program, run through a classic-BPF interpreter for every system call table it knows.

The boundary tests load it into a real kernel on this machine; here each table's every path is
walked, including the ones this machine cannot run (32-bit, aarch64).
"""

from __future__ import annotations

import errno
import struct

import pytest

from acp_hermes_tools.seccomp import _AF_UNIX, _ALLOW, _KILL_PROCESS, ABIS, Abi, _errno, filter_program


def run_filter(program: bytes, arch: int, number: int, arg0: int = 0) -> int:
    """What the kernel would do with this system call: a minimal interpreter of the instructions used."""
    data = struct.pack("=iI", number, arch) + struct.pack("=Q", 0) + struct.pack("=Q", arg0) + bytes(40)
    code = [struct.unpack_from("=HBBI", program, offset) for offset in range(0, len(program), 8)]
    accumulator, pc = 0, 0
    while True:
        op, yes, no, k = code[pc]
        if op == 0x20:
            accumulator = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif op == 0x15:
            pc += 1 + (yes if accumulator == k else no)
        elif op == 0x35:
            pc += 1 + (yes if accumulator >= k else no)
        elif op == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected instruction {op:#x}")


@pytest.mark.parametrize("machine", sorted(ABIS))
def test_every_table_refuses_unix_sockets_and_the_ways_around_them(machine: str) -> None:
    abis = ABIS[machine]
    program = filter_program(abis)
    assert len(program) % 8 == 0 and len(program) // 8 < 64
    for abi in abis:
        arch = abi.audit_arch
        assert run_filter(program, arch, abi.socket, _AF_UNIX) == _errno(errno.EACCES)
        assert run_filter(program, arch, abi.socket, 2) == _ALLOW  # AF_INET: the network namespace decides
        assert run_filter(program, arch, abi.socket, 10) == _ALLOW  # AF_INET6
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
    many = Abi(0xC000003E, 41, 425, tuple(range(1000, 1300)))
    with pytest.raises(ValueError, match="out of reach"):
        filter_program((many,))
