"""Two real aiortc peers on loopback, connected through p2pd.webrtc with an in-memory signaling exchange."""

from __future__ import annotations

import asyncio

import pytest

from p2pd.errors import TransferFailedError
from p2pd.transfer.peer import connect


@pytest.fixture(autouse=True)
def loopback(monkeypatch):
    monkeypatch.setenv("P2PD_ICE_HOST_ADDRESSES", "127.0.0.1")


async def test_channel_opens_and_carries_bytes():
    a_to_b: asyncio.Queue = asyncio.Queue()
    b_to_a: asyncio.Queue = asyncio.Queue()
    offer_task = asyncio.create_task(connect("offer", a_to_b.put, b_to_a.get, timeout=20))
    answer_task = asyncio.create_task(connect("answer", b_to_a.put, a_to_b.get, timeout=20))
    a, b = await asyncio.gather(offer_task, answer_task)
    try:
        assert a.channel.readyState == "open" and b.channel.readyState == "open"
        assert a.remote_max_message_size is not None and a.remote_max_message_size >= 65536
        got: asyncio.Future = asyncio.get_running_loop().create_future()
        b.channel.on("message", lambda m: got.done() or got.set_result(m))
        a.channel.send(b"hello over sctp")
        assert await asyncio.wait_for(got, 10) == b"hello over sctp"
    finally:
        await a.close()
        await b.close()


async def test_no_answer_times_out_with_a_clear_reason():
    never: asyncio.Queue = asyncio.Queue()
    sink: asyncio.Queue = asyncio.Queue()
    with pytest.raises(TransferFailedError, match="no peer connection within 1 s"):
        await connect("offer", sink.put, never.get, timeout=1)


async def test_garbage_instead_of_an_answer_is_refused():
    q: asyncio.Queue = asyncio.Queue()
    await q.put({"type": "offer", "sdp": "v=0"})
    sink: asyncio.Queue = asyncio.Queue()
    with pytest.raises(TransferFailedError, match="other than an SDP answer"):
        await connect("offer", sink.put, q.get, timeout=10)
