"""A paired device turned hostile (its key stolen): a test double takes the laptop's place in the pair's room of a
real signaling server — the real pairing, CPace and device proof with the laptop's identity — and floods the real
desk daemon with raw session-link messages: link introductions past the cap and naming sessions the desk does not
know, oversized turns, turn output far past the backlog, all far over the rate. The desk keeps its store bounded,
answers its API all along, answers each kind of refusal with its typed cause once per window (no log flood), shows
the counters in ``p2pd session-links limits`` — and once the real laptop is back, good link messages flow."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from p2pd.daemon.devices import DeviceBook
from p2pd.daemon.identity import load_identity
from p2pd.daemon.peer_protocol import (
    SessionLinkUpdate,
    SessionLinkView,
    SessionRef,
    SessionTurn,
    check_pinned_proof,
    make_proof,
    parse_control,
)
from p2pd.pairing.client import Rendezvous
from p2pd.pairing.codes import Code
from p2pd.pairing.seal import other_role
from tests.daemon.conftest import SESSION_ID, Daemon, device_id, online, pair, until, wait_for
from tests.daemon.sessions_fixtures import hook
from tests.signal_process import SignalProcess

LIMITS = {"rate_per_minute": 120, "backlog_per_session": 5, "backlog_per_device": 8, "links_per_device": 4}
SENDS_PER_SECOND = 12.0  # under the signaling server's per-connection rate: the desk's own limits are what is tested


class Hostile:
    """The laptop's stolen key and pair secret, speaking raw control messages to the desk."""

    def __init__(self, laptop: Daemon, desk_id: str, signal_url: str) -> None:
        self.identity = load_identity(laptop.home)
        self.desk = DeviceBook(laptop.home).get(desk_id)
        self.signal_url = signal_url
        self.got: list[Any] = []
        self.rv: Rendezvous | None = None
        self._reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Hostile:
        code = Code(nameplate=self.desk.room, words=(self.desk.secret_bytes.hex(),))
        rv = await Rendezvous.open(self.signal_url, role="auto", code=code, create=True, connect_timeout=10.0)
        await rv.pair(timeout=120)
        await rv.send_sealed(make_proof(self.identity, rv.exporter, rv.role))
        check_pinned_proof(await rv.recv_sealed(timeout=20.0), rv.exporter, other_role(rv.role), self.desk)
        self.rv = rv
        self._reader = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        assert self.rv is not None
        while True:
            self.got.append(parse_control(await self.rv.recv_sealed()))

    async def __aexit__(self, *exc: object) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self.rv is not None:
            await self.rv.close()

    async def send(self, message: Any) -> None:
        assert self.rv is not None
        await self.rv.send_sealed(message.model_dump(exclude_none=True) if hasattr(message, "model_dump")
                                  else message)
        await asyncio.sleep(1 / SENDS_PER_SECOND)

    def refusals(self) -> list[dict[str, Any]]:
        return [m.model_dump() for m in self.got if getattr(m, "kind", "") == "session-refused"]


class Prober:
    """Calls the desk's API over and over while the flood runs; every call must answer within the client's
    timeout (the bound)."""

    def __init__(self, d: Daemon) -> None:
        self.d, self.calls, self.failures, self.slowest = d, 0, list[str](), 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(base_url=self.d.url, headers={"Authorization": f"Bearer {self.d.token}"}, timeout=5.0,
                          trust_env=False) as c:
            while not self.stop.is_set():
                started = time.monotonic()
                try:
                    for path in ("/health", "/session-links", "/session-links/limits"):
                        c.get(path).raise_for_status()
                except httpx.HTTPError as exc:
                    self.failures.append(repr(exc))
                self.calls += 1
                self.slowest = max(self.slowest, time.monotonic() - started)
                self.stop.wait(0.2)


def _rows(d: Daemon, sql: str, *args: Any) -> int:
    with sqlite3.connect(d.home / "state.sqlite3") as db:
        return int(db.execute(sql, args).fetchone()[0])


async def test_a_hostile_paired_device_cannot_fill_the_store_nor_stall_the_daemon(tmp_path: Path,
                                                                                 signaling: SignalProcess) -> None:
    desk = Daemon(tmp_path / "a", signal_url=signaling.url)
    laptop = Daemon(tmp_path / "b", signal_url=signaling.url)
    (tmp_path / "a" / "config.toml").write_text("[session_links]\n" + "".join(f"{k} = {v}\n"
                                                                              for k, v in LIMITS.items()))
    try:
        pair(desk, laptop)
        desk.start()
        laptop.start()
        a_id, b_id = device_id(desk), device_id(laptop)
        wait_for(lambda: online(desk, b_id) and online(laptop, a_id), what="online at each other")
        a, b = SESSION_ID, str(uuid.uuid4())
        hook(desk, "session-start", session_id=a, cwd=str(desk.base))
        hook(laptop, "session-start", session_id=b, cwd=str(laptop.base))
        with desk.client() as c:
            good = c.post("/session-links", json={"session_id": a, "members": [{"session": b, "device": b_id}]}).json()
        wait_for(lambda: _rows(laptop, "SELECT COUNT(*) FROM session_links") == 1, what="the good link at laptop")

        laptop.stop()  # its key is stolen: the double speaks for it
        wait_for(lambda: not online(desk, b_id), what="the laptop away")
        prober = Prober(desk)
        async with Hostile(laptop, a_id, signaling.url) as bad:
            prober.thread.start()
            me, here = SessionRef(device=b_id, session=b), SessionRef(device=a_id, session=a)

            def link(n: int, at: SessionRef = here) -> SessionLinkView:
                return SessionLinkView(id=f"slink-flood{n}", created_by=me, members=[me, at])

            for n in range(8):  # past links_per_device, all live
                await bad.send(SessionLinkUpdate(link=link(n)))
            for n in range(4):  # sessions the desk never saw
                await bad.send(SessionLinkUpdate(link=link(100 + n, SessionRef(device=a_id, session=f"ghost-{n}"))))
            for n in range(3):  # over the sender-side cap
                await bad.send(SessionTurn(id=f"big{n}", link=link(0).id, sender=me, text="x" * 13_000))
            n = 0
            while not any(r["cause"] == "rate_limited" for r in bad.refusals()):  # turns until the meter trips
                await bad.send(SessionTurn(id=f"t{n}", link=link(n % 4).id, sender=me, text=f"flood {n} " * 50))
                n += 1
                assert n < 2000, "the rate limit never tripped"
            for m in range(60):  # far over the rate: refused, not answered again in this window
                await bad.send(SessionTurn(id=f"more{m}", link=link(0).id, sender=me, text="more"))
            await until(_true, timeout=2)  # what is in flight arrives
        prober.stop.set()
        prober.thread.join(10)

        causes = [r["cause"] for r in bad.refusals()]
        print(f"flood: {n + 75} messages; refusals answered {causes}; API calls {prober.calls}, slowest "
              f"{prober.slowest:.2f} s")
        assert sorted(set(causes)) == ["limit_reached", "not_found", "rate_limited", "too_large"]
        assert all(causes.count(c) == 1 for c in set(causes))  # once per window and cause
        assert prober.calls > 5 and prober.failures == []
        assert _rows(desk, "SELECT COUNT(*) FROM session_links WHERE json_extract(view, '$.created_by.device')=?",
                     b_id) <= LIMITS["links_per_device"] + 1  # + the good one
        assert _rows(desk, "SELECT COUNT(*) FROM session_messages WHERE from_device=? AND delivered_at IS NULL",
                     b_id) <= LIMITS["backlog_per_device"]
        assert _rows(desk, "SELECT COUNT(*) FROM session_links WHERE view LIKE '%ghost-%'") == 0
        logged = [line for line in desk.output if "refused" in line and "session-link messages from" in line]
        assert len(logged) == 4, logged  # one line per cause in the window, not one per message
        shown = desk.p2pd("session-links", "limits", "--json")
        assert shown.returncode == 0, shown.stderr
        counts = {d["device"]: d for d in json.loads(shown.stdout)["devices"]}[b_id]
        assert counts["refused"]["rate_limited"] >= 30 and counts["refused"]["too_large"] == 3
        assert counts["refused"]["not_found"] == 4 and counts["dropped"] > 0
        table = desk.p2pd("session-links", "limits")
        assert table.returncode == 0 and "rate_limited" in table.stdout, table.stderr

        # the real laptop is back: once the meter has room again, good link messages flow both ways
        laptop.start()
        wait_for(lambda: online(desk, b_id) and online(laptop, a_id), what="back online")
        hook(desk, "stop", session_id=a, last_assistant_message="desk: after the flood")
        wait_for(lambda: _rows(laptop, "SELECT COUNT(*) FROM session_messages WHERE text=?",
                               "desk: after the flood") == 1, what="the desk's turn at the laptop")
        attempt = 0

        def arrived() -> bool:
            nonlocal attempt
            attempt += 1
            hook(laptop, "stop", session_id=b, last_assistant_message=f"laptop: after the flood {attempt}")
            time.sleep(1)
            return _rows(desk, "SELECT COUNT(*) FROM session_messages WHERE text LIKE 'laptop: after the flood%' "
                         "AND ref=?", good["id"]) > 0

        wait_for(arrived, timeout=120, what="the laptop's turn at the desk")
    finally:
        desk.kill()
        laptop.kill()


async def _true() -> bool:
    await asyncio.sleep(2)
    return True
