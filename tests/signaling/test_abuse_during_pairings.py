"""Many abusive clients at once against the real ``p2pd-signal`` process while good clients keep pairing (issue 15,
"a fuzz test feeds … the signaling server"): hypothesis draws a gang of abusers — non-reading floods, slot
holders, half-open handshakes, oversized and malformed frames, near-valid protocol messages — each from its own
loopback address, runs them together for a few seconds, and the good pairings running meanwhile must all succeed,
``/healthz`` must keep answering (each within 2 s), the server's RSS must stay under 150 MiB and its log clean; at
the end every connection the abusers made is gone. Seeded (``P2PD_FUZZ_SEED``, printed) and bounded in time
(``P2PD_FUZZ_SECONDS``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tests.fuzzing import SECONDS, SEED
from tests.signal_process import SignalProcess, signal_server
from tests.signaling.rawclient import frame, handshake, tcp
from tests.signaling.test_abuse import MiB, client_from, flood_for, healthz_seconds, peak_rss
from tests.signaling.test_fuzz import hostile_frame, json_values
from tests.signaling.test_server import metric

ABUSE_SECONDS = 2.5  # each drawn gang abuses the server this long
BUDGET = max(3 * SECONDS, 10.0)  # all the examples together (later ones are skipped)
print(f"abuse during pairings: fuzz seed {SEED} (P2PD_FUZZ_SEED), {BUDGET:g} s (3 x P2PD_FUZZ_SECONDS)")


# ---- the abusers (each a thread with its own address; they stop at ``deadline``) --------------------------------
def _flood(port: int, source: str, deadline: float, _: Any) -> None:
    flood_for(port, source, max(0.0, deadline - time.monotonic()))


def _hold(port: int, source: str, deadline: float, _: Any) -> None:
    """As many connections (each with a room) as the address is allowed, held without reading."""
    held: list[socket.socket] = []
    try:
        while time.monotonic() < deadline and len(held) < 40:
            try:
                sock = handshake(port, source)
            except (OSError, ConnectionError):
                break  # refused: the address has all it may hold
            sock.sendall(frame('{"type":"allocate"}'))
            held.append(sock)
        time.sleep(max(0.0, deadline - time.monotonic()))
    finally:
        for sock in held:
            sock.close()


def _half_open(port: int, source: str, deadline: float, _: Any) -> None:
    """TCP connections that stop in the middle of the HTTP upgrade request."""
    opened: list[socket.socket] = []
    try:
        while time.monotonic() < deadline and len(opened) < 60:
            with contextlib.suppress(OSError):
                sock = tcp(port, source)
                sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgr")
                opened.append(sock)
        time.sleep(max(0.0, deadline - time.monotonic()))
    finally:
        for sock in opened:
            sock.close()


def _frames(port: int, source: str, deadline: float, frames: list[bytes]) -> None:
    """The drawn frames (oversized, malformed, near-valid messages), on fresh connections until the deadline."""
    while time.monotonic() < deadline:
        try:
            sock = handshake(port, source)
        except (OSError, ConnectionError):
            time.sleep(0.05)
            continue
        with contextlib.suppress(OSError):
            sock.sendall(b"".join(frames))
            sock.settimeout(0.2)
            sock.recv(65536)
        sock.close()


ABUSERS: dict[str, Callable[[int, str, float, Any], None]] = {
    "flood": _flood, "hold": _hold, "half-open": _half_open, "frames": _frames}

# messages that look like the protocol but never name a room a good pairing may have been given
ROOMS = st.sampled_from(["lobby", "x" * 70, "../x", "", "١٢", "9" * 9]) | json_values
MEDDLING = st.fixed_dictionaries(
    {"type": st.sampled_from(["allocate", "join", "relay", "leave", "close_room", "ping", "pong", "welcome"])},
    optional={"room": ROOMS, "create": json_values, "capacity": json_values,
              "to": st.text("0123456789abcdef", min_size=8, max_size=8) | json_values, "data": json_values,
              "id": json_values}).map(lambda m: frame(json.dumps(m)))
OVERSIZED = st.sampled_from([frame("x" * 70_000), frame(b"\x00" * 70_000),
                             b"\x81\xff" + (2**40).to_bytes(8, "big") + b"\x00\x00\x00\x00xx"])
frames = st.lists(hostile_frame() | MEDDLING | OVERSIZED, min_size=1, max_size=20)
abuser = (st.sampled_from(["flood", "hold", "half-open"]).map(lambda kind: (kind, None))
          | st.tuples(st.just("frames"), frames))
# every kind in each gang, then up to three more of any kind
gangs = st.tuples(frames, st.lists(abuser, max_size=3)).map(
    lambda drawn: [("flood", None), ("hold", None), ("half-open", None), ("frames", drawn[0]), *drawn[1]])


# ---- the good clients ---------------------------------------------------------------------------------------------
@dataclass
class Good:
    """Addresses for good clients (each pairing from two fresh ones) and what their pairings gave."""

    next_address: int = 0
    done: int = 0
    failures: list[str] = field(default_factory=list)

    def address(self) -> str:
        self.next_address += 1
        return f"127.1.{self.next_address // 250 % 250}.{1 + self.next_address % 250}"


async def _recv(ws: Any, kind: str) -> dict[str, Any]:
    while True:  # skip what the server may say first (the welcome)
        message = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if message["type"] == kind:
            return dict(message)


async def good_pairing(server: SignalProcess, good: Good) -> None:
    """Two clients: welcome, allocate, join, one relay each way; a failure is recorded, never raised."""
    try:
        async with await client_from(server, good.address()) as a, await client_from(server, good.address()) as b:
            await a.send(json.dumps({"type": "allocate"}))
            made = await _recv(a, "joined")
            await b.send(json.dumps({"type": "join", "room": made["room"]}))
            joined = await _recv(b, "joined")
            await a.send(json.dumps({"type": "relay", "to": joined["peer_id"], "data": {"sdp": "offer"}}))
            assert (await _recv(b, "relay"))["data"] == {"sdp": "offer"}
            await b.send(json.dumps({"type": "relay", "to": made["peer_id"], "data": {"sdp": "answer"}}))
            assert (await _recv(a, "relay"))["data"] == {"sdp": "answer"}
        good.done += 1
    except Exception as exc:  # the test fails on any; the kind says which step
        good.failures.append(f"{type(exc).__name__}: {exc}")


async def pair_until(server: SignalProcess, good: Good, deadline: float, loops: int = 2) -> None:
    async def loop() -> None:
        while time.monotonic() < deadline:
            await good_pairing(server, good)

    await asyncio.gather(*(loop() for _ in range(loops)))


@contextlib.contextmanager
def health_watch(server: SignalProcess) -> Iterator[list[float | str]]:
    """Asks /healthz every 0.2 s while the block runs: the answer times, or why there was none (2 s timeout)."""
    answers: list[float | str] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.2):
            try:
                answers.append(healthz_seconds(server, timeout=2.0))
            except Exception as exc:
                answers.append(f"{type(exc).__name__}: {exc}")

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield answers
    finally:
        stop.set()
        watcher.join()


# ---- the test -----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def abused() -> Iterator[tuple[SignalProcess, list[int]]]:
    """One server (default limits) for every example; its RSS peak over all of them."""
    with signal_server("--log-level", "WARNING") as server, peak_rss(server.process.pid) as peak:
        yield server, peak


_RUN = {"started": 0.0, "examples": 0, "pairings": 0}


@seed(SEED)
@settings(max_examples=25, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(gang=gangs)
def test_a_gang_of_abusers_leaves_good_pairings_working(abused: tuple[SignalProcess, list[int]],
                                                        gang: list[tuple[str, Any]]) -> None:
    server, peak = abused
    _RUN["started"] = _RUN["started"] or time.monotonic()
    if time.monotonic() - _RUN["started"] > BUDGET:
        return  # bounded in time: the checks after the run still apply
    example = _RUN["examples"] = _RUN["examples"] + 1
    deadline = time.monotonic() + ABUSE_SECONDS
    threads = [threading.Thread(target=ABUSERS[kind], daemon=True,
                                args=(server.port, f"127.0.{20 + example % 200}.{1 + i}", deadline, drawn))
               for i, (kind, drawn) in enumerate(gang)]
    good = Good(next_address=example * 1000)
    with health_watch(server) as answers:
        for thread in threads:
            thread.start()
        asyncio.run(pair_until(server, good, deadline))
        for thread in threads:
            thread.join(30)
    kinds = [kind for kind, _ in gang]
    print(f"example {example}: {kinds}: {good.done} good pairings, /healthz {len(answers)} answers, "
          f"RSS peak {peak[0] / MiB:.0f} MiB")
    assert not any(thread.is_alive() for thread in threads)
    assert good.failures == [] and good.done > 0, (kinds, good.failures)
    assert answers and all(isinstance(a, float) for a in answers), (kinds, answers)
    assert server.process.poll() is None
    _RUN["pairings"] += good.done


def test_after_the_gangs_the_server_is_whole(abused: tuple[SignalProcess, list[int]]) -> None:
    """Runs after the examples above (same server): every abusive connection is gone, memory stayed bounded,
    a pairing succeeds, nothing in the log."""
    server, peak = abused
    assert _RUN["examples"] > 0 and _RUN["pairings"] > 0
    good = Good(next_address=900_000)
    asyncio.run(good_pairing(server, good))
    assert good.failures == [] and good.done == 1
    deadline = time.monotonic() + 40  # condemned connections that never read are dropped when their close times out
    while metric(server, "p2pd_signal_connections") != 0:
        assert time.monotonic() < deadline, "connections left open after every client went away"
        time.sleep(0.2)
    print(f"{_RUN['examples']} gangs, {_RUN['pairings']} good pairings meanwhile; server RSS peak "
          f"{peak[0] / MiB:.0f} MiB")
    assert peak[0] < 150 * MiB
    log = "".join(server.output)
    assert "Traceback" not in log and "ERROR" not in log, log[-3000:]
