"""The lock that lets a timed test run alone among the run's workers (tests/machine.py), with real processes:
an ``alone`` holder waits for the tests under way, and no test starts while it waits or runs."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOLD = """
import sys, time
from pathlib import Path
from tests.machine import machine
folder, alone, seconds, log = Path(sys.argv[1]), sys.argv[2] == "alone", float(sys.argv[3]), sys.argv[4]
with machine(folder, alone=alone):
    with open(log, "a") as fh:
        fh.write(f"{sys.argv[5]} start {time.monotonic()}\\n")
    time.sleep(seconds)
    with open(log, "a") as fh:
        fh.write(f"{sys.argv[5]} end {time.monotonic()}\\n")
"""


def _hold(tmp_path: Path, name: str, alone: bool, seconds: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path), "alone" if alone else "shared",
                             str(seconds), str(tmp_path / "log"), name], cwd=ROOT)


def _spans(tmp_path: Path) -> dict[str, tuple[float, float]]:
    marks: dict[str, dict[str, float]] = {}
    for line in (tmp_path / "log").read_text().splitlines():
        name, what, when = line.split()
        marks.setdefault(name, {})[what] = float(when)
    return {name: (m["start"], m["end"]) for name, m in marks.items()}


def test_an_alone_test_waits_for_the_running_ones_and_holds_back_the_next(tmp_path: Path) -> None:
    first = [_hold(tmp_path, f"shared{i}", False, 1.5) for i in range(2)]  # two tests under way, side by side
    time.sleep(0.5)
    alone = _hold(tmp_path, "alone", True, 1.0)
    time.sleep(0.5)
    later = _hold(tmp_path, "later", False, 0.2)  # a test that starts while the alone one waits
    for p in [*first, alone, later]:
        assert p.wait(30) == 0
    spans = _spans(tmp_path)
    assert spans["shared0"][0] < spans["shared1"][1] and spans["shared1"][0] < spans["shared0"][1]  # overlapped
    assert spans["alone"][0] >= max(spans["shared0"][1], spans["shared1"][1])  # waited for both to end
    assert spans["later"][0] >= spans["alone"][1]  # did not overtake it
