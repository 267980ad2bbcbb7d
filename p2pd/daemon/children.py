"""The daemon's worker processes (``python -m MODULE JOB``): whole-conversation work — packing
(:mod:`p2pd.daemon.packer`), importing (:mod:`p2pd.daemon.importer`) — runs in a child process, so its memory
is given back to the system when it ends and the daemon keeps its own size.

A worker writes one JSON object on its standard output: its result, or (exit status 2) an error as
:meth:`~p2pd.errors.P2pdError.to_wire` gives it, which :func:`run_child` raises again (same class and cause).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from typing import Any

from p2pd.errors import P2pdError, from_wire


async def run_child(module: str, job: str) -> dict[str, Any]:
    """Run ``python -m module job``; its result, or its error raised again. Cancelled, the child is killed."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONMALLOC"}  # (the daemon's malloc: ~20 % slower here)
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", module, job, stdin=asyncio.subprocess.DEVNULL,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                env=env)
    try:
        out, err = await proc.communicate()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(BaseException):
            await asyncio.shield(proc.wait())
        raise
    try:
        result = json.loads(out) if out else None
    except ValueError:
        result = None
    if isinstance(result, dict) and "error" in result:
        raise from_wire(result)
    if proc.returncode != 0 or not isinstance(result, dict):
        text = err.decode("utf-8", "replace").strip()[-2000:]
        raise from_wire({"error": f"the {module} process ended with status {proc.returncode}: {text}",
                         "cause": "unexpected"})
    return result


def child_main(work: Any, argv: list[str]) -> int:
    """A worker's ``main``: ``work(job_text)`` → its result written as JSON; an error as its wire form."""
    import gc

    gc.disable()  # a short-lived process: what it builds lives until its work is done
    try:
        result = work(argv[1])
    except Exception as exc:  # the daemon rebuilds the error from its wire form (cause, class)
        wire = exc.to_wire() if isinstance(exc, P2pdError) else {"error": f"{type(exc).__name__}: {exc}",
                                                                   "cause": "unexpected"}
        os.write(1, json.dumps(wire).encode())
        return 2
    os.write(1, json.dumps(result).encode())
    return 0


__all__ = ["child_main", "run_child"]
