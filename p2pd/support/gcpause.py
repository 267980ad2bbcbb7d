"""``bulk_work()``: no garbage collection while a large document is built, serialised or parsed.

Building a conversation allocates millions of objects that all survive; every collection the allocations trigger
scans them and frees nothing (1.2 s of a 50 MB handover, 4 s of its conversion and parse). Reference counting
still frees everything that is not in a cycle. The pause is process-wide, so overlapping pauses (the daemon runs
conversions in threads) are counted: collection comes back on when the last one ends, if it was on before the
first began.

Objects made during a pause are still young when it ends, so the first collection after it would walk them
all once. A short-lived command (the CLI, see :func:`freeze_after_pauses`) freezes them instead (``gc.freeze``):
the collector never looks at them again. They are still freed by reference counting; only garbage cycles among
them would be kept until exit, which is why the daemon does not freeze.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False
_freeze = False


def freeze_after_pauses() -> None:
    """From now on, the end of the outermost pause freezes what exists (for short-lived processes)."""
    global _freeze
    _freeze = True


@contextmanager
def bulk_work() -> Iterator[None]:
    """Collection paused for the ``with`` body (nested and concurrent uses allowed)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                if _freeze:
                    gc.freeze()
                if _was_enabled:
                    gc.enable()

