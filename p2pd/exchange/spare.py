"""The spare packing process: :mod:`p2pd.exchange.producer` started before its job is known.

``p2pd send FILE`` starts it first thing (:mod:`p2pd.cli.launch`, before the command line's own modules are
imported): its imports then overlap the sender's start (parsing the command, checking the code, pairing), and the
first :meth:`~p2pd.exchange.producing.Production.start` of a session file hands it the job as one JSON line on its
standard input. Unused, it ends when the sender does (its standard input closes). This module imports nothing of
p2pd's, so that starting the spare costs the sender no more than the ``Popen``.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

_spare: subprocess.Popen[bytes] | None = None


def prespawn() -> None:
    """Start the spare packing process now, unless one is waiting already. When no process can be had now (a
    process table or memory exhausted), there is no spare: the send starts a process for its job, and says why
    if it cannot."""
    global _spare
    if _spare is None:
        with contextlib.suppress(OSError):
            _spare = subprocess.Popen([sys.executable, "-m", "p2pd.exchange.producer"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def spare() -> subprocess.Popen[bytes] | None:
    """The spare packing process waiting for its job, if any."""
    return _spare


def hand(session: Path, spool: Path) -> subprocess.Popen[bytes] | None:
    """The spare packing process, given its job (pack ``session``, spooling in ``spool``); None when there is no
    spare (or it is gone): the caller starts a process for the job."""
    global _spare
    proc, _spare = _spare, None
    if proc is None or proc.stdin is None:
        return None
    try:
        proc.stdin.write(json.dumps({"session": str(session), "work": str(spool)}).encode() + b"\n")
        proc.stdin.close()
    except (OSError, ValueError):  # gone (its input closed): a process is started for the job instead
        with contextlib.suppress(OSError):
            proc.kill()
        return None
    return proc


def close() -> None:
    """End the spare packing process without a job (its standard input closed), and forget it."""
    global _spare
    proc, _spare = _spare, None
    if proc is not None:
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(10)  # (it reads end of input once its imports are done, and exits)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
