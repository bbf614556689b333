"""Named points of a run, where a test can hold the process to signal it deterministically.

``SQLCLOSE_TEST_PAUSE_AT=POINT:READY_FILE`` makes the run, on reaching ``POINT`` (scan, search,
write, verify, place) the first time, write ``READY_FILE`` and wait there (at most
``MAX_WAIT_SECONDS``) for a signal: the interrupt tests send SIGINT or SIGTERM at each point and
check that nothing is left, without sleeps tuned to a machine. Unset (always, outside tests),
a checkpoint costs one environment lookup.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

PAUSE_VARIABLE = "SQLCLOSE_TEST_PAUSE_AT"
POINTS = ("scan", "search", "write", "verify", "place")
MAX_WAIT_SECONDS = 60.0
_reached: set[str] = set()


def checkpoint(name: str) -> None:
    """Hold here if a test asked to (see the module's docstring); otherwise return at once."""
    asked = os.environ.get(PAUSE_VARIABLE)
    if not asked:
        return
    point, _, ready = asked.partition(":")
    if point != name or name in _reached or not ready:
        return
    _reached.add(name)
    # Written aside and renamed into place: the waiting test polls for the file and reads it at
    # once, and on a loaded machine it could see it created but still empty (a CI failure).
    staged = Path(f"{ready}.partial")
    staged.write_text(f"{name} {os.getpid()}\n", encoding="utf-8")
    os.replace(staged, ready)
    deadline = time.monotonic() + MAX_WAIT_SECONDS
    while time.monotonic() < deadline:  # a signal's handler raises out of this sleep
        time.sleep(0.02)
