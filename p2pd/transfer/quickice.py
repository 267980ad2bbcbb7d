"""ICE is done when its check list is: a connection goes on to DTLS without waiting out aioice's check pacing.

aioice's ``Connection.connect`` starts one connectivity check every 20 ms (RFC 8445's Ta timer) and looks at the
check list's outcome only after the pause that follows the last check it started. On a path that answers at once
(a LAN, loopback) the list is completed ~1 ms after the first check, and ``connect`` still sleeps out the rest of
its 20 ms — on both peers, before either starts DTLS. Measured on loopback, ``p2pd send`` of the 3.5 MB session:
27-29 ms from "checking paths" to "connected" before, 6-10 ms with this (of a handover of ~0.33 s).

:func:`hasten` makes one connection's ``connect`` return as soon as aioice records the check list as completed
(it puts ``ICE_COMPLETED`` on the list's queue); aioice's own ``connect`` keeps running in the background and ends
as it always does — its pause over, it finds nothing left to start, takes the outcome, cancels the checks still
running and starts its consent checks (RFC 7675) — unless the connection is closed first, which stops it. A failed
list, or any error, is aioice's ``connect`` returning or raising as before. Nothing else changes: which pairs are
checked, when and how, is aioice's.

Like :mod:`p2pd.transfer.datapath`, this reaches into private aioice attributes, so it applies only where their
shape is the one it was written for (:func:`shape_problem`; ``tests/transfer/test_quickice.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from p2pd.transfer.sockets import ice_connection, release_problem

VERIFIED_AIOICE = ("0.13",)  # aioice releases whose Connection.connect this was written against


def shape_problem(pc: Any) -> str | None:
    """Why :func:`hasten` would leave ``pc`` as it is (``None``: it applies)."""
    import aioice
    import aioice.ice

    if (problem := release_problem(aioice, VERIFIED_AIOICE)) is not None:
        return problem
    if not isinstance(getattr(aioice.ice, "ICE_COMPLETED", None), int):
        return "aioice.ice has no ICE_COMPLETED"
    names = set(getattr(getattr(aioice.ice.Connection.connect, "__code__", None), "co_names", ()))
    if not {"_check_periodic", "sleep", "_check_list_state", "get"} <= names:
        return "aioice's Connection.connect no longer paces its checks, then takes the check list's outcome"
    maybe = getattr(aioice.ice.Connection, "_check_list_maybe_complete", None)
    if not {"_check_list_state", "put_nowait"} <= set(getattr(getattr(maybe, "__code__", None), "co_names", ())):
        return "aioice no longer puts a completed check list's outcome on its queue"
    conn = ice_connection(pc)
    if not isinstance(conn, aioice.ice.Connection):
        return "the connection has no aioice connection (yet)"
    if not isinstance(getattr(conn, "_check_list_state", None), asyncio.Queue):
        return "the aioice connection's check list outcome is not a queue"
    return None


class QuickConnect:
    """Stands in for one aioice connection's ``connect`` (an attribute of that instance only)."""

    def __init__(self, conn: Any) -> None:
        import aioice.ice

        self.completed_value: int = aioice.ice.ICE_COMPLETED
        self._stock_connect = conn.connect
        self._outcome: asyncio.Future[int] | None = None
        self.background: asyncio.Task[Any] | None = None  # aioice's connect, still running after ours returned
        queue = conn._check_list_state
        stock_put = queue.put_nowait

        def put_nowait(item: int) -> None:
            stock_put(item)
            if self._outcome is not None and not self._outcome.done():
                self._outcome.set_result(item)

        queue.put_nowait = put_nowait
        self._stock_close = conn.close
        conn.connect = self.connect
        conn.close = self.close

    async def connect(self) -> None:
        self._outcome = asyncio.get_running_loop().create_future()
        stock = asyncio.ensure_future(self._stock_connect())
        try:
            await asyncio.wait({stock, self._outcome}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # cancelled (a timeout): so is aioice's connect
            stock.cancel()
            with contextlib.suppress(BaseException):
                await stock
            raise
        if stock.done() or self._outcome.result() != self.completed_value:
            return await stock  # aioice's own ending: its result, its error
        self.background = stock
        stock.add_done_callback(_retrieve)
        return None

    async def close(self) -> None:
        """aioice's ``close``, after stopping its ``connect`` if that still runs (it would start consent checks
        on the closed connection)."""
        if self.background is not None and not self.background.done():
            self.background.cancel()
            with contextlib.suppress(BaseException):
                await self.background
        await self._stock_close()


def _retrieve(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()  # (a late error of a connection already in use is aioice's to report, not ours)


def hasten(pc: Any) -> QuickConnect | None:
    """Make ``pc``'s ICE connection go on once its check list is completed (module docstring); ``None`` when it
    does not apply (:func:`shape_problem`) and aioice's ``connect`` is left as it is. Call it once the data
    channel is created, before the descriptions are set."""
    if shape_problem(pc) is not None:
        return None
    return QuickConnect(ice_connection(pc))
