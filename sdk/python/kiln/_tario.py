"""Directories as tar.gz streams for the archive endpoints, in bounded
memory: a local tree packed while it is sent, an answer unpacked while it
is read. The archive that comes back is the guest's, so it is hostile
input: tarfile only parses it (bounded: _BoundedTarInfo), and each member
is checked by the C reader's rule (api/proto/agent_tar.c) and then made
here relative to directory descriptors opened with O_NOFOLLOW: no
absolute names, no ``..``, nothing written through a symbolic link, no
link whose target is absolute or has a ``..`` after a name or more
``..`` than its directory is deep, no hard link to anything but a file
of the tree, no devices or fifos (skipped), no setuid/setgid bits.
"""

from __future__ import annotations

import errno
import os
import queue
import stat
import tarfile
import threading
import zlib
from typing import IO, Any, Callable, Iterator, Optional

from .errors import KilnError, UnsafePathError

BLOCK = 64 * 1024
_DONE = object()


class _QueueWriter:
    """A write-only file for tarfile whose writes go into a bounded queue."""

    def __init__(self, q: "queue.Queue[Any]", stop: threading.Event) -> None:
        self._q = q
        self._stop = stop
        self._buf = bytearray()

    def write(self, data: bytes) -> int:
        self._buf += data
        if len(self._buf) >= BLOCK:
            self.flush()
        return len(data)

    def flush(self) -> None:
        if self._buf:
            self._put(bytes(self._buf))
            self._buf.clear()

    def _put(self, item: Any) -> None:
        while True:
            if self._stop.is_set():
                raise _Stopped()
            try:
                self._q.put(item, timeout=0.2)
                return
            except queue.Full:
                continue


class _Stopped(Exception):
    pass


def tar_chunks(local_dir: str) -> Iterator[bytes]:
    """``local_dir``'s contents (member names relative, as kilnd's own
    archives) as tar.gz blocks, made in a thread while they are consumed:
    at most a few blocks are held at once. Closing the iterator stops the
    thread."""
    if not os.path.isdir(local_dir):
        raise KilnError(f"upload_dir: {local_dir} is not a directory")
    q: "queue.Queue[Any]" = queue.Queue(maxsize=4)
    stop = threading.Event()
    errors: list[BaseException] = []

    def produce() -> None:
        w = _QueueWriter(q, stop)
        try:
            with tarfile.open(fileobj=w, mode="w|gz", format=tarfile.PAX_FORMAT) as tar:  # type: ignore[arg-type]
                for name in sorted(os.listdir(local_dir)):
                    tar.add(os.path.join(local_dir, name), arcname=name, recursive=True)
            w.flush()
        except _Stopped:
            return
        except BaseException as e:  # handed to the consumer
            errors.append(e)
        try:
            w._put(_DONE)
        except _Stopped:
            pass

    th = threading.Thread(target=produce, name="kiln-tar", daemon=True)
    th.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                break
            yield item
        if errors:
            e = errors[0]
            raise KilnError(f"upload_dir: packing {local_dir}: {e}") from e
    finally:
        stop.set()
        th.join(timeout=5)


# tarfile reads an extended header (pax "x", GNU long name/link) whole
# into memory, and follows it with the member it describes by recursion.
# kiln's agent writes only pax "x" headers of at most 64 KiB
# (api/proto/agent_tar.h, TAR_EXT_MAX), one per member, so a guest's
# archive gets no more: a larger one, one extended header after another,
# global headers (whose keys tarfile keeps for the whole archive) and sparse
# members (whose maps tarfile may read without bound) are refused, before
# they are read wherever tarfile would read without bound.
HEADER_MAX = 64 << 10
_EXTENDED = (tarfile.XHDTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)
_REFUSED = {tarfile.XGLTYPE: "a global pax header", tarfile.SOLARIS_XHDTYPE: "a Solaris extended header",
            tarfile.GNUTYPE_SPARSE: "a sparse member"}


class _BoundedTarInfo(tarfile.TarInfo):
    """TarInfo that refuses what kiln's agent never writes and what would
    make tarfile read without bound (see HEADER_MAX)."""

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:  # type: ignore[override]
        if self.type in _REFUSED:
            raise tarfile.HeaderError(f"{_REFUSED[self.type]} ({self.name!r}), which download_dir does not take")
        if self.type not in _EXTENDED:
            return super()._proc_member(tarfile_)  # type: ignore[misc,no-any-return]
        if self.size > HEADER_MAX:
            raise tarfile.HeaderError(f"an extended header of {self.size} bytes (at most {HEADER_MAX})")
        if getattr(tarfile_, "_kiln_in_extended", False):
            raise tarfile.HeaderError("an extended header followed by another")
        setattr(tarfile_, "_kiln_in_extended", True)
        try:
            return super()._proc_member(tarfile_)  # type: ignore[misc,no-any-return]
        finally:
            setattr(tarfile_, "_kiln_in_extended", False)

    # GNU sparse maps in pax form: versions 0.0 and 0.1 are parsed from the
    # pax header, already bounded above, and the member is then refused by
    # extract_tar (issparse). Version 1.0 reads its map from the member's
    # data without bound, so it is refused before that read. (The old GNU
    # 'S' type never gets here: _proc_member refuses it.)
    def _proc_gnusparse_10(self, *args: Any) -> None:
        raise tarfile.HeaderError("a sparse member (GNU.sparse pax keys), which download_dir does not take")


# The rule for what a guest's archive may hold is the C reader's
# (api/proto/agent_tar.c), so that download_dir, `kiln cp` and the agent
# take the same archives. tarfile's own data filter (Python 3.12, and
# 3.11.4 on; Debian 12's 3.11.2 has none) is asked as well where it
# exists, a second opinion that is never the only one.
_data_filter: Optional[Callable[[tarfile.TarInfo, str], tarfile.TarInfo]] = getattr(tarfile, "data_filter", None)
_FILTER_ERROR: Any = getattr(tarfile, "FilterError", ())  # () catches nothing

_DIR_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC


def _name_parts(name: str) -> Optional[list[str]]:
    """tar_name_normalize: the components of a member's name (or a hard
    link's), empty and ``.`` ones dropped; None when it is absolute or
    has a ``..`` component."""
    if name.startswith("/"):
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    return None if ".." in parts else parts


def _symlink_refusal(depth: int, target: str) -> Optional[str]:
    """tar_symlink_check: why a symlink in a directory ``depth`` levels
    below the top may not point at ``target`` (None: it may). ``..``
    components may only come first, and climb at most ``depth`` levels:
    after a name, ``..`` climbs from wherever that name leads, which may
    be a link the archive makes later (``esc -> x/x/../../..`` then
    ``x -> .``), so no check of the tree as it stands can vouch for it."""
    if target.startswith("/"):
        return "an absolute target points outside it; use a relative target"
    named = False
    for part in target.split("/"):
        if part in ("", "."):
            continue
        if part != "..":
            named = True
        elif named:
            return "'..' after a name could climb out of it; put every '..' first"
        elif depth == 0:
            return "'..' would leave it; the link must point inside"
        else:
            depth -= 1
    return None


def _inside(top: str, p: str) -> bool:
    return p == top or p.startswith(top + os.sep)


class _Unpacker:
    """Writes members below the directory ``dest``, open as ``root``: every
    path is walked from that descriptor one component at a time with
    O_NOFOLLOW, and every entry made relative to its directory's
    descriptor, so no symbolic link (an earlier member's or one that was
    there before) is ever followed to write."""

    def __init__(self, dest: str) -> None:
        os.makedirs(dest, exist_ok=True)
        self.dest = dest
        self.real = os.path.realpath(dest)
        self.root = os.open(dest, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self.counts = {"files": 0, "dirs": 0, "symlinks": 0, "hardlinks": 0, "skipped": 0}

    def close(self) -> None:
        os.close(self.root)

    def _unsafe(self, m: tarfile.TarInfo, why: str) -> UnsafePathError:
        return UnsafePathError(f"download_dir: member {m.name!r}: {why}")

    def _refuse_links(self, m: tarfile.TarInfo, e: OSError, why: str) -> None:
        """Raises m's UnsafePathError (why) from e when e says a symbolic
        link or a file stood where a directory must (ELOOP, ENOTDIR);
        returns for any other error, which the caller raises as it is."""
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise self._unsafe(m, why) from e

    def _open_dir(self, parts: list[str], create: bool) -> int:
        """A descriptor of the directory ``parts`` below the root (the
        root's own, not to be closed, for []); missing levels are made
        when ``create``. A symlink or file on the way: ELOOP/ENOTDIR."""
        cur = self.root
        try:
            for comp in parts:
                try:
                    fd = os.open(comp, _DIR_OPEN, dir_fd=cur)
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(comp, 0o755, dir_fd=cur)
                    except FileExistsError:
                        pass
                    fd = os.open(comp, _DIR_OPEN, dir_fd=cur)
                if cur != self.root:
                    os.close(cur)
                cur = fd
        except BaseException:
            if cur != self.root:
                os.close(cur)
            raise
        return cur

    def _clear_way(self, m: tarfile.TarInfo, pfd: int, base: str) -> None:
        """Remove what is at ``base`` unless it is a directory: a link there
        is replaced, never written through."""
        try:
            st = os.stat(base, dir_fd=pfd, follow_symlinks=False)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(st.st_mode):
            raise self._unsafe(m, f"a directory is in the way in {self.dest}; download into a new or empty directory")
        os.unlink(base, dir_fd=pfd)

    def member(self, tar: tarfile.TarFile, m: tarfile.TarInfo) -> None:
        if "\0" in m.name or "\0" in m.linkname:
            raise KilnError(f"download_dir: member {m.name!r}: a NUL byte in its name or link; the archive is corrupt")
        if m.issparse():
            raise KilnError(f"download_dir: a sparse member ({m.name!r}), which download_dir does not take")
        if not (m.isreg() or m.isdir() or m.issym() or m.islnk()):
            self.counts["skipped"] += 1  # devices, fifos, types tar does not know: left out, as kiln cp does
            return
        parts = _name_parts(m.name)
        if parts is None:
            raise self._unsafe(m, f"an absolute name or a '..' component would leave {self.dest}; "
                                  f"the guest's archive must hold relative paths inside it")
        if not parts:
            if m.isdir():
                return  # "./": dest itself, which exists
            raise self._unsafe(m, f"it names {self.dest} itself")
        if m.issym():
            self._check_symlink(m, parts)
        lparts = self._check_hardlink(m, parts) if m.islnk() else []
        try:
            pfd = self._open_dir(parts[:-1], create=True)
            try:
                self._write(tar, m, pfd, parts[-1], lparts)
            finally:
                if pfd != self.root:
                    os.close(pfd)
        except OSError as e:
            self._refuse_links(m, e, f"its path goes through a symbolic link or a file in {self.dest}; "
                                     f"refusing to write through it")
            raise KilnError(f"download_dir: member {m.name!r}: {e.strerror or e} (writing below {self.dest})") from e

    def _check_symlink(self, m: tarfile.TarInfo, parts: list[str]) -> None:
        if not m.linkname:
            raise KilnError(f"download_dir: symbolic link {m.name!r} has an empty target; the archive is corrupt")
        why = _symlink_refusal(len(parts) - 1, m.linkname)
        if why is None:
            # The text keeps inside; through a link that was in dest before
            # the download, it may still lead out.
            r = os.path.realpath(os.path.join(self.real, *parts[:-1], m.linkname))
            if not _inside(self.real, r):
                why = f"it leads to {r} through a link already in it"
        if why is not None:
            raise self._unsafe(m, f"the symbolic link -> {m.linkname!r} leaves {self.dest}: {why}")

    def _check_hardlink(self, m: tarfile.TarInfo, parts: list[str]) -> list[str]:
        lparts = _name_parts(m.linkname)
        if lparts is None:
            raise self._unsafe(m, f"the hard link -> {m.linkname!r} is absolute or has a '..' component; "
                                  f"a hard link must name a file of the archive inside {self.dest}")
        if not lparts:
            raise self._unsafe(m, f"the hard link names {self.dest} itself; it must name a file inside it")
        return lparts

    def _filter(self, m: tarfile.TarInfo) -> None:
        """tarfile's data filter, where this Python has it. It resolves the
        member's path on disk, so it is asked once kiln's own walk has
        found the member's place: after what is in the way of a file or
        link is removed (else a link a former download left there would
        make it refuse the file that replaces it), after a directory is
        opened without following a link."""
        if _data_filter is None:
            return
        try:
            _data_filter(m, self.real)
        except _FILTER_ERROR as e:
            raise self._unsafe(m, f"refused by Python's tarfile data filter: {e}") from e

    def _write(self, tar: tarfile.TarFile, m: tarfile.TarInfo, pfd: int, base: str, lparts: list[str]) -> None:
        if m.isdir():
            try:
                os.mkdir(base, 0o700, dir_fd=pfd)
            except FileExistsError:
                pass
            try:
                fd = os.open(base, _DIR_OPEN, dir_fd=pfd)
            except OSError as e:
                self._refuse_links(m, e, f"something that is not a directory (a symbolic link or a file) is in the "
                                         f"way in {self.dest}; refusing to use it")
                raise
            try:
                self._filter(m)
                os.fchmod(fd, (m.mode & 0o777) | 0o700)  # no setuid, setgid or sticky bit
            finally:
                os.close(fd)
            self.counts["dirs"] += 1
        elif m.isreg():
            self._clear_way(m, pfd, base)
            self._filter(m)
            fd = os.open(base, _CREATE, (m.mode & 0o777) or 0o600, dir_fd=pfd)
            with os.fdopen(fd, "wb") as out:
                src = tar.extractfile(m)
                while src is not None:
                    block = src.read(BLOCK)
                    if not block:
                        break
                    out.write(block)
            self.counts["files"] += 1
        elif m.issym():
            self._clear_way(m, pfd, base)
            self._filter(m)
            os.symlink(m.linkname, base, dir_fd=pfd)
            self.counts["symlinks"] += 1
        else:
            self._hardlink(m, pfd, base, lparts)

    def _hardlink(self, m: tarfile.TarInfo, pfd: int, base: str, lparts: list[str]) -> None:
        if lparts == _name_parts(m.name):  # a link to itself is already so (clearing the way would delete it)
            self.counts["hardlinks"] += 1
            return
        try:
            spfd = self._open_dir(lparts[:-1], create=False)
        except FileNotFoundError as e:
            raise self._unsafe(m, f"the hard link -> {m.linkname!r} names no file of the archive "
                                  f"(its file must come earlier)") from e
        except OSError as e:
            self._refuse_links(m, e, f"the hard link -> {m.linkname!r} goes through a symbolic link or a file; "
                                     f"it must name its file by a path of directories")
            raise
        try:
            try:
                st = os.stat(lparts[-1], dir_fd=spfd, follow_symlinks=False)
            except FileNotFoundError as e:
                raise self._unsafe(m, f"the hard link -> {m.linkname!r} names no file of the archive "
                                      f"(its file must come earlier)") from e
            # A hard link to a symlink would be that symlink again at
            # another depth, its leading '..' counted from elsewhere.
            if not stat.S_ISREG(st.st_mode):
                kind = ("a directory" if stat.S_ISDIR(st.st_mode) else
                        "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file")
                raise self._unsafe(m, f"the hard link -> {m.linkname!r} names {kind}; it must name a file")
            self._clear_way(m, pfd, base)
            self._filter(m)
            os.link(lparts[-1], base, src_dir_fd=spfd, dst_dir_fd=pfd, follow_symlinks=False)
        finally:
            if spfd != self.root:
                os.close(spfd)
        self.counts["hardlinks"] += 1


def extract_tar(fileobj: IO[bytes], dest: str) -> dict[str, int]:
    """Unpack a tar.gz stream into ``dest`` (made if missing). Returns counts
    ``{"files", "dirs", "symlinks", "hardlinks", "skipped"}``. A member that
    would land outside ``dest``, be written through a link, or leave a link
    pointing outside raises :class:`UnsafePathError` naming it; devices
    and fifos are skipped. tarfile only parses: every entry is made here."""
    try:
        out = _Unpacker(dest)
    except OSError as e:
        raise KilnError(f"download_dir: {dest}: {e.strerror or e} (give a directory you can write, "
                        f"or one to be made)") from e
    damaged = (tarfile.TarError, EOFError, zlib.error, RecursionError)
    try:
        try:
            tar = tarfile.open(fileobj=fileobj, mode="r|gz", tarinfo=_BoundedTarInfo)
        except (tarfile.TarError, OSError, EOFError, RecursionError) as e:
            raise KilnError(f"download_dir: the archive cannot be read (not tar.gz, or hostile): {e}") from e
        with tar:
            while True:
                try:
                    m = tar.next()
                except damaged + (ValueError, OverflowError) as e:  # ValueError: tarfile's int() of a pax field
                    raise KilnError(f"download_dir: the archive is damaged: {e}") from e
                if m is None:
                    break
                # tarfile keeps every member it read in tar.members (for
                # getmember): a guest's million empty headers, a few MiB
                # of gzip, would be a GiB of them. Nothing here looks back.
                tar.members.clear()
                try:
                    out.member(tar, m)
                except damaged as e:
                    raise KilnError(f"download_dir: the archive is damaged: {e}") from e
    finally:
        out.close()
    return out.counts

class ChunkReader:
    """A read-only file over a function that returns the next bytes of a
    body (``b""`` at its end), for tarfile."""

    def __init__(self, next_chunk: Callable[[], bytes]) -> None:
        self._next = next_chunk
        self._buf = b""
        self._eof = False

    def read(self, n: int = -1) -> bytes:
        while not self._eof and (n < 0 or len(self._buf) < n):
            data = self._next()
            if not data:
                self._eof = True
                break
            self._buf += data
        if n < 0:
            out, self._buf = self._buf, b""
        else:
            out, self._buf = self._buf[:n], self._buf[n:]
        return out


class QueueSource:
    """``next_chunk`` for :class:`ChunkReader` fed from another thread (the
    asyncio transport's event loop) through a bounded queue."""

    def __init__(self) -> None:
        self.q: "queue.Queue[Any]" = queue.Queue(maxsize=4)
        self.closed = threading.Event()

    def __call__(self) -> bytes:
        item = self.q.get()
        if isinstance(item, BaseException):
            raise item
        return item  # type: ignore[no-any-return]

    def put(self, item: Any) -> bool:
        """Blocking put for a worker thread; False once the reader has gone."""
        while not self.closed.is_set():
            try:
                self.q.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False


def _link_leaves(name: str, target: str) -> Optional[str]:
    """Why kilnd would refuse symlink member ``name`` -> ``target`` of a
    context (None: it takes it). Its rule is the agent's tar reader's
    (tar_symlink_check, _symlink_refusal here): a relative target whose
    ``..`` components all come first and climb no higher than the
    member's directory is deep."""
    if not target or "\0" in target:
        return "it points outside the context directory"
    why = _symlink_refusal(name.count("/"), target)
    if why is None:
        return None
    if "after a name" in why:
        return "'..' after a name, which kilnd refuses in a context (put every '..' first)"
    return "it points outside the context directory"


# kilnd's cap of a build context's members (CONTEXT_MEMBERS_MAX): a larger
# directory is refused here, before it is packed and uploaded.
MAX_CONTEXT_MEMBERS = 16384

# O_NONBLOCK: a file swapped for a fifo after its lstat opens at once (and
# is then left out on its fstat) instead of waiting for a writer forever.
_FILE_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def pack_context(local_dir: str, out: IO[bytes],
                 _listed: Optional[Callable[[str], None]] = None) -> list[str]:
    """A template build context: ``local_dir``'s contents as tar.gz into
    ``out`` (member names relative, as ``tar czf - -C DIR .``). Nothing is
    followed: a symlink is packed as a symlink, and left out (named in the
    answer, one message each) when it points outside ``local_dir``, as
    are sockets, fifos and devices. A file with several links is packed
    as a plain file each time (kilnd refuses hard links in a context).
    The tree is walked by directory descriptor (every entry opened
    relative to its directory's fd with O_NOFOLLOW, then fstat'ed), never
    by a path with a directory in it: an entry swapped for a symlink while
    packing is an error, a directory above it swapped for one changes
    nothing, and a file swapped for a fifo or a device is left out, never
    read. ``local_dir`` itself is the caller's path and is followed. More
    than MAX_CONTEXT_MEMBERS entries (kilnd's cap) is a KilnError before
    the whole tree is read. ``_listed`` (tests) is called with each member's name after its lstat,
    before it is opened."""
    try:
        root = os.open(local_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise KilnError(f"templates.build: context_dir {local_dir!r} is not a directory ({e.strerror})") from e
    skipped: list[str] = []
    try:
        with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:  # type: ignore[call-overload]
            _pack_dir(tar, root, "", skipped, _listed, [0], local_dir)
    except OSError as e:
        name = f" {e.filename!r}" if e.filename else ""
        raise KilnError(f"templates.build: packing{name} of {local_dir}: {e.strerror or e} "
                        f"(did it change while it was packed? pack it again)") from e
    finally:
        os.close(root)
    return skipped


def _tarinfo(name: str, st: os.stat_result) -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    ti.mode, ti.mtime, ti.uid, ti.gid = stat.S_IMODE(st.st_mode), int(st.st_mtime), 0, 0
    return ti


def _special(name: str) -> str:
    return f"skipped {name!r}: not a file, directory or symlink"


def _listing(dfd: int, prefix: str, seen: list[int], top: str) -> list[str]:
    """The names in the directory open as ``dfd``, sorted, each counted in
    ``seen[0]``: past MAX_CONTEXT_MEMBERS a KilnError, before the rest of
    a huge directory is read."""
    names = []
    with os.scandir(dfd) as it:
        for e in it:
            seen[0] += 1
            if seen[0] > MAX_CONTEXT_MEMBERS:
                raise KilnError(f"templates.build: context_dir {top!r} has more than {MAX_CONTEXT_MEMBERS} "
                                f"entries (kilnd's cap of a build context; at {prefix + e.name!r}): build from "
                                f"a directory that holds only the build file and what it COPYs")
            names.append(e.name)
    return sorted(names)


def _pack_dir(tar: tarfile.TarFile, dfd: int, prefix: str, skipped: list[str],
              listed: Optional[Callable[[str], None]], seen: list[int], top: str) -> None:
    """The entries of the directory open as ``dfd`` (names ``prefix`` +
    entry) into ``tar``, each opened relative to ``dfd``; ``seen[0]``
    counts the entries of the whole tree (_listing)."""
    for base in _listing(dfd, prefix, seen, top):
        name = prefix + base
        try:
            st = os.stat(base, dir_fd=dfd, follow_symlinks=False)
            if listed is not None:
                listed(name)
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(base, dir_fd=dfd)
                why = _link_leaves(name, target)
                if why is not None:
                    skipped.append(f"skipped symlink {name!r} -> {target!r}: {why}")
                    continue
                ti = _tarinfo(name, st)
                ti.type, ti.linkname = tarfile.SYMTYPE, target
                tar.addfile(ti)
            elif stat.S_ISDIR(st.st_mode):
                fd = os.open(base, _DIR_OPEN, dir_fd=dfd)
                try:
                    ti = _tarinfo(name, os.fstat(fd))
                    ti.type = tarfile.DIRTYPE
                    tar.addfile(ti)
                    _pack_dir(tar, fd, name + "/", skipped, listed, seen, top)
                finally:
                    os.close(fd)
            elif stat.S_ISREG(st.st_mode):
                try:
                    fd = os.open(base, _FILE_OPEN, dir_fd=dfd)
                except OSError as e:
                    if e.errno != errno.ENXIO:  # ENXIO: now a socket (or a device with nothing behind it)
                        raise
                    skipped.append(_special(name))
                    continue
                try:
                    fst = os.fstat(fd)
                    if not stat.S_ISREG(fst.st_mode):  # swapped for a fifo or a device since its lstat
                        skipped.append(_special(name))
                        continue
                    ti = _tarinfo(name, fst)
                    ti.size = fst.st_size
                    with os.fdopen(fd, "rb", closefd=False) as f:
                        tar.addfile(ti, f)
                finally:
                    os.close(fd)
            else:
                skipped.append(_special(name))
        except OSError as e:
            if not e.filename or e.filename == base:
                e.filename = name  # the member's name in the context, not the bare entry
            raise
