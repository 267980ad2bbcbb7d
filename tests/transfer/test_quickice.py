"""p2pd/transfer/quickice.py: an ICE connection goes on once its check list is completed, on real aioice
connections over loopback.

aioice's pacing pause (20 ms) is stretched to 5 s here, so "returned before the pause was over" is not a race:
with :class:`QuickConnect` both ends connect in well under that, without it they could not."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

import aioice
import aioice.ice
import pytest

from p2pd.transfer.quickice import QuickConnect, hasten, shape_problem
from p2pd.transfer.sockets import ice_connection
from tests.transfer.rtc import force_loopback, ice_pair, p2pd_links

PAUSE = 5.0  # aioice's 20 ms pacing pause, stretched


@pytest.fixture
def stretched_pacing(monkeypatch: pytest.MonkeyPatch) -> None:
    stock = asyncio.sleep

    def sleep(delay: float, *args: Any) -> Coroutine[Any, Any, Any]:
        return stock(PAUSE if delay == 0.02 else delay, *args)

    monkeypatch.setattr(asyncio, "sleep", sleep)


def _pair(quick: bool) -> contextlib.AbstractAsyncContextManager[tuple[aioice.Connection, aioice.Connection]]:
    return ice_pair(QuickConnect if quick else lambda conn: None)


def _quick(conn: aioice.Connection) -> QuickConnect:
    bound: Callable[[], Any] = conn.connect
    assert isinstance(getattr(bound, "__self__", None), QuickConnect)
    return bound.__self__  # type: ignore[attr-defined, no-any-return]


async def test_both_ends_go_on_once_the_check_list_is_completed(stretched_pacing: None) -> None:
    async with _pair(quick=True) as (a, b):
        async with asyncio.timeout(PAUSE / 2):
            await asyncio.gather(a.connect(), b.connect())
        await a.send(b"after ICE")
        async with asyncio.timeout(PAUSE / 2):
            assert await b.recv() == b"after ICE"
        # aioice's own connect is still in its pause: closing stops it (no consent checks on a closed connection)
        background = [_quick(c).background for c in (a, b)]
        assert all(t is not None and not t.done() for t in background)
    assert all(t is not None and t.cancelled() for t in background)


async def test_without_it_aioice_waits_out_its_pause(stretched_pacing: None) -> None:
    """The control: the same pair with aioice's own connect does not finish within the same time."""
    async with _pair(quick=False) as (a, b):
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(PAUSE / 2):
                await asyncio.gather(a.connect(), b.connect())


async def test_aioices_own_ending_runs_on_when_the_connection_stays_open() -> None:
    async with _pair(quick=True) as (a, b):
        await asyncio.gather(a.connect(), b.connect())
        for conn in (a, b):
            background = _quick(conn).background
            if background is not None:  # (None: aioice's connect had ended first, nothing ran on)
                await asyncio.wait_for(background, 5)
            assert conn._query_consent_task is not None  # consent freshness (RFC 7675) as aioice starts it


async def test_a_failed_check_list_still_fails() -> None:
    """Closed while its checks run (the remote end never answers): the check list fails, and connect raises as
    aioice's does."""
    force_loopback()
    a = aioice.Connection(ice_controlling=True)
    await a.gather_candidates()
    await a.add_remote_candidate(aioice.Candidate(foundation="1", component=1, transport="udp", priority=1,
                                                  host="127.0.0.1", port=9, type="host"))
    await a.add_remote_candidate(None)
    a.remote_username, a.remote_password = "nobody", "x" * 22
    quick = QuickConnect(a)
    connecting = asyncio.ensure_future(a.connect())
    await asyncio.sleep(0.1)
    assert not connecting.done()
    await a.close()
    with pytest.raises(ConnectionError):
        await asyncio.wait_for(connecting, 10)
    assert quick.background is None


async def test_p2pds_connections_have_it_and_the_installed_aioice_has_the_shape(monkeypatch: pytest.MonkeyPatch) \
        -> None:
    """Fails when an aioice upgrade moves what this reaches into: look at quickice.py again, and add the release to
    VERIFIED_AIOICE once it is right."""
    monkeypatch.setenv("P2PD_ICE_HOST_ADDRESSES", "127.0.0.1")
    async with p2pd_links() as (a, b):
        assert shape_problem(a.pc) is None
        for link in (a, b):
            conn = ice_connection(link.pc)
            _quick(conn)
            assert "connect" in vars(conn) and aioice.ice.Connection.connect is not conn.connect
        monkeypatch.setattr("aioice.__version__", "9.0.0")
        assert shape_problem(a.pc) == "aioice 9.0.0 is not one of 0.13"
        assert hasten(a.pc) is None
