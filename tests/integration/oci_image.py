#!/usr/bin/env python3
"""oci_image.py: image archives for the OCI import test and bench (stdlib only).

    oci_image.py oci OUT.tar              the test image: two layers, a whiteout,
                                          an opaque directory, links, an owned file
    oci_image.py docker OUT.tar           the same image as `docker save` writes it
    oci_image.py dotdot OUT.tar           hostile: a "../" member
    oci_image.py symlink-escape OUT.tar   hostile: a symlink leaving the tree
    oci_image.py through-symlink OUT.tar  hostile: a member through a symlink
    oci_image.py random OUT.tar MIB       busybox + MIB MiB of random files (bench)

Layer 1 (gzip): bin/busybox (the host's busybox-static) and bin/sh, etc/gone.txt,
opq/old.txt, data/owned.txt (1000:1000, 0640) and data/hard (a hard link to it).
Layer 2 (plain tar): etc/.wh.gone.txt, opq/.wh..wh..opq, opq/new.txt,
link -> data/owned.txt, srv/work/. Config: Env GREETING=hello, WorkingDir /srv/work.
"""
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile

BUSYBOX = "/bin/busybox"


def ti(name, kind=tarfile.REGTYPE, mode=0o644, uid=0, gid=0, size=0, link=""):
    t = tarfile.TarInfo(name)
    t.type, t.mode, t.uid, t.gid, t.size, t.linkname, t.mtime = kind, mode, uid, gid, size, link, 1700000000
    return t


def layer(members):
    """members: (TarInfo, bytes or None) -> tar bytes"""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def f(name, data, mode=0o644, uid=0, gid=0):
    return ti(name, mode=mode, uid=uid, gid=gid), data


def d(name, mode=0o755, uid=0, gid=0):
    return ti(name, tarfile.DIRTYPE, mode, uid, gid), None


def busybox_members():
    with open(BUSYBOX, "rb") as fh:
        bb = fh.read()
    return [d("bin/"), f("bin/busybox", bb, 0o755), (ti("bin/sh", tarfile.SYMTYPE, 0o777, link="busybox"), None)]


def test_layers():
    l1 = layer(busybox_members() + [
        d("etc/"), f("etc/gone.txt", b"layer 1\n"),
        d("opq/"), f("opq/old.txt", b"old\n"),
        d("data/"), f("data/owned.txt", b"owned by user\n", 0o640, 1000, 1000),
        (ti("data/hard", tarfile.LNKTYPE, link="data/owned.txt"), None),
    ])
    l2 = layer([
        f("etc/.wh.gone.txt", b""),
        d("opq/"), f("opq/.wh..wh..opq", b""), f("opq/new.txt", b"new\n"),
        (ti("link", tarfile.SYMTYPE, 0o777, link="data/owned.txt"), None),
        d("srv/"), d("srv/work/"),
    ])
    return [gzip.compress(l1, mtime=0), l2]


def config(layers_plain):
    return json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Env": ["PATH=/usr/bin:/bin", "GREETING=hello"], "WorkingDir": "/srv/work",
                   "Cmd": ["/bin/sh"]},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(x).hexdigest() for x in layers_plain]},
    }).encode()


def sha(b):
    return hashlib.sha256(b).hexdigest()


def add(tf, name, data):
    tf.addfile(ti(name, size=len(data)), io.BytesIO(data))


def write_oci(out, blobs_layers, plain=None):
    plain = plain or [gzip.decompress(b) if b[:2] == b"\x1f\x8b" else b for b in blobs_layers]
    cfg = config(plain)
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": "sha256:" + sha(cfg),
                   "size": len(cfg)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar" + ("+gzip" if b[:2] == b"\x1f\x8b" else ""),
                    "digest": "sha256:" + sha(b), "size": len(b)} for b in blobs_layers],
    }).encode()
    index = json.dumps({"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + sha(manifest),
         "size": len(manifest)}]}).encode()
    with tarfile.open(out, "w") as tf:
        add(tf, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        add(tf, "index.json", index)
        for b in [cfg, manifest] + list(blobs_layers):
            add(tf, "blobs/sha256/" + sha(b), b)


def write_docker(out, blobs_layers):
    plain = [gzip.decompress(b) if b[:2] == b"\x1f\x8b" else b for b in blobs_layers]
    cfg = config(plain)
    names = ["%s/layer.tar" % sha(p) for p in plain]
    manifest = json.dumps([{"Config": sha(cfg) + ".json", "RepoTags": ["kiln-test:latest"], "Layers": names}]).encode()
    with tarfile.open(out, "w") as tf:
        add(tf, "manifest.json", manifest)
        add(tf, sha(cfg) + ".json", cfg)
        for n, p in zip(names, plain):
            add(tf, n, p)


def main():
    kind, out = sys.argv[1], sys.argv[2]
    if kind == "oci":
        write_oci(out, test_layers())
    elif kind == "docker":
        write_docker(out, test_layers())
    elif kind == "dotdot":
        write_oci(out, [layer(busybox_members() + [f("../etc/x", b"escape\n")])])
    elif kind == "symlink-escape":
        write_oci(out, [layer([(ti("up", tarfile.SYMTYPE, 0o777, link="../../.."), None)])])
    elif kind == "through-symlink":
        write_oci(out, [layer([(ti("etc2", tarfile.SYMTYPE, 0o777, link="/etc"), None), f("etc2/passwd", b"x\n")])])
    elif kind == "random":
        mib = int(sys.argv[3])
        per = 4 << 20
        members = [d("data/")]
        for i in range(max(1, (mib << 20) // per)):
            members.append(f("data/blob%04d" % i, os.urandom(per)))
        write_oci(out, [gzip.compress(layer(busybox_members()), mtime=0), gzip.compress(layer(members), 1, mtime=0)])
    else:
        sys.exit("oci_image.py: unknown kind '%s' (see --help in the file's docstring)" % kind)


if __name__ == "__main__":
    main()
