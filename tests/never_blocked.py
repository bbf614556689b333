"""A guard for tests that put a pipe (FIFO) where sqlclose lists files: opening one no one writes
to waits for good, so a regression that opens it must fail the test, not hang the suite."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def never_blocked(seconds: int = 120) -> Iterator[None]:
    """Fail, not hang, should anything open a pipe no one writes to: SIGALRM interrupts the blocked
    call and the handler's error ends it."""
    def stop(signum, frame):
        raise TimeoutError(f"blocked for {seconds} s: something opened the pipe")

    before = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)
