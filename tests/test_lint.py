"""ruff and mypy over the whole code base: a style or type regression fails the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def test_ruff_clean():
    r = subprocess.run([str(BIN / "ruff"), "check", "p2pd", "signaling", "tests"], cwd=ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_clean():
    r = subprocess.run([str(BIN / "mypy")], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
