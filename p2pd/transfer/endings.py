"""How both state machines end a transfer early: cancel, local failure, silence, lost connection.

Shared by :class:`~p2pd.transfer.sender.Sender` and :class:`~p2pd.transfer.receiver.Receiver`; pure, like them.
"""

from __future__ import annotations

from enum import Enum
from typing import ClassVar

from p2pd.transfer.events import Action, Failed, Failure, SendFrame
from p2pd.transfer.frames import Cancel, Code, Error, encode, reason_text


class Endings:
    """Mixin: a subclass sets the class attributes and implements ``finished`` and ``_frame_id``."""

    IDLE: ClassVar[Enum]
    FAILED: ClassVar[Enum]
    SILENCE: ClassVar[str]  # "no data from the peer" / "no response from the peer"
    state: Enum
    failure: Failure | None

    @property
    def finished(self) -> bool:
        raise NotImplementedError

    def _frame_id(self) -> bytes:
        raise NotImplementedError

    def cancel(self, reason: str = "cancelled") -> list[Action]:
        """This side gives up: tell the peer (CANCEL) and stop."""
        if self.finished:
            return []
        if self.state is self.IDLE:
            return self._fail(Code.CANCELLED, reason, by_peer=False)
        frame = encode(Cancel(self._frame_id(), Code.CANCELLED, reason_text(reason)))
        return [SendFrame(frame), *self._fail(Code.CANCELLED, reason, by_peer=False)]

    def fail(self, code: Code, reason: str) -> list[Action]:
        """A local failure (storage, bug, protocol): tell the peer (ERROR) and stop."""
        if self.finished:
            return []
        if self.state is self.IDLE:
            return self._fail(code, reason, by_peer=False)
        return [SendFrame(encode(Error(self._frame_id(), code, reason_text(reason)))),
                *self._fail(code, reason, by_peer=False)]

    def timeout(self, seconds: float) -> list[Action]:
        """Nothing arrived from the peer for ``seconds`` while it was expected to."""
        return self.fail(Code.TIMEOUT, f"{self.SILENCE} for {seconds:g} s")

    def connection_lost(self, reason: str) -> list[Action]:
        """The channel is gone: nothing can be sent any more."""
        if self.finished:
            return []
        return self._fail(Code.PEER_GONE, reason, by_peer=False)

    def _protocol_error(self, reason: str) -> list[Action]:
        return self.fail(Code.PROTOCOL, reason)

    def _fail(self, code: int, reason: str, *, by_peer: bool) -> list[Action]:
        self.state = self.FAILED
        self.failure = Failure(code=code, reason=reason, by_peer=by_peer)
        return [Failed(self.failure)]
