"""A Python snippet run in a fresh interpreter (this tree first on its path), for what only a new process shows —
which modules an import brings, what an environment variable changes at import time; the JSON it prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def probe(code: str, **env: str) -> dict[str, object]:
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout))
