"""Failures as data: every p2pd error carries *what* happened (a :class:`Cause`), *who* caused it (a
:class:`Party`) and the exit code the CLI returns for it.

Code decides on ``error.cause`` / ``error.party`` or on the subclass — never on the message text. The message is
for people: the CLI prints ``str(error)`` as one line (no traceback unless ``--debug``). Text that came from a
peer or a server (a reason in a REJECT frame, a server's close reason) is kept apart in ``peer_text`` and is
only ever displayed, through :func:`p2pd.support.text.visible`.

The HTTP API sends ``{"error": message, "cause": …, "party": …, "exit_code": …}`` and its client rebuilds the
same class with :func:`from_wire`; MCP tool errors carry the cause too. Messages never contain secrets or pairing
codes' words.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from enum import IntEnum, StrEnum
from typing import Any


class ExitCode(IntEnum):
    """Process exit codes of the ``p2pd`` CLI (documented in README.md)."""

    OK = 0
    ERROR = 1  # an unexpected failure
    USAGE = 2  # bad command line (argparse's own code)
    NOT_FOUND = 3  # a session, file or id that does not exist
    INVALID_INPUT = 4  # malformed transcript/document/blob, checksum mismatch, decompression failure
    TOO_LARGE = 5  # a size claim over the configured cap
    TRANSFER_FAILED = 6  # peer gone, protocol error, cancelled
    FALLBACK_WRITTEN = 7  # no peer: the conversation was written as a .a2a.json file instead
    DECLINED = 8  # the other side declined the offer
    WRONG_CODE = 9  # the pairing code did not match on both sides
    CONFLICT = 10  # refusing to overwrite something that exists
    KEY_CHANGED = 11  # a paired device presented another key than the one pinned when it paired
    STORAGE = 12  # this machine refused a write: a full disk, a missing folder, no permission
    INTERRUPTED = 130


class Party(StrEnum):
    """Who caused a failure."""

    LOCAL = "local"  # this process: its input, its disk, its user
    PEER = "peer"  # the other side of the transfer or pairing
    SERVER = "server"  # the signaling server
    NETWORK = "network"  # nobody in particular: a connection that could not be made or was lost


class Cause(StrEnum):
    """What happened, as a stable name (used on the HTTP API, in MCP errors and in the daemon's records)."""

    UNEXPECTED = "unexpected"
    USAGE = "usage"
    NOT_FOUND = "not_found"
    INVALID_INPUT = "invalid_input"
    CHECKSUM_MISMATCH = "checksum_mismatch"
    CODEC = "codec"
    TOO_LARGE = "too_large"
    CONFLICT = "conflict"
    STORAGE = "storage"  # a local file system refused a write (disk full, name too long, permission)
    PEER_STORAGE = "peer_storage"  # the peer's file system: the receiver's refused what was sent (its disk is full…)
    # or the sender could not read what it was sending
    UNAUTHORIZED = "unauthorized"  # the daemon refused the token
    DAEMON_NOT_RUNNING = "daemon_not_running"
    NO_NETWORK = "no_network"  # the daemon runs without a device network
    INTERRUPTED = "interrupted"
    # pairing and signaling
    WRONG_CODE = "wrong_code"
    NO_PEER = "no_peer"  # nobody joined the code's room within the timeout
    SIGNALING_UNREACHABLE = "signaling_unreachable"  # could not reach the signaling server at all
    SIGNALING_LOST = "signaling_lost"  # the connection to the signaling server dropped or was closed
    SIGNALING_REFUSED = "signaling_refused"  # the server refused (room full, protocol version, a message…)
    ROLE_CLASH = "role_clash"  # both peers joined as sender (or both as receiver)
    TAMPERED = "tampered"  # a sealed message failed authentication
    # connection and transfer
    CONNECTION_FAILED = "connection_failed"  # no peer-to-peer connection could be made (ICE/DTLS)
    PEER_GONE = "peer_gone"  # the peer went away: data channel closed, peer left, device disconnected
    TIMEOUT = "timeout"  # the peer stopped answering
    PROTOCOL = "protocol"  # the peer broke the protocol (malformed or unexpected message)
    BUSY = "busy"  # the receiver is still receiving the same blob in another (older) transfer
    DECLINED = "declined"  # the other side declined the offer
    NOT_ALLOWED = "not_allowed"  # the receiver's accept policy takes nothing from this sender
    RATE_LIMITED = "rate_limited"  # the receiver's accept policy: this sender sent too much in the last hour
    LIMIT_REACHED = "limit_reached"  # a paired device holds as much here as it may (e.g. session links)
    CANCELLED = "cancelled"
    TRANSFER_FAILED = "transfer_failed"  # the transfer stopped for another reason (see the message)
    DEVICE_OFFLINE = "device_offline"  # a paired device is not connected
    KEY_CHANGED = "key_changed"


class P2pdError(Exception):
    """Base class: a failure with a clear one-line message and its cause as data.

    ``peer_text`` holds text written by a peer or a server, verbatim; it is never compared, only displayed
    (escaped). ``details`` holds structured extras (sizes, ids, fingerprints) for callers that want them.
    """

    exit_code: ExitCode = ExitCode.ERROR
    cause: Cause = Cause.UNEXPECTED
    party: Party = Party.LOCAL

    def __init__(self, message: str, *, cause: Cause | None = None, party: Party | None = None,
                 exit_code: ExitCode | None = None, peer_text: str | None = None,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        if cause is not None:
            self.cause = cause
        if party is not None:
            self.party = party
        if exit_code is not None:
            self.exit_code = exit_code
        self.peer_text = peer_text
        self.details: dict[str, Any] = dict(details or {})

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""

    def to_wire(self) -> dict[str, Any]:
        """The error as the HTTP API and MCP send it (see :func:`from_wire`)."""
        out: dict[str, Any] = {"error": self.message, "cause": self.cause.value, "party": self.party.value,
                               "exit_code": int(self.exit_code), "kind": type(self).__name__}
        if self.peer_text is not None:
            out["peer_text"] = self.peer_text
        if self.details:
            out["details"] = self.details
        return out


class NotFoundError(P2pdError):
    exit_code = ExitCode.NOT_FOUND
    cause = Cause.NOT_FOUND


class InvalidInputError(P2pdError):
    exit_code = ExitCode.INVALID_INPUT
    cause = Cause.INVALID_INPUT


class ChecksumMismatchError(InvalidInputError):
    cause = Cause.CHECKSUM_MISMATCH


class CodecError(InvalidInputError):
    cause = Cause.CODEC


class StorageError(P2pdError):
    """This machine refused a write: a full disk, a missing folder, no permission (``details.errno``)."""

    exit_code = ExitCode.STORAGE
    cause = Cause.STORAGE


def storage_error(exc: OSError, what: object) -> StorageError:
    """The typed error for an OSError met while writing ``what`` (a path, or words naming it)."""
    return StorageError(f"cannot write {what}: {exc.strerror or exc}", details={"errno": exc.errno})


@contextlib.contextmanager
def writing(what: object, *, reading: str | os.PathLike[str] | None = None) -> Iterator[None]:
    """An OSError inside is a write this machine refused, raised as :func:`storage_error` naming ``what``; one
    about the file being read (``reading``) goes on as it is. A StorageError from further in (a child process
    that named its staging file) is named ``what`` too: the file or folder the person knows."""
    try:
        yield
    except StorageError as exc:
        errno = exc.details.get("errno")
        reason = os.strerror(errno) if isinstance(errno, int) else str(exc)
        raise StorageError(f"cannot write {what}: {reason}", details=exc.details) from exc
    except OSError as exc:
        if reading is not None and exc.filename is not None and os.fspath(exc.filename) == os.fspath(reading):
            raise
        raise storage_error(exc, what) from exc


class TooLargeError(P2pdError):
    exit_code = ExitCode.TOO_LARGE
    cause = Cause.TOO_LARGE


class ConflictError(P2pdError):
    exit_code = ExitCode.CONFLICT
    cause = Cause.CONFLICT


class BusyError(ConflictError):
    """The receiver still holds the same blob in another (older) transfer: try again in a moment."""

    cause = Cause.BUSY
    party = Party.PEER


class TransferFailedError(P2pdError):
    """A transfer or pairing that could not go on. ``cause`` says why; subclasses exist where code branches."""

    exit_code = ExitCode.TRANSFER_FAILED
    cause = Cause.TRANSFER_FAILED
    party = Party.NETWORK


class PeerGoneError(TransferFailedError):
    """The peer went away (data channel closed, peer left the room, device disconnected): worth resuming."""

    cause = Cause.PEER_GONE
    party = Party.PEER


class NoPeerError(TransferFailedError):
    """Nobody joined the code's room within the timeout."""

    cause = Cause.NO_PEER
    party = Party.PEER


class ConnectionFailedError(TransferFailedError):
    """No peer-to-peer connection could be made (ICE or DTLS did not complete)."""

    cause = Cause.CONNECTION_FAILED
    party = Party.NETWORK


class PeerTimeoutError(TransferFailedError):
    """The peer stopped answering within the allowed time."""

    cause = Cause.TIMEOUT
    party = Party.PEER


class SignalingError(TransferFailedError):
    """The signaling server could not be reached, dropped us, or refused (``cause`` tells which)."""

    cause = Cause.SIGNALING_LOST
    party = Party.SERVER


class ProtocolError(TransferFailedError):
    """The peer broke the protocol: a malformed or unexpected message."""

    cause = Cause.PROTOCOL
    party = Party.PEER


class TransferCancelledError(TransferFailedError):
    """The transfer was cancelled, by this side (``party`` LOCAL) or by the peer (PEER)."""

    cause = Cause.CANCELLED
    party = Party.LOCAL


class DeviceOfflineError(TransferFailedError):
    """A paired device is not connected right now."""

    cause = Cause.DEVICE_OFFLINE
    party = Party.PEER


class DeclinedError(P2pdError):
    exit_code = ExitCode.DECLINED
    cause = Cause.DECLINED
    party = Party.PEER


class WrongCodeError(P2pdError):
    exit_code = ExitCode.WRONG_CODE
    cause = Cause.WRONG_CODE
    party = Party.PEER


class DeviceKeyChangedError(P2pdError):
    """A paired device could not prove the key pinned at pairing: refused, never trusted silently."""

    exit_code = ExitCode.KEY_CHANGED
    cause = Cause.KEY_CHANGED
    party = Party.PEER


class InterruptedByUserError(P2pdError):
    """Ctrl-C or a signal ended the command (the builtin InterruptedError means EINTR, not this)."""

    exit_code = ExitCode.INTERRUPTED
    cause = Cause.INTERRUPTED


# The class each cause is rebuilt as on the client side of the HTTP API (see from_wire).
CLASS_BY_CAUSE: dict[Cause, type[P2pdError]] = {
    Cause.UNEXPECTED: P2pdError,
    Cause.USAGE: InvalidInputError,
    Cause.NOT_FOUND: NotFoundError,
    Cause.INVALID_INPUT: InvalidInputError,
    Cause.CHECKSUM_MISMATCH: ChecksumMismatchError,
    Cause.CODEC: CodecError,
    Cause.TOO_LARGE: TooLargeError,
    Cause.CONFLICT: ConflictError,
    Cause.STORAGE: StorageError,
    Cause.PEER_STORAGE: TransferFailedError,
    Cause.UNAUTHORIZED: P2pdError,
    Cause.DAEMON_NOT_RUNNING: P2pdError,
    Cause.NO_NETWORK: ConflictError,
    Cause.INTERRUPTED: InterruptedByUserError,
    Cause.WRONG_CODE: WrongCodeError,
    Cause.NO_PEER: NoPeerError,
    Cause.SIGNALING_UNREACHABLE: SignalingError,
    Cause.SIGNALING_LOST: SignalingError,
    Cause.SIGNALING_REFUSED: SignalingError,
    Cause.ROLE_CLASH: TransferFailedError,
    Cause.TAMPERED: TransferFailedError,
    Cause.CONNECTION_FAILED: ConnectionFailedError,
    Cause.PEER_GONE: PeerGoneError,
    Cause.TIMEOUT: PeerTimeoutError,
    Cause.PROTOCOL: ProtocolError,
    Cause.BUSY: BusyError,
    Cause.DECLINED: DeclinedError,
    Cause.NOT_ALLOWED: DeclinedError,
    Cause.RATE_LIMITED: DeclinedError,
    Cause.LIMIT_REACHED: DeclinedError,
    Cause.CANCELLED: TransferCancelledError,
    Cause.TRANSFER_FAILED: TransferFailedError,
    Cause.DEVICE_OFFLINE: DeviceOfflineError,
    Cause.KEY_CHANGED: DeviceKeyChangedError,
}


def from_wire(data: dict[str, Any], *, fallback_message: str = "the daemon reported an error") -> P2pdError:
    """Rebuild the error :meth:`P2pdError.to_wire` sent: same class, cause, party, exit code and peer text."""
    try:
        cause = Cause(str(data.get("cause")))
    except ValueError:
        cause = Cause.UNEXPECTED
    try:
        party: Party | None = Party(str(data.get("party")))
    except ValueError:
        party = None
    exit_code: ExitCode | None
    try:
        exit_code = ExitCode(int(data.get("exit_code")))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        exit_code = None
    message = data.get("error")
    details = data.get("details")
    peer_text = data.get("peer_text")
    return CLASS_BY_CAUSE[cause](
        message if isinstance(message, str) and message else fallback_message,
        cause=cause, party=party, exit_code=exit_code,
        peer_text=peer_text if isinstance(peer_text, str) else None,
        details=details if isinstance(details, dict) else None)


def cause_of(exc: BaseException) -> Cause:
    """The cause of any exception (``UNEXPECTED`` for anything that is not a :class:`P2pdError`)."""
    return exc.cause if isinstance(exc, P2pdError) else Cause.UNEXPECTED
