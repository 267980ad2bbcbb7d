"""Errors every p2pd command can raise, each with the exit code the CLI returns for it.

The CLI prints ``str(error)`` as one line (no traceback unless ``--debug``) and exits with
``error.exit_code``.
Messages never contain secrets or pairing codes' words.
"""

from __future__ import annotations

from enum import IntEnum


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
    INTERRUPTED = 130


class P2pdError(Exception):
    """Base class: a failure with a clear one-line reason."""

    exit_code: ExitCode = ExitCode.ERROR

    def __init__(self, message: str, *, exit_code: ExitCode | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class NotFoundError(P2pdError):
    exit_code = ExitCode.NOT_FOUND


class InvalidInputError(P2pdError):
    exit_code = ExitCode.INVALID_INPUT


class ChecksumMismatchError(InvalidInputError):
    pass


class CodecError(InvalidInputError):
    pass


class TooLargeError(P2pdError):
    exit_code = ExitCode.TOO_LARGE


class ConflictError(P2pdError):
    exit_code = ExitCode.CONFLICT


class TransferFailedError(P2pdError):
    exit_code = ExitCode.TRANSFER_FAILED


class DeclinedError(P2pdError):
    exit_code = ExitCode.DECLINED


class WrongCodeError(P2pdError):
    exit_code = ExitCode.WRONG_CODE


class DeviceKeyChangedError(P2pdError):
    """A paired device could not prove the key pinned at pairing: refused, never trusted silently."""

    exit_code = ExitCode.KEY_CHANGED
