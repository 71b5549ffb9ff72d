#!/usr/bin/env python3
"""A stand-in for kilnd relaying a client-served share (kiln-vmm
--share-remote): serves an in-memory tree over the share line protocol
(docs/architecture.md, "Client-served shares") on a Unix socket.

    fs_remote_server.py SOCK serve DUMP   answer every request; after each
                                          change, write the tree to DUMP
                                          as JSON (path -> text or "<dir>")
    fs_remote_server.py SOCK silent DUMP  read requests, never answer
                                          (DUMP: one line per request)
"""
import base64
import json
import os
import socket
import sys

sock_path, mode, dump = sys.argv[1], sys.argv[2], sys.argv[3]
tree = {
    "/": None,
    "/hello.txt": b"hello from the client\n",
    "/dir": None,
    "/dir/a.txt": b"a\n",
}


def parent(p):
    return p.rsplit("/", 1)[0] or "/"


def children(p):
    pre = p.rstrip("/") + "/"
    return sorted(k[len(pre):] for k in tree if k != p and k.startswith(pre) and "/" not in k[len(pre):])


def save():
    out = {k: ("<dir>" if v is None else v.decode(errors="replace")) for k, v in tree.items()}
    with open(dump + ".tmp", "w") as f:
        json.dump(out, f, sort_keys=True)
    os.rename(dump + ".tmp", dump)


def op(r):
    p, o = r["path"], r["op"]
    if o == "stat":
        if p not in tree:
            return {"error": "ENOENT"}
        v = tree[p]
        return {"type": "dir", "size": 0} if v is None else {"type": "file", "size": len(v), "mtime": 1700000000}
    if o == "readdir":
        if p not in tree or tree[p] is not None:
            return {"error": "ENOTDIR"}
        return {"entries": [{"name": n, "type": "dir" if tree[(p.rstrip("/") + "/" + n)] is None else "file"}
                            for n in children(p)]}
    if o == "read":
        v = tree.get(p)
        if v is None:
            return {"error": "EISDIR" if p in tree else "ENOENT"}
        return {"data": base64.b64encode(v[r["offset"]:r["offset"] + r["size"]]).decode()}
    if parent(p) not in tree:
        return {"error": "ENOENT"}
    if o == "write":
        v = tree.get(p)
        if v is None:
            return {"error": "ENOENT"}
        d = base64.b64decode(r["data"])
        off = r["offset"]
        v = v.ljust(off, b"\0")
        tree[p] = v[:off] + d + v[off + len(d):]
        return {"size": len(d)}
    if o in ("create", "mkdir"):
        if p in tree:
            return {"error": "EEXIST"}
        tree[p] = b"" if o == "create" else None
        return {}
    if o == "unlink":
        if tree.get(p, 0) is None:
            return {"error": "EISDIR"}
        if p not in tree:
            return {"error": "ENOENT"}
        del tree[p]
        return {}
    if o == "rmdir":
        if p not in tree:
            return {"error": "ENOENT"}
        if children(p):
            return {"error": "ENOTEMPTY"}
        del tree[p]
        return {}
    if o == "truncate":
        v = tree.get(p)
        if v is None:
            return {"error": "EISDIR" if p in tree else "ENOENT"}
        tree[p] = v[:r["size"]].ljust(r["size"], b"\0")
        return {}
    if o == "rename":
        to = r["to"]
        if p not in tree:
            return {"error": "ENOENT"}
        for k in sorted(tree):
            if k == p or k.startswith(p + "/"):
                tree[to + k[len(p):]] = tree.pop(k)
        return {}
    return {"error": "ENOSYS"}


def serve(conn):
    buf = b""
    while True:
        d = conn.recv(65536)
        if not d:
            return
        buf += d
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            r = json.loads(line)
            if mode == "silent":
                with open(dump, "a") as f:
                    f.write(r["op"] + " " + r["path"] + "\n")
                continue
            rep = op(r)
            rep["id"] = r["id"]
            conn.sendall(json.dumps(rep).encode() + b"\n")
            if r["op"] not in ("stat", "readdir", "read"):
                save()


s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sock_path)
s.listen(4)
if mode == "serve":
    save()
while True:
    c, _ = s.accept()
    try:
        serve(c)
    finally:
        c.close()
