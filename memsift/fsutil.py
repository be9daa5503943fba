"""Atomic writes, inter-process locks and whether a process runs: nothing the user kept is ever
lost."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def atomic_write(path: Path, data: bytes | str, mode: int = 0o600) -> None:
    """Write to a temp file beside `path`, fsync, then rename over it."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def append_line(path: Path, line: str, mode: int = 0o600) -> None:
    """Append one line with a single write(2) on an O_APPEND fd: concurrent appenders of
    lines under PIPE_BUF never interleave, longer ones are serialised with a lock."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = (line.rstrip("\n") + "\n").encode("utf-8")
    with file_lock(path.with_name(path.name + ".lock")):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode)
        try:
            end = os.lseek(fd, 0, os.SEEK_END)
            written = os.write(fd, data)
            if written != len(data):  # a full disk or a file size limit: no half line left
                os.ftruncate(fd, end)
                raise OSError(errno.ENOSPC, f"short write to {path}: {written} of {len(data)}")
        finally:
            os.close(fd)


class LockTimeout(Exception):
    pass


@contextlib.contextmanager
def file_lock(path: Path, timeout: float = 10.0) -> Iterator[None]:
    """An exclusive flock on `path` (created 0600), waiting at most `timeout` seconds."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        end = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= end:
                    raise LockTimeout(f"could not lock {path} in {timeout}s") from None
                time.sleep(0.005)
        yield
    finally:
        os.close(fd)


def process_alive(pid: int) -> bool:
    """The process runs: a zombie, finished and waiting for its parent to reap it, does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError, IndexError):
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    return True  # no /proc (macOS): signal 0 is all there is
