"""Giving memory back after big jobs (a long-running daemon; glibc's allocator).

A conversation of 100 MB becomes a few hundred MB of Python objects while it is converted, packed, verified or
imported — in worker threads, whose glibc malloc arenas keep the freed pages: a daemon that did ten such jobs sat
at several hundred MB more than its idle level for good. Two remedies, both no-ops where they do not apply (not
glibc, not Linux):

- :func:`use_system_malloc` (``p2pd serve``, first thing): the daemon runs with ``PYTHONMALLOC=malloc``, so
  Python objects live on glibc's heap, where freed pages can be given back page by page;
- :func:`limit_arenas` (at start-up): at most a few malloc arenas, so the freed memory of one thread's job is
  reused by the next instead of stranded in an arena of its own, and big blocks always mapped on their own;
- :func:`release` (after a big job, in a worker thread): a full garbage collection (objects made while
  collection was paused, :mod:`p2pd.support.gcpause`, may hold cycles), then ``malloc_trim(0)``, which returns
  every arena's free pages to the system.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import sys
from functools import cache
from typing import Any

M_ARENA_MAX = -8  # mallopt parameters (glibc malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 1 << 20  # blocks from this size are mapped on their own, and unmapped when freed
BIG_JOB = 8 << 20  # bytes of conversation from which a job is worth a release afterwards


@cache
def _libc() -> Any | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def limit_arenas(count: int = 2) -> bool:
    """Cap glibc's malloc arenas and fix the mmap threshold (call before threads start); whether it applied.

    A fixed threshold: glibc otherwise raises it (up to 32 MB) each time a mapped block is freed, after which a
    job's big buffers (a blob's bytes, a document's long strings) come from the heap and stay there."""
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is None:
        return False
    return bool(mallopt(M_ARENA_MAX, count) == 1 and mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1)


def use_system_malloc(argv: list[str]) -> None:
    """Start this process again (same pid: ``exec``) with ``PYTHONMALLOC=malloc`` unless it is set already: a
    long-running daemon's Python objects then come from glibc's heap, whose free pages :func:`release` hands
    back; pymalloc's 256 KiB arenas stay as long as one object in them lives, and objects the daemon keeps (rows,
    requests) made while a big job ran pin many of them. Measured (``tests/bench/memory.py``, 5 × 100 MB):
    after − idle +6 / +7 MiB (sender / receiver) against +50 / +85 with pymalloc. ``PYTHONMALLOC=pymalloc``
    keeps Python's allocator. Linux only; call before anything else starts."""
    if os.environ.get("PYTHONMALLOC") or not sys.platform.startswith("linux") or _libc() is None:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "p2pd", *argv], {**os.environ, "PYTHONMALLOC": "malloc"})


def release() -> bool:
    """Collect garbage and return free heap pages to the system; whether malloc_trim ran (call in a thread)."""
    gc.collect()
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is None:
        return False
    trim(0)
    return True


__all__ = ["BIG_JOB", "limit_arenas", "release", "use_system_malloc"]
