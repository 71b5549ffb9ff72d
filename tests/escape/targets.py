#!/usr/bin/python3
"""The escape suite's targets on the host side (tests/escape/escape_tests.sh).

targets.py DIR: listens on TCP 0.0.0.0 (a free port), the abstract Unix
socket @kiln-escape-<pid> and the Unix socket DIR/host.sock; writes
"PORT ABSTRACT-NAME" to DIR/ready once all listen, and appends one line to
DIR/reached for every connection any of them accepts (a compromised VMM
that got through). Ends by itself after 900 s, or when DIR/stop appears.

targets.py DIR JAIL-UID: also the egress proxy's socket as kilnd binds it,
DIR/vm/egress.sock (root's bind, then the jail uid's, 0600): the one new
thing the VMM may connect to; each connection is a line in
DIR/egress-accepted, not DIR/reached. So is a client share's socket,
DIR/vm/share-0.sock (DIR/share-accepted).
"""
import os
import select
import socket
import sys
import time

d = sys.argv[1]
tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
tcp.bind(("0.0.0.0", 0))
tcp.listen(16)
name = "kiln-escape-%d" % os.getpid()
abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
abstract.bind("\0" + name)
abstract.listen(16)
path = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
path.bind(os.path.join(d, "host.sock"))
path.listen(16)

def jail_socket(name):
    """DIR/vm/NAME as kilnd binds it (sandbox_jail_listen): root's bind,
    then the jail uid's, 0600."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(os.path.join(d, "vm", name))
    os.chown(os.path.join(d, "vm", name), int(sys.argv[2]), int(sys.argv[2]))
    os.chmod(os.path.join(d, "vm", name), 0o600)
    s.listen(16)
    return s


egress = share = None
if len(sys.argv) > 2:
    egress = jail_socket("egress.sock")
    share = jail_socket("share-0.sock")
with open(os.path.join(d, "ready.tmp"), "w") as f:
    f.write("%d %s\n" % (tcp.getsockname()[1], name))
os.rename(os.path.join(d, "ready.tmp"), os.path.join(d, "ready"))
socks = {tcp: "tcp", abstract: "abstract", path: "unix"}
if egress:
    socks[egress] = "egress"
    socks[share] = "share"
end = time.monotonic() + 900
while time.monotonic() < end and not os.path.exists(os.path.join(d, "stop")):
    ready, _, _ = select.select(list(socks), [], [], 0.5)
    for s in ready:
        c, peer = s.accept()
        log = {egress: "egress-accepted", share: "share-accepted"}.get(s, "reached")
        with open(os.path.join(d, log), "a") as f:
            f.write("%s %s\n" % (socks[s], peer))
        c.close()
