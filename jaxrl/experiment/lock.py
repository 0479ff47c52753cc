"""One writer per run directory: ``RunLock(run_dir)`` holds an exclusive ``flock`` on
``RUN_DIR/.lock`` while a process trains into it. A second process (a second ``--resume``
of the same run) gets a one-line ``ConfigError`` (exit code 2) instead of corrupting
the run. The operating system releases the lock when its holder exits, however it
exits (SIGKILL included), so a stale lock never blocks a resume; the empty ``.lock``
file stays in the run directory.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from jaxrl.types import ConfigError

LOCK_FILE = ".lock"


class RunLock:
    """An exclusive, non-blocking lock on a run directory (a context manager)."""

    def __init__(self, run_dir: str | Path):
        self.path = Path(run_dir) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            where = self.path.parent
            raise ConfigError(f"cannot lock run directory '{where}': {e.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ConfigError(
                f"run directory '{self.path.parent}' is in use by another process; wait "
                "for it to end (one writer per run)"
            ) from None
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
