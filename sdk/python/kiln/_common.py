"""Pure helpers both client surfaces share: request bodies, local file
sources, paths. No I/O on kilnd's socket here."""

from __future__ import annotations

import base64
import io
import os
import stat
import tempfile
from typing import IO, Any, Iterator, Mapping, Optional, Sequence, Union

from . import _tario
from ._http import seg

BLOCK = 64 * 1024

Cmd = Union[str, Sequence[str]]
Data = Union[bytes, bytearray, memoryview, str]
LocalFile = Union[str, "os.PathLike[str]", IO[bytes]]


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


def file_source(src: LocalFile) -> tuple[Iterator[bytes], Optional[int]]:
    """A local path or a binary file object as blocks of at most 64 KiB, and
    its length when it can be known (a regular file: Content-Length;
    anything else is sent chunked)."""
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


def _blocks(f: IO[bytes]) -> Iterator[bytes]:
    while True:
        block = f.read(BLOCK)
        if not block:
            return
        if isinstance(block, str):
            raise TypeError("upload: open the file in binary mode ('rb')")
        yield block


class Sink:
    """Where a download goes: a local path (written to PATH.part, renamed
    when complete, so a cut transfer never looks whole) or a binary file
    object."""

    def __init__(self, dst: LocalFile) -> None:
        self._path: Optional[str] = None
        if isinstance(dst, (str, os.PathLike)):
            self._path = os.fspath(dst)
            self.f: IO[bytes] = open(self._path + ".part", "wb")
        else:
            self.f = dst
        self.bytes = 0

    def write(self, data: bytes) -> None:
        self.f.write(data)
        self.bytes += len(data)

    def finish(self, ok: bool) -> None:
        if self._path is None:
            return
        self.f.close()
        if ok:
            os.replace(self._path + ".part", self._path)
        else:
            try:
                os.unlink(self._path + ".part")
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
