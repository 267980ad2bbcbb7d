"""A relayed path only when no direct one is coming: the controlling agent holds back its nomination of a relayed
candidate pair while the peer's own checks show a direct path opening.

aioice nominates aggressively: as the controlling agent every check it sends carries USE-CANDIDATE, so the first
pair to succeed is the pair used. A relayed pair succeeds at its first try, while a direct pair between two homes
behind NATs (hole punching) needs both sides to have sent: its first check is dropped by the peer's NAT and it
succeeds only at aioice's first retransmission, 0.5 s later. Measured on the simulated internet (tests/net, two
cone NATs, coturn on offer): the transfer went through the relay in 1 of 4 runs though a direct path existed —
slower, an extra hop, and traffic on the relay operator's bill.

:func:`prefer_direct` changes this on one connection, when its agent is the controlling one:

* a check of a relayed pair (either candidate of type ``relay``) goes without USE-CANDIDATE; once it succeeds the
  pair is nominated with a second check (RFC 8445 §8.1.1, regular nomination) — at once, unless a direct path
  shows: a check from the peer reached a local candidate that is not relayed, from an address that is not one of
  the peer's relays. Then the nomination waits, up to :data:`HOLD` seconds from that sign, for a direct pair to be
  nominated; when none is (or no direct pair is left to try), the best relayed pair that succeeded is nominated;
* in either role, when a check from the peer arrives over a pair whose own check is in progress (its first
  request dropped by the peer's NAT, which had not yet seen this side send), that check starts again at once
  (RFC 8445 §7.3.1.4 cancels an in-progress check and triggers a new one) instead of waiting out aioice's
  retransmission, 0.5 s: the controlling agent's direct pair succeeds sooner, and the controlled agent — which
  completes only once its own check of the nominated pair succeeded — completes with it.

Without a sign — a symmetric NAT, UDP blocked, relay-only — a relayed pair is nominated as soon as it succeeds,
one round trip later than before. The controlled agent uses the pair the controlling one nominates.

Like :mod:`p2pd.transfer.quickice`, this reaches into private aioice attributes, so it applies only
where their shape is the one it was written for (:func:`shape_problem`; ``tests/transfer/test_directfirst.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from p2pd.transfer.sockets import ice_connection, release_problem

HOLD = 1.0  # seconds a relayed pair's nomination waits, from the first sign of a direct path
VERIFIED_AIOICE = ("0.13",)  # aioice releases whose Connection this was written against
_USES = ("check_start", "check_incoming", "build_request", "check_complete", "check_state", "check_start_task",
         "_check_list_maybe_fail")


def shape_problem(pc: Any) -> str | None:
    """Why :func:`prefer_direct` would leave ``pc`` as it is (``None``: it applies)."""
    import aioice
    import aioice.ice

    if (problem := release_problem(aioice, VERIFIED_AIOICE)) is not None:
        return problem
    if not callable(getattr(aioice.ice, "candidate_pair_priority", None)):
        return "aioice.ice has no candidate_pair_priority"
    missing = [name for name in _USES if not callable(getattr(aioice.ice.Connection, name, None))]
    if missing:
        return f"aioice's Connection has no {', '.join(missing)}"
    names = set(getattr(aioice.ice.Connection.check_start, "__code__", None).co_names)  # type: ignore[union-attr]
    if not {"remote_is_lite", "build_request", "nominated"} <= names:
        return "aioice's check_start no longer nominates by USE-CANDIDATE on its checks"
    conn = ice_connection(pc)
    if not isinstance(conn, aioice.ice.Connection):
        return "the connection has no aioice connection (yet)"
    for attr in ("_check_list", "_remote_candidates", "_check_list_done", "ice_controlling", "remote_is_lite"):
        if not hasattr(conn, attr):
            return f"the aioice connection has no {attr}"
    return None


def _relayed(pair: Any) -> bool:
    return bool(pair.local_candidate.type == "relay" or pair.remote_candidate.type == "relay")


class DirectFirst:
    """Stands in for one aioice connection's ``check_start``, ``check_incoming`` and ``_check_list_maybe_fail``
    (attributes of that instance only)."""

    def __init__(self, conn: Any) -> None:
        import aioice.ice
        from aioice import stun

        self.conn = conn
        self._state = aioice.ice.CandidatePair.State
        self._priority = aioice.ice.candidate_pair_priority
        self._transaction_error = stun.TransactionError
        self.loop: asyncio.AbstractEventLoop | None = None
        self.direct_sign_at: float | None = None  # loop time of the first sign of a direct path
        self.hold_over = False  # HOLD has passed since that sign: a relayed pair is nominated without waiting
        self.held: list[Any] = []  # relayed pairs that succeeded, not nominated
        self.nominating: asyncio.Task[None] | None = None
        self.retriggered: set[int] = set()  # ids of the pairs checked again at once (once each)
        self._timer: asyncio.TimerHandle | None = None
        self._stock_check_start = conn.check_start
        self._stock_check_incoming = conn.check_incoming
        self._stock_maybe_fail = conn._check_list_maybe_fail
        self._stock_close = conn.close
        conn.check_start = self.check_start
        conn.check_incoming = self.check_incoming
        conn._check_list_maybe_fail = self.maybe_fail
        conn.close = self.close

    # --- the relayed pairs' checks ------------------------------------------------------------------------

    def _applies(self) -> bool:
        return bool(self.conn.ice_controlling and not self.conn.remote_is_lite)

    async def check_start(self, pair: Any) -> None:
        conn, state = self.conn, self._state
        if not self._applies() or not _relayed(pair):
            return await self._stock_check_start(pair)
        self.loop = asyncio.get_running_loop()
        conn.check_state(pair, state.IN_PROGRESS)
        request = conn.build_request(pair, nominate=False)
        try:
            _, addr = await pair.protocol.request(request, pair.remote_addr,
                                                  integrity_key=conn.remote_password.encode("utf8"))
        except self._transaction_error as exc:
            if exc.response is not None and exc.response.error_code == 487:  # a role conflict: aioice's way
                return await self._stock_check_start(pair)
            return self._failed(pair)
        if addr != pair.remote_addr:  # (RFC 8445 §7.2.5.2.1, as aioice)
            return self._failed(pair)
        conn.check_state(pair, state.SUCCEEDED)
        self.held.append(pair)
        conn.check_complete(pair)  # valid, not nominated: the check list goes on
        self.decide()
        return None

    def _failed(self, pair: Any) -> None:
        """The pair's check failed, as aioice records it."""
        self.conn.check_state(pair, self._state.FAILED)
        self.conn.check_complete(pair)

    def decide(self) -> None:
        """Nominate the best held relayed pair now, or look again when the hold ends."""
        conn, state = self.conn, self._state
        if conn._check_list_done or not self.held or self.nominating is not None or self.loop is None \
                or not self._applies():
            return
        direct_left = any(not _relayed(p) and p.state in (state.FROZEN, state.WAITING, state.IN_PROGRESS)
                          for p in conn._check_list)
        if self.direct_sign_at is not None and not self.hold_over and direct_left:
            left = self.direct_sign_at + HOLD - self.loop.time()
            if left > 0:
                if self._timer is None:
                    self._timer = self.loop.call_later(left, self._hold_over)
                return
        best = max(self.held, key=lambda p: self._priority(p.local_candidate, p.remote_candidate, True))
        self.nominating = self.loop.create_task(self._nominate(best))

    def _hold_over(self) -> None:
        self._timer = None
        self.hold_over = True
        self.decide()

    async def _nominate(self, pair: Any) -> None:
        conn = self.conn
        request = conn.build_request(pair, nominate=True)
        try:
            await pair.protocol.request(request, pair.remote_addr, integrity_key=conn.remote_password.encode("utf8"))
        except self._transaction_error:
            self.held.remove(pair)
            self.nominating = None
            self._failed(pair)
            self.decide()
            return
        self.nominating = None
        if conn._check_list_done:  # a direct pair was nominated meanwhile
            return
        pair.nominated = True
        conn.check_complete(pair)  # nominated and succeeded: the check list is completed

    def maybe_fail(self) -> None:
        """aioice's check (is every pair done, none nominated?), unless a relayed pair that succeeded waits here:
        then that one is nominated instead."""
        if self.held and not self.conn._check_list_done and self._applies():
            self.decide()
            return
        self._stock_maybe_fail()

    # --- the peer's checks --------------------------------------------------------------------------------

    def check_incoming(self, message: Any, addr: tuple[str, int], protocol: Any) -> None:
        self._stock_check_incoming(message, addr, protocol)
        conn = self.conn
        if conn._check_list_done:
            return
        self.loop = asyncio.get_running_loop()
        direct = getattr(protocol.local_candidate, "type", None) != "relay" and \
            not any(c.type == "relay" and (c.host, c.port) == addr for c in conn._remote_candidates)
        if direct and self._applies() and self.direct_sign_at is None:
            self.direct_sign_at = self.loop.time()
        # Either role: the pair this check came over, if its own check is in progress, is checked again now. (The
        # controlled agent completes only once its own check of the nominated pair succeeded: with its first
        # request dropped by this side's NAT, that was aioice's retransmission, 0.5 s later.)
        for pair in conn._check_list:
            if pair.protocol is protocol and pair.remote_addr == addr and pair.state == self._state.IN_PROGRESS \
                    and id(pair) not in self.retriggered and pair.task is not None:
                self.retriggered.add(id(pair))
                pair.task.cancel()  # (its transaction ends with it; no retransmission is waited for)
                pair.task = None
                conn.check_state(pair, self._state.WAITING)
                conn.check_start_task(pair)

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self.nominating is not None and not self.nominating.done():
            self.nominating.cancel()
            with contextlib.suppress(BaseException):
                await self.nominating
        await self._stock_close()


def prefer_direct(pc: Any) -> DirectFirst | None:
    """Hold ``pc``'s relayed pairs back while a direct path opens (module docstring); ``None`` when it does not
    apply (:func:`shape_problem`) and aioice is left as it is. Call it once the data channel is created, before
    the descriptions are set."""
    if shape_problem(pc) is not None:
        return None
    return DirectFirst(ice_connection(pc))
