"""Directories as tar.gz streams for the archive endpoints, in bounded
memory: a local tree packed while it is sent, an answer unpacked while it
is read. The archive that comes back is the guest's, so it is hostile
input: members are checked before anything is written (no absolute
names, no ``..``, nothing written through a symbolic link, no link that
leaves the directory, no special files).
"""

from __future__ import annotations

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


def pack_context(local_dir: str, out: IO[bytes]) -> list[str]:
    """A template build context: ``local_dir``'s contents as tar.gz into
    ``out`` (member names relative, as ``tar czf - -C DIR .``). Nothing is
    followed: a symlink is packed as a symlink, and left out (named in the
    answer, one message each) when it points outside ``local_dir``, as
    are sockets, fifos and devices. A file with several links is packed
    as a plain file each time (kilnd refuses hard links in a context).
    Files are opened with O_NOFOLLOW, so one swapped for a symlink while
    packing is an error, never the link's target."""
    if not os.path.isdir(local_dir):
        raise KilnError(f"templates.build: context_dir {local_dir!r} is not a directory")
    skipped: list[str] = []
    with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:  # type: ignore[call-overload]
        def walk(path: str, prefix: str) -> None:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
            for e in entries:
                name = prefix + e.name
                st = e.stat(follow_symlinks=False)
                ti = tarfile.TarInfo(name)
                ti.mode, ti.mtime, ti.uid, ti.gid = stat.S_IMODE(st.st_mode), int(st.st_mtime), 0, 0
                if stat.S_ISLNK(st.st_mode):
                    target = os.readlink(e.path)
                    if _link_leaves(name, target):
                        skipped.append(f"skipped symlink {name!r} -> {target!r}: it points outside "
                                       f"the context directory")
                        continue
                    ti.type, ti.linkname = tarfile.SYMTYPE, target
                    tar.addfile(ti)
                elif stat.S_ISDIR(st.st_mode):
                    ti.type = tarfile.DIRTYPE
                    tar.addfile(ti)
                    walk(e.path, name + "/")
                elif stat.S_ISREG(st.st_mode):
                    fd = os.open(e.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
                    with os.fdopen(fd, "rb") as f:
                        ti.size = os.fstat(f.fileno()).st_size
                        tar.addfile(ti, f)
                else:
                    skipped.append(f"skipped {name!r}: not a file, directory or symlink")
        walk(local_dir, "")
    return skipped
