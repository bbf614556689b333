"""Test helper (tests/test_memory_large_domains.py): run the sqlclose CLI in a child process and
sample its resident size (the whole process tree) every 50 ms from /proc, killing it past
``kill_at`` bytes so a broken bound cannot take the machine down. Independent of sqlclose's own
accounting."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

SQLCLOSE = shutil.which("sqlclose") or str(Path(sys.executable).parent / "sqlclose")


def _tree_rss(pid: int) -> int:
    pids, total = [pid], 0
    try:
        pids += [int(p) for p in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                                                 text=True).stdout.split()]
    except OSError:
        pass
    for p in pids:
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            pass
    return total


def run_peak(args: list[str], cwd: Path, kill_at: float, timeout: float = 170.0):
    """(returncode, stdout, stderr, peak_bytes, killed_reason)."""
    p = subprocess.Popen([SQLCLOSE, *args], cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    out: dict[str, bytes] = {}
    readers = [threading.Thread(target=lambda n=n, s=s: out.__setitem__(n, s.read()))
               for n, s in (("o", p.stdout), ("e", p.stderr))]
    for r in readers:
        r.start()
    peak, killed, t0 = 0, None, time.time()
    while p.poll() is None:
        rss = _tree_rss(p.pid)
        peak = max(peak, rss)
        if rss > kill_at and killed is None:
            killed = f"resident {rss / 2**20:.0f} MiB past the test's kill threshold"
            os.killpg(p.pid, signal.SIGKILL)
        if time.time() - t0 > timeout and killed is None:
            killed = "timeout"
            os.killpg(p.pid, signal.SIGKILL)
        time.sleep(0.05)
    for r in readers:
        r.join()
    return p.returncode, out["o"].decode(), out["e"].decode(), peak, killed
