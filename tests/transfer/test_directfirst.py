"""p2pd/transfer/directfirst.py on real aioice connections over loopback. (That two homes behind cone NATs with a
relay on offer connect directly, every time, is tests/net/test_across_nats.py's, with real NATs and coturn.)

aioice's retransmission timeout (0.5 s) is stretched to 5 s here, so "connected before a retransmission" is not a
race: with :class:`DirectFirst` both ends connect well within it, without it the controlled end could not."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import aioice
import aioice.ice
import aioice.stun
import pytest

from p2pd.transfer.directfirst import DirectFirst, prefer_direct, shape_problem
from p2pd.transfer.quickice import QuickConnect
from p2pd.transfer.sockets import ice_connection
from tests.transfer.rtc import ice_pair, p2pd_links

RTO = 5.0  # aioice's first retransmission (0.5 s), stretched


def _adapt(direct_first: bool) -> Callable[[aioice.Connection], object]:
    def adapt(conn: aioice.Connection) -> None:
        QuickConnect(conn)  # (as p2pd's connections: on once the check list is completed)
        if direct_first:
            DirectFirst(conn)
    return adapt


def _pair(direct_first: bool) -> contextlib.AbstractAsyncContextManager[tuple[aioice.Connection, aioice.Connection]]:
    return ice_pair(_adapt(direct_first))


def _drop_first_request(conn: aioice.Connection) -> list[Any]:
    """``conn``'s first connectivity check is lost on the way (as when the peer's NAT has not yet seen the peer
    send, and drops it); returns what was dropped."""
    dropped: list[Any] = []
    for protocol in conn._protocols:
        stock = protocol.send_stun

        def send_stun(message: Any, addr: tuple[str, int], stock: Any = stock) -> None:
            if not dropped and message.message_class == aioice.stun.Class.REQUEST:
                dropped.append(message)
                return
            stock(message, addr)

        protocol.send_stun = send_stun  # type: ignore[method-assign]
    return dropped


async def _controlled_first_then_controlling(a: aioice.Connection, b: aioice.Connection) -> None:
    """The controlled end checks first (its request is lost), then the controlling end starts."""
    b_connects = asyncio.ensure_future(b.connect())
    await asyncio.sleep(0.2)
    await asyncio.gather(a.connect(), b_connects)


async def test_a_check_from_the_peer_restarts_a_check_in_progress_so_the_controlled_end_completes_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aioice.stun, "RETRY_RTO", RTO)
    async with _pair(direct_first=True) as (a, b):
        dropped = _drop_first_request(b)
        async with asyncio.timeout(RTO / 2):
            await _controlled_first_then_controlling(a, b)
        assert len(dropped) == 1
        await a.send(b"after ICE")
        async with asyncio.timeout(RTO / 2):
            assert await b.recv() == b"after ICE"


async def test_without_it_the_controlled_end_waits_for_its_retransmission(monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: the same loss with aioice's own handling does not complete within the same time."""
    monkeypatch.setattr(aioice.stun, "RETRY_RTO", RTO)
    async with _pair(direct_first=False) as (a, b):
        _drop_first_request(b)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(RTO / 2):
                await _controlled_first_then_controlling(a, b)


async def test_p2pds_connections_have_it_and_the_installed_aioice_has_the_shape(monkeypatch: pytest.MonkeyPatch) \
        -> None:
    """Fails when an aioice upgrade moves what this reaches into: look at directfirst.py again, and add the release
    to VERIFIED_AIOICE once it is right."""
    monkeypatch.setenv("P2PD_ICE_HOST_ADDRESSES", "127.0.0.1")
    async with p2pd_links() as (a, b):
        assert shape_problem(a.pc) is None
        for link in (a, b):
            conn = ice_connection(link.pc)
            for name in ("check_start", "check_incoming", "_check_list_maybe_fail"):
                bound = getattr(conn, name)
                assert name in vars(conn) and isinstance(getattr(bound, "__self__", None), DirectFirst), name
        monkeypatch.setattr("aioice.__version__", "9.0.0")
        assert shape_problem(a.pc) == "aioice 9.0.0 is not one of 0.13"
        assert prefer_direct(a.pc) is None
