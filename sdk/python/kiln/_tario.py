"""Directories as tar.gz streams for the archive endpoints, in bounded
memory: a local tree packed while it is sent, an answer unpacked while it
is read. The archive that comes back is the guest's, so it is hostile
input: members are checked before anything is written (no absolute
names, no ``..``, nothing written through a symbolic link, no link that
leaves the directory, no special files).
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


def _safe_target(dest_real: str, name: str) -> Optional[str]:
    """The local path of member ``name`` below ``dest_real``, or None when
    the name must not be written (absolute, ``..``)."""
    if name.startswith("/"):
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        return None
    return os.path.join(dest_real, *parts)


def _check_parents(dest_real: str, path: str) -> None:
    """Every directory between ``dest_real`` and ``path`` is a real
    directory (not a symbolic link an earlier member made)."""
    rel = os.path.relpath(os.path.dirname(path), dest_real)
    cur = dest_real
    if rel == ".":
        return
    for part in rel.split(os.sep):
        cur = os.path.join(cur, part)
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            os.mkdir(cur, 0o755)
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise UnsafePathError(f"download_dir: member path goes through {cur}, which is not a directory")


def _inside(dest_real: str, p: str) -> bool:
    return p == dest_real or p.startswith(dest_real + os.sep)


def _link_stays_inside(dest_real: str, path: str, target: str) -> bool:
    """The link's target, resolved through the links already extracted
    (``sub/l -> ..`` then ``sub/l2 -> l/..`` climbs out), stays inside."""
    if os.path.isabs(target):
        return False
    joined = os.path.join(os.path.dirname(path), target)
    return _inside(dest_real, os.path.normpath(joined)) and _inside(dest_real, os.path.realpath(joined))


# tarfile reads an extended header (pax "x", GNU long name/link) whole
# into memory, and follows it with the member it describes by recursion.
# kiln's agent writes only pax "x" headers of at most 64 KiB
# (api/proto/agent_tar.h, TAR_EXT_MAX), one per member, so a guest's
# archive gets no more: a larger one, one extended header after another,
# global headers (whose keys tarfile keeps for the whole archive) and sparse
# members (whose maps tarfile reads without bound) are refused before they
# are read.
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

    def _proc_sparse(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:  # type: ignore[override]
        raise tarfile.HeaderError(f"a sparse member ({self.name!r}), which download_dir does not take")

    def _proc_gnusparse_00(self, *args: Any) -> None:
        raise tarfile.HeaderError("a sparse member (GNU.sparse pax keys), which download_dir does not take")

    _proc_gnusparse_01 = _proc_gnusparse_00
    _proc_gnusparse_10 = _proc_gnusparse_00


def extract_tar(fileobj: IO[bytes], dest: str) -> dict[str, int]:
    """Unpack a tar.gz stream into ``dest`` (made if missing). Returns counts
    ``{"files", "dirs", "symlinks", "hardlinks", "skipped"}``. A member that
    would land outside ``dest`` raises :class:`UnsafePathError` naming it."""
    os.makedirs(dest, exist_ok=True)
    dest_real = os.path.realpath(dest)
    counts = {"files": 0, "dirs": 0, "symlinks": 0, "hardlinks": 0, "skipped": 0}
    try:
        tar = tarfile.open(fileobj=fileobj, mode="r|gz", tarinfo=_BoundedTarInfo)
    except (tarfile.TarError, OSError, EOFError, RecursionError) as e:
        raise KilnError(f"download_dir: the archive cannot be read (not tar.gz, or hostile): {e}") from e
    with tar:
        try:
            for m in tar:
                path = _safe_target(dest_real, m.name)
                if path is None:
                    raise UnsafePathError(f"download_dir: member {m.name!r} is absolute or has '..'")
                _check_parents(dest_real, path)
                if m.isdir():
                    try:
                        st = os.lstat(path)
                        if not stat.S_ISDIR(st.st_mode):
                            raise UnsafePathError(f"download_dir: member {m.name!r}: {path} exists and is not a directory")
                    except FileNotFoundError:
                        os.mkdir(path, 0o755)
                    os.chmod(path, (m.mode & 0o777) | 0o700)
                    counts["dirs"] += 1
                elif m.isreg():
                    _write_member(tar.extractfile(m), path, m.mode & 0o777)
                    counts["files"] += 1
                elif m.issym():
                    if not _link_stays_inside(dest_real, path, m.linkname):
                        raise UnsafePathError(f"download_dir: symbolic link {m.name!r} -> {m.linkname!r} leaves {dest}")
                    _replace(path)
                    os.symlink(m.linkname, path)
                    counts["symlinks"] += 1
                elif m.islnk():
                    src = _safe_target(dest_real, m.linkname)
                    # The source through every link an earlier member made: still a file of the archive.
                    if src is not None:
                        src = os.path.realpath(src) if _inside(dest_real, os.path.realpath(src)) else None
                    if src is None or not os.path.isfile(src) or os.path.islink(src):
                        raise UnsafePathError(f"download_dir: hard link {m.name!r} -> {m.linkname!r} is not to a file of the archive")
                    _replace(path)
                    os.link(src, path)
                    counts["hardlinks"] += 1
                else:
                    counts["skipped"] += 1
        except (tarfile.TarError, EOFError, zlib.error, RecursionError) as e:
            raise KilnError(f"download_dir: the archive is damaged: {e}") from e
    return counts


def _replace(path: str) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        raise UnsafePathError(f"download_dir: {path} is a directory in the way of a file")
    os.unlink(path)


def _write_member(src: Optional[IO[bytes]], path: str, mode: int) -> None:
    _replace(path)  # never write through a link an earlier member (or anyone) left there
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode or 0o600)
    with os.fdopen(fd, "wb") as out:
        if src is None:
            return
        while True:
            block = src.read(BLOCK)
            if not block:
                break
            out.write(block)


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


def _link_leaves(name: str, target: str) -> bool:
    """A symlink member ``name`` -> ``target`` that points outside the
    archive's root (kilnd's and the agent's rule, tar_symlink_check: an
    absolute target, or more ``..`` than the member's directory is deep)."""
    if not target or target.startswith("/") or "\0" in target:
        return True
    depth = name.count("/")
    for part in target.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if depth == 0:
                return True
            depth -= 1
        else:
            depth += 1
    return False


# kilnd's cap of a build context's members (CONTEXT_MEMBERS_MAX): a larger
# directory is refused here, before it is packed and uploaded.
MAX_CONTEXT_MEMBERS = 16384

_DIR_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
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
                if _link_leaves(name, target):
                    skipped.append(f"skipped symlink {name!r} -> {target!r}: it points outside "
                                   f"the context directory")
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
