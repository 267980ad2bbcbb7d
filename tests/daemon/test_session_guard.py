"""The session-link gate in process (no signaling server): what a paired device may push in is checked before
anything is stored — rate, size, backlog, links, sessions that exist here — and each refusal is typed, answered
once per window and counted (the hostile peer over real daemons: test_session_link_flood.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from p2pd.daemon.network import DeviceNetwork
from p2pd.daemon.peer_protocol import SessionLinkUpdate, SessionLinkView, SessionRef, SessionRefusal, SessionTurn
from p2pd.daemon.session_guard import SessionGuard
from p2pd.daemon.session_limits import LinkLimits, Refusals
from p2pd.daemon.session_links import new_link
from p2pd.daemon.session_tables import SessionStore
from p2pd.daemon.store import Store
from tests.daemon.test_control_dispatch import RecordingSession, wired

__all__ = ["wired"]
HERE = "s-here"


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def gate(wired: Any, tmp_path: Path) -> tuple[DeviceNetwork, RecordingSession, Clock]:
    net, session, _ = wired
    Store(tmp_path / "state.sqlite3").record_hook_session(session_id=HERE, transcript_path=None, cwd=None)
    clock = Clock()
    limits = LinkLimits(rate_per_minute=30, backlog_per_session=3, backlog_per_device=5, links_per_device=2)
    net.session_relay.guard = SessionGuard(net.session_relay.desk, limits, clock=clock)
    return net, session, clock


def _link(net: DeviceNetwork, session: RecordingSession, lid: str, here: str = HERE) -> SessionLinkView:
    return SessionLinkView(id=lid, created_by=SessionRef(device=session.device.device_id, session="s-there"),
                           members=[SessionRef(device=session.device.device_id, session="s-there"),
                                    SessionRef(device=net.identity.device_id, session=here)])


def _turn(view: SessionLinkView, n: int, text: str = "out") -> SessionTurn:
    return SessionTurn(id=f"t{n}", link=view.id, sender=view.created_by, text=f"{text} {n}")


def _refusals(session: RecordingSession) -> list[SessionRefusal]:
    return [m for m in session.sent if isinstance(m, SessionRefusal)]


async def test_members_must_be_sessions_known_here_and_links_per_device_are_capped(gate: Any) -> None:
    net, session, _ = gate
    store: SessionStore = net.session_relay.desk.store
    await net.dispatch(session, SessionLinkUpdate(link=_link(net, session, "l-ghost", here="s-nobody")))
    assert store.find_link("l-ghost") is None
    assert [(r.cause, r.link) for r in _refusals(session)] == [("not_found", "l-ghost")]
    for lid in ("l-1", "l-2", "l-3"):
        await net.dispatch(session, SessionLinkUpdate(link=_link(net, session, lid)))
    assert [v.id for v in store.links_from(session.device.device_id)] == ["l-1", "l-2"]
    assert _refusals(session)[-1].cause == "limit_reached"
    # a link no longer live makes room for a new one (the oldest of them is dropped)
    closed = _link(net, session, "l-1").model_copy(update={"closed": True})
    await net.dispatch(session, SessionLinkUpdate(link=closed))
    await net.dispatch(session, SessionLinkUpdate(link=_link(net, session, "l-4")))
    assert [v.id for v in store.links_from(session.device.device_id)] == ["l-2", "l-4"]
    counts = net.session_relay.view()["devices"][0]
    assert counts["refused"] == {"not_found": 1, "limit_reached": 1} and counts["links_dropped"] == 1


async def test_backlog_keeps_the_newest_and_size_and_rate_are_refused_once_per_window(gate: Any) -> None:
    net, session, clock = gate
    store: SessionStore = net.session_relay.desk.store
    view = _link(net, session, "l-1")
    await net.dispatch(session, SessionLinkUpdate(link=view))
    for n in range(10):
        await net.dispatch(session, _turn(view, n))
    assert [m.text for m in store.messages(HERE)] == ["out 9", "out 8", "out 7"]  # the oldest dropped
    big = SessionTurn(id="big", link=view.id, sender=view.created_by, text="x" * 12_001)
    await net.dispatch(session, big)
    await net.dispatch(session, big.model_copy(update={"id": "big2"}))
    await net.dispatch(session, _turn(view, 99).model_copy(update={"link": "l-unknown"}))
    assert [(r.cause, r.ref) for r in _refusals(session)] == [("too_large", "big"), ("not_found", "t99")]
    for n in range(100):  # the bucket (30) is empty: the rest is refused, answered once
        await net.dispatch(session, _turn(view, 100 + n))
    assert [r.cause for r in _refusals(session)].count("rate_limited") == 1
    assert len(store.messages(HERE)) == 3
    clock.t += 61  # the next window: answered again, with how many were held back
    await net.dispatch(session, _turn(view, 500))
    clock.t += 0.1
    for n in range(40):
        await net.dispatch(session, _turn(view, 600 + n))
    rate = [r for r in _refusals(session) if r.cause == "rate_limited"]
    assert len(rate) == 2 and rate[1].refused > 1
    counts = net.session_relay.view()["devices"][0]
    assert counts["refused"]["too_large"] == 2 and counts["dropped"] >= 7


async def test_a_refusal_is_never_answered_and_not_found_takes_its_sessions_out(gate: Any) -> None:
    net, session, _ = gate
    desk = net.session_relay.desk
    here, there = SessionRef(device=net.identity.device_id, session=HERE), SessionRef(
        device=session.device.device_id, session="s-there")
    view = desk.store.add_link(new_link("", here, [there]))
    await net.dispatch(session, SessionRefusal(cause="not_found", ref=view.id, link=view.id))
    after = desk.store.get_link(view.id)
    assert [m.session for m in after.left] == ["s-there"] and _refusals(session) == []
    assert net.session_relay.view()["devices"][0]["theirs"] == {"not_found": 1}


def test_refusals_are_reported_once_per_window_with_the_count() -> None:
    r = Refusals(window=10)
    assert [r.refuse("d", "rate_limited", t) for t in (0, 1, 2, 3)] == [1, 0, 0, 0]
    assert r.refuse("d", "too_large", 4) == 1  # another kind has its own window
    assert r.refuse("d", "rate_limited", 10.5) == 4  # this one and the three held back


def test_the_queue_for_an_offline_device_is_bounded_by_count_and_age(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "state.sqlite3")
    for n in range(12):
        store.enqueue("dev-a" if n % 2 else "dev-b", {"n": n})
    assert store.prune_outgoing(max_messages=4, max_age=3600) == 4
    assert store.queued() == {"dev-a": 4, "dev-b": 4}
    assert [m["n"] for _, m in store.outgoing("dev-a")] == [5, 7, 9, 11]  # the newest kept
    import time

    assert store.prune_outgoing(max_messages=4, max_age=3600, now_ts=time.time() + 7200) == 8
    assert store.queued() == {}


def test_delivered_messages_are_kept_a_while_then_pruned_undelivered_ones_stay(tmp_path: Path) -> None:
    import time

    store = SessionStore(tmp_path / "state.sqlite3")
    for n in range(3):
        assert store.add_message(id=f"m{n}", session="s", kind="turn", from_device="dev-a", from_session=None,
                                 ref=None, text=f"turn {n}")
    given = store.take_undelivered("s", limit=2)
    assert [m.id for m in given] == ["m0", "m1"]
    assert store.prune_delivered(max_age=3600) == 0  # just read: kept for reading back
    assert store.prune_delivered(max_age=3600, now_ts=time.time() + 7200) == 2
    left = store.messages("s")
    assert [(m.id, m.delivered_at) for m in left] == [("m2", None)]  # the unread one is never pruned by age
