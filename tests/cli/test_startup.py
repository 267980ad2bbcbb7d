"""What ``p2pd --help`` and the parser import: only what they use (the daemon, the network stack, pydantic and
rich cost ~1.5 s of start-up on this machine). Checked on ``sys.modules`` in a fresh interpreter, not by timing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from p2pd.errors import ExitCode
from tests.cli.helpers import SHORT, run

# Modules the parser must not import: each belongs to a command that needs it.
HEAVY = ("p2pd.daemon", "p2pd.transfer", "p2pd.pairing", "p2pd.exchange", "p2pd.conversation", "p2pd.blob",
         "httpx", "aiortc", "av", "pydantic", "rich", "asyncio", "websockets", "cryptography", "lz4", "zstandard")

_PROBE = """
import json, sys
from p2pd.cli.main import main
try:
    main({argv!r})
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.__stderr__)
"""


def _imported(argv: list[str]) -> set[str]:
    r = subprocess.run([sys.executable, "-c", _PROBE.format(argv=argv)], capture_output=True, text=True, timeout=60)
    return set(json.loads(r.stderr.strip().splitlines()[-1]))


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("argv", [["--help"], ["send", "--help"], ["receive", "--help"], ["serve", "--help"]])
def test_help_imports_nothing_heavy(argv: list[str]) -> None:
    modules = _imported(argv)
    assert "p2pd.cli.main" in modules  # the probe did run the parser
    assert _heavy(modules) == []


def test_probe_sees_heavy_imports() -> None:
    """The probe can fail: a command that does use the daemon's client shows httpx in sys.modules."""
    modules = _imported(["transfers", "--json"])  # no daemon runs: it fails after importing the client
    assert "httpx" in _heavy(modules)



def test_fast_exit_keeps_exit_code_and_flushed_output(tmp_path) -> None:
    """``python -m p2pd`` ends with ``os._exit`` after the command: its code and every line it wrote survive."""
    missing = run("show", str(tmp_path / "missing.a2a.json"))
    assert missing.returncode == ExitCode.NOT_FOUND
    assert "not found" in missing.stderr

    target = tmp_path / "out.a2a.json"
    done = run("export", str(SHORT), "-o", str(target))
    assert done.returncode == ExitCode.OK, done.stderr
    assert done.stdout.strip() == str(target)
    assert json.loads(target.read_bytes())["messages"]
