"""Failure → typed error: class, cause and party follow the reason code and who ended the transfer; the peer's
text is kept apart (peer_text) and shown escaped; nothing is decided on text."""

from __future__ import annotations

import pytest

from p2pd.errors import (
    BusyError,
    Cause,
    DeclinedError,
    P2pdError,
    Party,
    PeerGoneError,
    PeerTimeoutError,
    ProtocolError,
    StorageError,
    TooLargeError,
    TransferCancelledError,
    TransferFailedError,
    from_wire,
)
from p2pd.transfer.events import Failure
from p2pd.transfer.frames import Code, code_name


@pytest.mark.parametrize(("code", "by_peer", "cls", "cause", "party"), [
    (Code.CANCELLED, False, TransferCancelledError, Cause.CANCELLED, Party.LOCAL),
    (Code.CANCELLED, True, TransferCancelledError, Cause.CANCELLED, Party.PEER),
    (Code.DECLINED, False, DeclinedError, Cause.DECLINED, Party.LOCAL),
    (Code.DECLINED, True, DeclinedError, Cause.DECLINED, Party.PEER),
    (Code.BUSY, True, BusyError, Cause.BUSY, Party.PEER),
    (Code.BUSY, False, BusyError, Cause.BUSY, Party.LOCAL),
    (Code.TOO_LARGE, False, TooLargeError, Cause.TOO_LARGE, Party.PEER),  # the peer offered over our cap
    (Code.TOO_LARGE, True, DeclinedError, Cause.DECLINED, Party.PEER),  # the peer refused our size
    (Code.UNSUPPORTED_CODEC, True, DeclinedError, Cause.DECLINED, Party.PEER),
    (Code.PROTOCOL, False, ProtocolError, Cause.PROTOCOL, Party.PEER),
    (Code.PROTOCOL, True, ProtocolError, Cause.PROTOCOL, Party.PEER),
    (Code.TIMEOUT, False, PeerTimeoutError, Cause.TIMEOUT, Party.PEER),
    (Code.PEER_GONE, False, PeerGoneError, Cause.PEER_GONE, Party.PEER),
    (Code.CHECKSUM, False, TransferFailedError, Cause.CHECKSUM_MISMATCH, Party.PEER),
    (Code.IO, False, StorageError, Cause.STORAGE, Party.LOCAL),  # this side's disk refused: exit 12, as a write
    (Code.IO, True, TransferFailedError, Cause.PEER_STORAGE, Party.PEER),  # the peer's disk: sent again later
    (Code.INTERNAL, False, TransferFailedError, Cause.TRANSFER_FAILED, Party.LOCAL),
    (999, True, TransferFailedError, Cause.TRANSFER_FAILED, Party.PEER),  # a code from a newer peer
])
def test_code_and_side_give_class_cause_and_party(code: int, by_peer: bool, cls: type[P2pdError], cause: Cause,
                                                   party: Party) -> None:
    exc = Failure(code, "some reason", by_peer).exception()
    assert type(exc) is cls
    assert (exc.cause, exc.party) == (cause, party)
    assert exc.peer_text == ("some reason" if by_peer else None)
    assert exc.details["code"] in (Code(code).name.lower() if code in Code._value2member_map_ else f"code {code}",)


def test_cancelled_and_gone_transfers_stay_transfer_failures_for_callers_that_catch_those() -> None:
    for code in (Code.CANCELLED, Code.PEER_GONE, Code.TIMEOUT, Code.PROTOCOL, Code.CHECKSUM):
        assert isinstance(Failure(code, "r", False).exception(), TransferFailedError)


def test_peer_text_is_kept_apart_and_this_sides_reason_is_escaped_in_the_message() -> None:
    text = "stop\x1b[2J\u202eevil"
    exc = Failure(Code.CANCELLED, text, True).exception()
    assert str(exc) == "the transfer was cancelled by the peer"  # the CLI shows peer_text as what the peer said
    assert exc.peer_text == text
    assert str(Failure(Code.CANCELLED, text, False).exception()) == \
        "the transfer was cancelled: stop\\x1b[2J\\u202eevil"


def test_a_receiver_is_told_what_its_sender_said_in_the_senders_words() -> None:
    # io from the receiver: its disk; from the sender: the sender could not read what it was sending
    assert "receiver could not store" in Failure(Code.IO, "disk full", True).message()
    heard = Failure(Code.IO, "cannot read the blob", True).exception("sender")
    assert "sender could not read or pack" in str(heard) and "receiver" not in str(heard)
    assert heard.cause is Cause.PEER_STORAGE and heard.party is Party.PEER
    # a code only a receiver has reason to send, from a sender (a broken or hostile one): a protocol error, in
    # words that blame no receiver and show no number
    for code in (Code.DECLINED, Code.CHECKSUM, Code.TOO_LARGE, Code.NOT_ALLOWED, Code.UNSUPPORTED_CODEC,
                 Code.BUSY, Code.INVALID, Code.RATE_LIMITED):
        heard = Failure(code, "x", True).exception("sender")
        said = str(heard)
        assert said.startswith("the sender broke the transfer protocol") and "the receiver" not in said, said
        assert str(int(code)) not in said.replace("p2pd", ""), said
        assert type(heard) is ProtocolError and heard.cause is Cause.PROTOCOL and heard.party is Party.PEER
        assert heard.peer_text == "x" and heard.details == {"code": code_name(code)}
        # the same code from a receiver keeps its own meaning (a sender hears a refusal, a damaged copy…)
        assert type(Failure(code, "x", True).exception("receiver")) is not ProtocolError
    # words that name no side stay as they are; this side's own failures do not depend on the peer's role
    assert Failure(Code.CANCELLED, "x", True).message("sender") == Failure(Code.CANCELLED, "x", True).message()
    assert Failure(Code.IO, "full", False).message("sender") == Failure(Code.IO, "full", False).message()


@pytest.mark.parametrize("peer", ["receiver", "sender"])
@pytest.mark.parametrize("by_peer", [True, False])
@pytest.mark.parametrize("code", [*Code, 99])
def test_messages_are_words_not_internal_names_and_do_not_stutter(code: int, by_peer: bool, peer: str) -> None:
    message = Failure(code, "some reason", by_peer).message(peer)
    assert "_" not in message and "(" + code_name(code) + ")" not in message, message
    words = message.replace(";", " ").replace(":", " ").split()
    for n in (3, 4):  # no phrase of three or four words said twice ("unreachable: signaling server unreachable")
        phrases = [" ".join(words[i:i + n]) for i in range(len(words) - n + 1)]
        assert len(phrases) == len(set(phrases)), message


def test_the_error_survives_the_http_api() -> None:
    exc = Failure(Code.BUSY, "being received", True).exception()
    back = from_wire(exc.to_wire())
    assert type(back) is BusyError and back.party is Party.PEER and back.peer_text == "being received"
