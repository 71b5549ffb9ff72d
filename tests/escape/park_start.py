#!/usr/bin/env python3
"""Run a program the way kilnd runs a zygote's kiln-vmm, for the escape suite.

    park_start.py PROGRAM ARG...

PROGRAM starts first, alone, as `PROGRAM --park FD` and pid 1 of a new pid
namespace (unshare, as a zygote's keeper clones it); then its whole command
line, PROGRAM ARG..., goes to it as one SOCK_SEQPACKET message
(vmm/kiln-vmm/park.h). The value after each `--share` that names a
descriptor of this process (`fd=N:...`) is renumbered to the one the
program receives it as, and the descriptor is sent with the message, as
kilnd sends a sandbox's shares. Exits with PROGRAM's status; its stdout and
stderr are this process's.
"""
import array
import os
import socket
import subprocess
import sys

PARK_FD_BASE = 100  # vmm/kiln-vmm/park.h


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    prog, args = sys.argv[1], sys.argv[2:]
    line, fds = [prog], []
    for i, a in enumerate(args):
        if i > 0 and args[i - 1] == "--share" and a.startswith("fd="):
            num, _, rest = a[3:].partition(":")
            fds.append(int(num))
            a = f"fd={PARK_FD_BASE + len(fds) - 1}:{rest}"
        line.append(a)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    child = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", prog, "--park",
                              str(theirs.fileno())], pass_fds=[theirs.fileno()])
    theirs.close()
    for fd in fds:
        os.set_inheritable(fd, False)
    msg = b"".join(a.encode() + b"\0" for a in line)
    ours.sendmsg([msg], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else [])
    ours.close()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
