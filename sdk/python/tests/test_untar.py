"""download_dir's unpacking of the guest's tar.gz (kiln/_tario.py,
extract_tar), member by member, against hostile archives: links whose
targets are harmless one at a time and out of the tree together, links
and names out of it, writes through links, special files and mode bits,
and a legitimate tree with in-tree links that must come back exactly.
The rule is the C reader's (api/proto/agent_tar.c, tar_name_normalize and
tar_symlink_check); these run with and without tarfile's data filter
(Debian 12's python3 3.11.2 has none)."""

from __future__ import annotations

import gzip
import io
import os
import stat
import subprocess
import tarfile
import tempfile
import tracemalloc
import unittest
from typing import Any, Optional
from unittest import mock

from kiln import _tario, errors

DIR, SYM, LNK, REG = tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.REGTYPE


def tgz(*members: tuple) -> io.BytesIO:
    """A tar.gz of (name, type[, linkname or data[, mode]]) members, in order."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name, typ, *rest in members:
            ti = tarfile.TarInfo(name)
            ti.type = typ
            arg: Any = rest[0] if rest else b"x"
            if len(rest) > 1:
                ti.mode = rest[1]
            elif typ == DIR:
                ti.mode = 0o755
            data: Optional[io.BytesIO] = None
            if typ in (SYM, LNK):
                ti.linkname = arg
            elif typ == REG:
                ti.size = len(arg)
                data = io.BytesIO(arg)
            tar.addfile(ti, data)
    buf.seek(0)
    return buf


class Untar(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="kiln-untar-test.")
        # Deep enough for every '..' chain below to land in tmp, where
        # "secret" and "etc/passwd" wait to be reached.
        self.dest = os.path.join(self.tmp, "a", "b", "c", "dst")
        self.pre: set[str] = set()  # links the user had in dest before
        os.makedirs(os.path.join(self.tmp, "etc"))
        for p in ("secret", "etc/passwd"):
            with open(os.path.join(self.tmp, p), "w") as f:
                f.write("host's")

    def tearDown(self) -> None:
        subprocess.run(["rm", "-rf", self.tmp])

    def untar(self, *members: tuple) -> dict[str, int]:
        return _tario.extract_tar(tgz(*members), self.dest)

    def assert_contained(self, what: str) -> None:
        """Nothing was written outside dest, and no link in dest resolves
        outside it."""
        real = os.path.realpath(self.dest)
        outside = set()
        for top, dirs, files in os.walk(self.tmp):
            for n in dirs + files:
                p = os.path.join(top, n)
                if not (p + "/").startswith(os.path.join(self.dest, "")):
                    outside.add(os.path.relpath(p, self.tmp))
        self.assertEqual(outside, {"a", "a/b", "a/b/c", "etc", "etc/passwd", "secret"}, what)
        for p in ("secret", "etc/passwd"):
            with open(os.path.join(self.tmp, p)) as f:
                self.assertEqual(f.read(), "host's", what)
        if not os.path.isdir(self.dest):
            return
        for top, dirs, files in os.walk(self.dest):
            for n in dirs + files:
                p = os.path.join(top, n)
                if os.path.islink(p) and os.path.relpath(p, self.dest) not in self.pre:
                    r = os.path.realpath(p)
                    self.assertTrue(r == real or r.startswith(real + "/"),
                                    f"{what}: {os.path.relpath(p, self.dest)} -> {os.readlink(p)} leads to {r}")

    def refused(self, what: str, *members: tuple, why: str = "") -> None:
        with self.assertRaisesRegex(errors.UnsafePathError, why, msg=what):
            self.untar(*members)
        self.assert_contained(what)

    def test_link_chain_out_of_the_tree(self) -> None:
        # Each target is inside the tree by its text and by the tree as it
        # stands when it is checked; once `x -> .` exists, x/x/.. is dst/..
        self.refused("chain", ("esc", SYM, "x/x/../../etc/passwd"), ("x", SYM, "."),
                     why="'..' after a name")
        self.refused("issue's chain", ("esc", SYM, "x/x/../../../../etc/passwd"), ("x", SYM, "."),
                     why="'..' after a name")
        self.refused("chain in a directory", ("d", DIR), ("d/esc", SYM, "y/../../secret"), ("d/y", SYM, ".."))
        self.refused("chain, deeper", ("esc", SYM, "x/x/x/x/../../../../../secret"), ("x", SYM, "."))

    def test_links_out_of_the_tree(self) -> None:
        self.refused("absolute", ("a", SYM, "/etc"), ("a/passwd", REG, b"pwned"), why="absolute")
        self.refused("parent", ("a", SYM, ".."), ("a/x", REG, b"pwned"), why="'..' would leave")
        self.refused("deeper than its directory", ("d", DIR), ("d/l", SYM, "../../secret"), why="'..' would leave")
        self.refused("climb after a name", ("d", DIR), ("d/l", SYM, "../d/../x"), why="'..' after a name")
        with self.assertRaisesRegex(errors.KilnError, "empty target"):
            self.untar(("l", SYM, ""))
        self.refused("hard link out", ("h", LNK, "../secret"))
        self.refused("hard link absolute", ("h", LNK, "/etc/passwd"))
        self.refused("hard link through an in-tree link", ("l", SYM, "d"), ("d", DIR), ("d/f", REG, b"f"),
                     ("h", LNK, "l/f"), why="symbolic link")
        # A hard link to a symlink is a symlink at another depth:
        # d/e/l -> ../../f is inside, h -> ../../f at the top is not.
        self.refused("hard link to a symlink", ("d/e/l", SYM, "../../secret-not"), ("h", LNK, "d/e/l"),
                     why="symbolic link")
        self.refused("hard link to a directory", ("d", DIR), ("h", LNK, "d"), why="directory")
        self.refused("hard link to a missing member", ("h", LNK, "nothing"), why="earlier")

    def test_names_out_of_the_tree(self) -> None:
        self.refused("dotdot", ("../x", REG, b"pwned"), why="'..'")
        self.refused("dotdot inside", ("d/../../x", REG, b"pwned"), why="'..'")
        self.refused("absolute", (os.path.join(self.tmp, "x"), REG, b"pwned"), why="absolute")
        self.refused("through an archive link", ("l", SYM, "."), ("l/f", REG, b"x"), why="symbolic link")
        os.makedirs(self.dest, exist_ok=True)
        os.symlink(self.tmp, os.path.join(self.dest, "pre"))
        self.pre.add("pre")
        self.refused("through a link already there", ("pre/x", REG, b"pwned"), why="symbolic link")
        self.refused("dir through a link already there", ("pre/d", DIR), why="symbolic link")
        self.refused("link already there as a directory", ("pre", DIR), why="not a directory")

    def test_a_link_in_the_way_is_replaced_not_followed(self) -> None:
        os.makedirs(self.dest)
        os.symlink(os.path.join(self.tmp, "secret"), os.path.join(self.dest, "f"))
        self.assertEqual(self.untar(("f", REG, b"mine"))["files"], 1)
        self.assertFalse(os.path.islink(os.path.join(self.dest, "f")))
        self.assert_contained("file over a link")

    def test_special_files_and_mode_bits(self) -> None:
        counts = self.untar(("fifo", tarfile.FIFOTYPE), ("chr", tarfile.CHRTYPE), ("blk", tarfile.BLKTYPE),
                            ("suid", REG, b"#!/bin/sh\n", 0o6755), ("sgid", DIR, b"", 0o3775),
                            ("sgid/f", REG, b"x", 0o2640))
        self.assertEqual((counts["skipped"], counts["files"], counts["dirs"]), (3, 2, 1))
        self.assertEqual(sorted(os.listdir(self.dest)), ["sgid", "suid"])
        umask = os.umask(0)
        os.umask(umask)
        self.assertEqual(stat.S_IMODE(os.lstat(os.path.join(self.dest, "suid")).st_mode), 0o755 & ~umask)
        self.assertEqual(stat.S_IMODE(os.lstat(os.path.join(self.dest, "sgid")).st_mode) & 0o7000, 0)
        self.assertEqual(stat.S_IMODE(os.lstat(os.path.join(self.dest, "sgid/f")).st_mode), 0o640 & ~umask)

    def test_legitimate_tree_comes_back_exactly(self) -> None:
        tree = [
            ("./", DIR), ("usr", DIR), ("usr/bin", DIR), ("usr/lib", DIR), ("lib", DIR), ("bin", DIR),
            ("usr/bin/dash", REG, b"\x7fELF dash", 0o755),
            ("lib/libz.so.1", REG, b"\x7fELF libz", 0o644),
            ("lib/libz.so", SYM, "libz.so.1"),               # same directory
            ("bin/sh", SYM, "../usr/bin/dash"),              # a leading '..' within its depth
            ("usr/lib/libz.so", SYM, "../../lib/./libz.so"),  # climbs exactly to the top
            ("lib64", SYM, "lib"), ("here", SYM, "."), ("usr/bin/self", SYM, "./dash"),
            ("dangling", SYM, "not/yet/there"),
            ("usr/bin/sh", LNK, "usr/bin/dash"),
            ("usr/bin/dash", LNK, "usr/bin/dash"),           # a link to itself is already so
            ("usr/bin/dash2", LNK, "./usr//bin/dash"),
        ]
        counts = self.untar(*tree)
        self.assertEqual(counts, {"files": 2, "dirs": 5, "symlinks": 7, "hardlinks": 3, "skipped": 0})
        got = {}
        for top, dirs, files in os.walk(self.dest):
            for n in dirs + files:
                p = os.path.join(top, n)
                st = os.lstat(p)
                rel = os.path.relpath(p, self.dest)
                if stat.S_ISLNK(st.st_mode):
                    got[rel] = ("->", os.readlink(p))
                elif stat.S_ISDIR(st.st_mode):
                    got[rel] = ("dir",)
                else:
                    with open(p, "rb") as f:
                        got[rel] = (f.read(), oct(stat.S_IMODE(st.st_mode)), st.st_ino)
        ino = os.lstat(os.path.join(self.dest, "usr/bin/dash")).st_ino
        umask = os.umask(0o22)
        os.umask(umask)
        exe, rw = oct(0o755 & ~umask), oct(0o644 & ~umask)
        self.assertEqual(got, {
            "usr": ("dir",), "usr/bin": ("dir",), "usr/lib": ("dir",), "lib": ("dir",), "bin": ("dir",),
            "usr/bin/dash": (b"\x7fELF dash", exe, ino), "usr/bin/sh": (b"\x7fELF dash", exe, ino),
            "usr/bin/dash2": (b"\x7fELF dash", exe, ino),
            "lib/libz.so.1": (b"\x7fELF libz", rw, os.lstat(os.path.join(self.dest, "lib/libz.so.1")).st_ino),
            "lib/libz.so": ("->", "libz.so.1"), "bin/sh": ("->", "../usr/bin/dash"),
            "usr/lib/libz.so": ("->", "../../lib/./libz.so"), "lib64": ("->", "lib"), "here": ("->", "."),
            "usr/bin/self": ("->", "./dash"), "dangling": ("->", "not/yet/there"),
        })
        with open(os.path.join(self.dest, "bin/sh"), "rb") as f:
            self.assertEqual(f.read(), b"\x7fELF dash")
        self.assert_contained("legitimate tree")

    def test_without_tarfiles_data_filter(self) -> None:
        # Debian 12's python3 (3.11.2) has no tarfile.data_filter: the
        # rule is kiln's own and holds without it.
        with mock.patch.object(_tario, "_data_filter", None):
            self.refused("chain, no data filter", ("esc", SYM, "x/x/../../etc/passwd"), ("x", SYM, "."))
            self.refused("hard link out, no data filter", ("h", LNK, "../secret"))
            self.assertEqual(self.untar(("d", DIR), ("d/f", REG, b"x"), ("d/l", SYM, "../d/f"))["symlinks"], 1)
        self.assert_contained("no data filter")

    def test_link_out_through_a_link_already_there(self) -> None:
        # The link's text keeps to the rule; the user's own link in the
        # destination leads it out. Refused too (with or without the filter).
        os.makedirs(self.dest)
        os.symlink(self.tmp, os.path.join(self.dest, "pre"))
        self.pre.add("pre")
        self.refused("out through a link already there", ("l", SYM, "pre/secret"), why="leaves")
        with mock.patch.object(_tario, "_data_filter", None):
            self.refused("out through a link already there", ("l", SYM, "pre/secret"), why="leaves")

    def test_data_filter_is_a_second_layer(self) -> None:
        if not hasattr(tarfile, "data_filter"):  # (a skip would count as a failure in unit_test)
            self.assertIsNone(_tario._data_filter)
            return
        seen = []

        def spy(m: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
            seen.append(m.name)
            return tarfile.data_filter(m, dest)  # type: ignore[attr-defined,no-any-return]
        with mock.patch.object(_tario, "_data_filter", spy):
            self.untar(("d", DIR), ("d/f", REG, b"x"), ("d/l", SYM, "f"), ("h", LNK, "d/f"), ("p", tarfile.FIFOTYPE))
        self.assertEqual(seen, ["d", "d/f", "d/l", "h"])

        def refuse(m: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
            raise tarfile.AbsoluteLinkError(m)  # type: ignore[attr-defined]
        with mock.patch.object(_tario, "_data_filter", refuse):
            self.refused("refused by the filter", ("g", REG, b"x"), why="data filter")
        self.assertFalse(os.path.exists(os.path.join(self.dest, "g")))


    def test_sparse_members_are_refused(self) -> None:
        # GNU sparse maps in pax headers, versions 0.0 and 0.1 (parsed by
        # tarfile from the bounded header, then refused) and 1.0 (refused
        # before its map is read from the data).
        def pax(records: dict[str, str]) -> bytes:
            ti = tarfile.TarInfo("f")
            ti.type, ti.pax_headers, ti.size = REG, records, 0
            return ti.tobuf(format=tarfile.PAX_FORMAT)
        for version, records in {
            "0.0": {"GNU.sparse.size": "10", "GNU.sparse.numblocks": "1", "GNU.sparse.offset": "0",
                    "GNU.sparse.numbytes": "0"},
            "0.1": {"GNU.sparse.size": "10", "GNU.sparse.map": "0,0"},
            "1.0": {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.realsize": "10"},
        }.items():
            blob = gzip.compress(pax(records) + bytes(1024))
            with self.assertRaisesRegex(errors.KilnError, "sparse member", msg=version):
                _tario.extract_tar(io.BytesIO(blob), self.dest)
            self.assertFalse(os.path.exists(os.path.join(self.dest, "f")), version)

    def test_a_context_leaves_out_what_kilnd_would_refuse(self) -> None:
        # Packing follows the same rule: kilnd refuses a context with a
        # '..' after a name, so the link is left out with a warning.
        ctx = os.path.join(self.tmp, "ctx")
        os.makedirs(os.path.join(ctx, "d"))
        os.symlink("d/../f", os.path.join(ctx, "after_name"))
        os.symlink("../f", os.path.join(ctx, "d", "up"))
        buf = io.BytesIO()
        skipped = _tario.pack_context(ctx, buf)
        self.assertEqual(skipped, ["skipped symlink 'after_name' -> 'd/../f': '..' after a name, which kilnd "
                                   "refuses in a context (put every '..' first)"])
        buf.seek(0)
        with tarfile.open(fileobj=buf, mode="r:gz") as tar:
            self.assertEqual(sorted(tar.getnames()), ["d", "d/up"])


    def test_memory_does_not_grow_with_the_members(self) -> None:
        # A few KiB of gzip can hold thousands of empty headers; tarfile
        # would keep each one read (tar.members). 8000 fifos cost no more
        # than 800 (each kept member was ~500 bytes: 3.5 MiB more).
        def fifos(n: int) -> bytes:
            # Names of random bytes: the gzip does not inflate tenfold per
            # read, as a run of equal headers would (tarfile inflates a
            # read's worth at once).
            out = []
            for _ in range(n):
                ti = tarfile.TarInfo(os.urandom(30).hex())
                ti.type = tarfile.FIFOTYPE
                out.append(ti.tobuf(format=tarfile.USTAR_FORMAT))
            return b"".join(out) + bytes(1024)
        peaks = []
        for n in (800, 8000):
            blob = gzip.compress(fifos(n), 1)
            tracemalloc.start()
            try:
                self.assertEqual(_tario.extract_tar(io.BytesIO(blob), self.dest)["skipped"], n)
                peaks.append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
        self.assertLess(peaks[1] - peaks[0], 512 << 10, peaks)


if __name__ == "__main__":
    unittest.main()
