"""Where a handover's CPU goes over time: each p2pd process's CPU, sampled from ``/proc`` every STEP seconds.

``tests/bench/handover.py --timeline`` runs one more p2pd handover per size (not counted in its figures) with a
:class:`CpuTimeline` on the sender and the receiver, and prints, per STEP: each process's share of a core — the
sender (``send``), its packing process (``pack``), the receiver (``recv``) and its checking process (``check``) —
and their sum, the cores in use. A process's children are found through ``/proc/PID/task/PID/children``; one that
has exited keeps its last reading. The clock resolution is the kernel's tick (``SC_CLK_TCK``, usually 10 ms), so
each cell is ±0.1 core at the default step. Linux only.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

STEP = 0.1
TICK = os.sysconf("SC_CLK_TCK")
ROLES = ("send", "pack", "recv", "check")


def cpu_ticks(pid: int) -> int | None:
    """User + system ticks of process ``pid`` so far (None once it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # (the command name, in parentheses, may hold spaces)
    return int(fields[11]) + int(fields[12])


def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


class CpuTimeline:
    """Samples the sender, the receiver and their children (the packing and the checking process) in a thread,
    from :meth:`start` until :meth:`stop`."""

    def __init__(self, sender: int, receiver: int) -> None:
        self._top = {"send": sender, "recv": receiver}
        self._child: dict[str, int] = {}
        self._last: dict[str, int] = {}
        self.rows: list[tuple[float, dict[str, int]]] = []  # (seconds since start, ticks so far per role)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._t0 = time.perf_counter()

    def start(self) -> None:
        self._t0 = time.perf_counter()
        self._sample()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(STEP):
            self._sample()

    def _sample(self) -> None:
        for parent, child in (("send", "pack"), ("recv", "check")):
            if child not in self._child and (kids := children(self._top[parent])):
                self._child[child] = kids[0]
        pids = {**self._top, **self._child}
        for role, pid in pids.items():
            ticks = cpu_ticks(pid)
            if ticks is not None:
                self._last[role] = ticks
        self.rows.append((time.perf_counter() - self._t0, dict(self._last)))

    def table(self) -> list[str]:
        """The timeline as a text table: per step, the cores each process used, and their sum."""
        lines = ["    t  " + " ".join(f"{r:>6s}" for r in ROLES) + "   cores"]
        busy = 0.0
        for (t0, before), (t1, after) in zip(self.rows, self.rows[1:], strict=False):
            span = t1 - t0
            use = {r: (after.get(r, 0) - before.get(r, after.get(r, 0))) / TICK / span for r in ROLES}
            total = sum(use.values())
            busy += total * span
            lines.append(f"{t1:5.2f}  " + " ".join(f"{use[r]:6.2f}" for r in ROLES) + f"   {total:5.2f}")
        if len(self.rows) > 1:
            wall = self.rows[-1][0] - self.rows[0][0]
            cores = os.cpu_count() or 1
            lines.append(f"CPU {busy:.2f} s in {wall:.2f} s: {busy / wall:.2f} of {cores} cores in use on average")
        return lines
