"""``p2pd.support.memory``: after a big job the heap's free pages go back to the system (glibc, Linux)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from p2pd.support import memory

ROOT = Path(__file__).resolve().parents[2]

_JOB = """
import sys, threading
from p2pd.support.memory import limit_arenas, release
def rss():
    return int([l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1]) // 1024
assert limit_arenas()
before = rss()
kept = []
def job():  # a big job in a worker thread: 150 MB of malloc'd blocks, freed but for a few that stay
    data = [b"x" * 1500 + str(i).encode() for i in range(100_000)]
    kept.extend(data[::500])
    del data
t = threading.Thread(target=job); t.start(); t.join()
after_job = rss()
assert release()
print(before, after_job, rss())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc on Linux")
def test_a_big_job_s_memory_goes_back_after_release() -> None:
    out = subprocess.run([sys.executable, "-c", _JOB], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    before, after_job, released = (int(x) for x in out.stdout.split())
    assert released <= before + 30, (before, after_job, released)


def test_release_is_safe_anywhere() -> None:
    memory.release()  # a no-op where there is no glibc; never raises
