"""Spawn :mod:`tests.transfer.peer` processes and wire them to a peer in this process or to each other."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from tests.transfer import rtc

ROOT = Path(__file__).resolve().parents[2]


class PeerProcess:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.events: list[dict[str, Any]] = []

    @classmethod
    async def spawn(cls, *args: str) -> PeerProcess:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.transfer.peer", *args, cwd=ROOT, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
        return cls(proc)

    async def send(self, **obj: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(obj) + "\n").encode())
        await self.proc.stdin.drain()

    async def read(self, timeout: float = 60) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        if not line:
            raise EOFError(f"peer process exited (code {await self.proc.wait()})")
        event: dict[str, Any] = json.loads(line)
        self.events.append(event)
        return event

    async def outcome(self, timeout: float = 120) -> dict[str, Any]:
        """Read events until the result or error line."""
        while True:
            event = await self.read(timeout)
            if event.get("event") in ("result", "error"):
                return event

    def kill(self) -> None:
        if self.proc.returncode is None:
            os.kill(self.proc.pid, signal.SIGKILL)

    async def close(self) -> None:
        self.kill()
        await self.proc.wait()


async def connect_to_process(child: PeerProcess) -> tuple[Any, Any]:
    """A peer in this process (the offerer) connected to ``child``; returns (pc, channel)."""
    pc = rtc.new_peer()
    ch = rtc.channel(pc, 0)
    from p2pd.transfer.channel import attach

    attach(ch)
    await child.send(offer=await rtc.make_offer(pc))
    answer = await child.read()
    await pc.setRemoteDescription(rtc.description_from_json(answer["sdp"]))
    await rtc.wait_open(ch, 20)
    return pc, ch


async def connect_processes(offerer: PeerProcess, answerer: PeerProcess) -> None:
    await offerer.send(offer=None)
    offer = await offerer.read()
    await answerer.send(offer=offer["sdp"])
    answer = await answerer.read()
    await offerer.send(answer=answer["sdp"])
