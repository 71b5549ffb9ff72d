"""Pure helpers both client surfaces share: request bodies, local file
sources, paths. No I/O on kilnd's socket here."""

from __future__ import annotations

import base64
import io
import os
import secrets
import stat
import tempfile
from typing import IO, Any, AsyncIterable, Iterable, Iterator, Mapping, Optional, Sequence, Union

from . import _tario
from ._http import seg

BLOCK = 64 * 1024

Cmd = Union[str, Sequence[str]]
Data = Union[bytes, bytearray, memoryview, str]
LocalFile = Union[str, "os.PathLike[str]", IO[bytes]]
# What an upload takes: a LocalFile, bytes, or an iterable of bytes (the
# asyncio client also an async iterable).
Source = Union[LocalFile, bytes, bytearray, memoryview, Iterable[bytes], AsyncIterable[bytes]]


def sb_path(sandbox_id: str, *rest: Union[str, int]) -> str:
    return "/v1/sandboxes/" + seg(sandbox_id) + "".join("/" + seg(p) for p in rest)


def drop_none(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The fields given (None means "not given": kilnd's default)."""
    return {k: v for k, v in fields.items() if v is not None}


def command_fields(cmd: Cmd) -> dict[str, Any]:
    """argv for a list, ``sh -c`` for a string (kilnd's ``shell``)."""
    if isinstance(cmd, str):
        return {"argv": [cmd], "shell": True}
    argv = list(cmd)
    if not all(isinstance(a, str) for a in argv):
        raise TypeError("cmd: a list of strings (argv) or one string (run by sh -c)")
    return {"argv": argv}


def stdin_fields(stdin: Optional[Data]) -> dict[str, Any]:
    """Text as ``stdin``, bytes as ``stdin_base64``."""
    if stdin is None:
        return {}
    if isinstance(stdin, str):
        return {"stdin": stdin}
    return {"stdin_base64": base64.b64encode(bytes(stdin)).decode("ascii")}


def to_bytes(data: Data) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def extra_for(timeout_ms: Optional[int]) -> float:
    """Seconds a request may take beyond the client's timeout: the guest's
    own limit when one is given (exec, run, wait)."""
    return (timeout_ms or 0) / 1000.0


def file_mode(mode: Union[int, str, None]) -> Optional[str]:
    """``mode=0o600`` or ``"0600"`` as kilnd's octal query value."""
    if mode is None or isinstance(mode, str):
        return mode
    return "0%o" % mode


def label_query(state: Optional[str], labels: Optional[Mapping[str, str]]) -> list[tuple[str, Any]]:
    q: list[tuple[str, Any]] = [("state", state)]
    for k, v in (labels or {}).items():
        q.append(("label", f"{k}={v}"))
    return q


def file_source(src: Source) -> tuple[Iterator[bytes], Optional[int]]:
    """An upload's source as blocks, and its length when it can be known (a
    regular file, bytes: Content-Length; anything else is sent chunked): a
    local path or a binary file object (read in 64 KiB blocks), bytes, or
    any iterable of bytes (a generator: its items as they come). An async
    iterable is passed on as it is, for the asyncio transport."""
    if isinstance(src, (bytes, bytearray, memoryview)):
        data = memoryview(src).cast("B")
        return (bytes(data[i:i + BLOCK]) for i in range(0, len(data), BLOCK)), len(data)
    if hasattr(src, "__aiter__"):
        return src, None  # type: ignore[return-value]
    if not isinstance(src, (str, os.PathLike)) and not hasattr(src, "read"):
        try:
            it = iter(src)  # type: ignore[call-overload]
        except TypeError:
            raise TypeError(f"upload: give a local path, bytes, a binary file object or an iterable of "
                            f"bytes, not {type(src).__name__}") from None
        return (upload_block(b) for b in it), None
    if isinstance(src, (str, os.PathLike)):
        path = os.fspath(src)
        length = os.stat(path).st_size

        def from_path() -> Iterator[bytes]:
            with open(path, "rb") as f:
                yield from _blocks(f)
        return from_path(), length
    length_opt: Optional[int] = None
    try:
        st = os.fstat(src.fileno())
        if stat.S_ISREG(st.st_mode):
            length_opt = st.st_size - src.tell()
    except (AttributeError, OSError, io.UnsupportedOperation, ValueError):
        length_opt = None
    return _blocks(src), length_opt


def upload_block(block: object) -> bytes:
    """One item of an iterable given as an upload's source: bytes only."""
    if isinstance(block, (bytes, bytearray, memoryview)):
        return bytes(block)
    if isinstance(block, str):
        raise TypeError("upload: the iterable gave a str; give bytes (encode the text)")
    raise TypeError(f"upload: the iterable gave a {type(block).__name__}; give bytes")


def _blocks(f: IO[bytes]) -> Iterator[bytes]:
    while True:
        block = f.read(BLOCK)
        if not block:
            return
        if isinstance(block, str):
            raise TypeError("upload: open the file in binary mode ('rb')")
        yield block


class Sink:
    """Where a download goes: a local path (written to a new file beside it,
    ``PATH.kiln-RANDOM``, created exclusively, renamed when complete, so a
    cut transfer never looks whole and two downloads to one path never
    share a temporary file, nor does a link planted at a known name get
    followed) or a binary file object. A path that exists and is no
    regular file (``/dev/null``, a FIFO) is written in place: nothing may
    be renamed over it."""

    def __init__(self, dst: LocalFile) -> None:
        self._path: Optional[str] = None  # renamed over when complete
        self._tmp = ""  # the new file beside it
        self._own = False  # a file this opened
        if isinstance(dst, (str, os.PathLike)):
            self._own = True
            path = os.fspath(dst)
            try:
                in_place = not stat.S_ISREG(os.stat(path).st_mode)
            except FileNotFoundError:
                in_place = False
            if in_place:
                self.f: IO[bytes] = open(path, "wb")
            else:
                self._path = path
                self._tmp = f"{path}.kiln-{secrets.token_hex(6)}"
                # O_EXCL: never an existing file or link; mode 0666 less the umask
                fd = os.open(self._tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
                self.f = os.fdopen(fd, "wb")
        else:
            self.f = dst
        self.bytes = 0

    def write(self, data: bytes) -> None:
        self.f.write(data)
        self.bytes += len(data)

    def finish(self, ok: bool) -> None:
        if self._own:
            self.f.close()
        if self._path is None:
            return
        if ok:
            os.replace(self._tmp, self._path)
        else:
            try:
                os.unlink(self._tmp)
            except OSError:
                pass


Context = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]", IO[bytes]]


def check_context(context_dir: Optional[Union[str, "os.PathLike[str]"]], context: Optional[Context]) -> None:
    if (context_dir is None) == (context is None):
        raise TypeError("templates.build: give context_dir (a directory, packed here) or context "
                        "(a tar.gz: bytes, a path or a binary file object), one of them")


def spool_context(context_dir: Union[str, "os.PathLike[str]"]) -> tuple[IO[bytes], list[str]]:
    """``context_dir`` packed as tar.gz into an anonymous temporary file
    (so its length goes as Content-Length and kilnd can refuse a context
    that cannot fit before it is sent), rewound; and what was left out."""
    spool = tempfile.TemporaryFile(prefix="kiln-context.")
    try:
        skipped = _tario.pack_context(os.fspath(context_dir), spool)
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool, skipped


def context_source(context: Context) -> tuple[Iterator[bytes], Optional[int]]:
    """A ready tar.gz context (bytes, a path, a binary file object) as blocks."""
    if isinstance(context, (bytes, bytearray, memoryview)):
        data = bytes(context)
        return iter([data]), len(data)
    return file_source(context)
