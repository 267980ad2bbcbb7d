"""The adapter's entry points: send or receive one blob over a reliable, ordered data channel.

Thin by design — every protocol decision is in ``sender.py`` / ``receiver.py``; the run loop (``runloop.py``)
moves bytes, the sides (``sending.py``, ``receiving.py``) do their files' I/O in worker threads (``jobs.py``),
and the tap (``tap.py``) queues the channel's events. Call :func:`attach` on a channel as soon as it exists if
the transfer starts later: it buffers what arrives in between (aiortc drops messages nobody listens to).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from p2pd.blob.container import DEFAULT_MAX_RAW_SIZE, BlobHeader
from p2pd.errors import P2pdError, Party, TransferFailedError
from p2pd.transfer.control import ProgressCallback, ReceivedBlob, TransferControl, TransferResult
from p2pd.transfer.datachannel import DataChannel
from p2pd.transfer.frames import BASE_MESSAGE_SIZE, MAX_MESSAGE_SIZE, OfferInfo
from p2pd.transfer.jobs import open_blob
from p2pd.transfer.partial import Validate
from p2pd.transfer.receiving import MIN_RATE, RATE_WINDOW, Commit, Decide, ReceiveSide, Refusal
from p2pd.transfer.sending import HIGH_WATER, LOW_WATER, SendSide
from p2pd.transfer.streamstore import SinkFactory
from p2pd.transfer.tap import ChannelTap, attach


async def send_blob(channel: DataChannel, blob_path: Path, offer: OfferInfo, *,
                    on_progress: ProgressCallback | None = None, idle_timeout: float = 30.0,
                    max_message_size: int = BASE_MESSAGE_SIZE, control: TransferControl | None = None,
                    decision_timeout: float | None = None, high_water: int = HIGH_WATER,
                    low_water: int = LOW_WATER, alternatives: Sequence[Path] = ()) -> TransferResult:
    """Send the blob file at ``blob_path`` (``p2pd.blob`` format) over ``channel``; return once the receiver
    confirmed the SHA-256 of the whole payload.

    ``max_message_size`` is what this side advertises (16 KiB when the peer may be a browser; 64 KiB between
    daemons). ``idle_timeout`` fails the transfer when the peer stops answering; while the receiving user
    decides, ``decision_timeout`` applies instead (None: wait as long as the connection lives).
    ``on_progress(done, total)`` reports payload bytes the receiver acknowledged.
    ``alternatives``: blob files of the same conversation in other codecs (zstd), offered instead when the
    receiver's HELLO lists their codec; ``blob_path`` (lz4, which every peer speaks) otherwise.
    Raises DeclinedError (refused), BusyError (the receiver still holds an older attempt), TooLargeError,
    TransferCancelledError (cancelled, ``party`` says by whom), PeerGoneError, PeerTimeoutError,
    ConnectionFailedError, ProtocolError or TransferFailedError (see :meth:`Failure.exception`).
    """
    info = OfferInfo.normalized(offer.title, offer.platform, offer.session_id, offer.message_count)
    opened: list[tuple[int, BlobHeader]] = []
    try:
        for path in (blob_path, *alternatives):
            opened.append(await asyncio.to_thread(open_blob, Path(path)))
        side = SendSide(channel, *opened[0], info, max_message_size=max_message_size,
                        idle_timeout=idle_timeout, decision_timeout=decision_timeout, on_progress=on_progress,
                        control=control, high_water=high_water, low_water=low_water, alternatives=opened[1:])
    except BaseException:
        for fd, _ in opened:
            os.close(fd)
        raise
    return await side.run()


async def receive_blob(channel: DataChannel, dest_dir: Path, *, decide: Decide,
                       on_progress: ProgressCallback | None = None, idle_timeout: float = 30.0,
                       max_raw_size: int = DEFAULT_MAX_RAW_SIZE, max_message_size: int = MAX_MESSAGE_SIZE,
                       control: TransferControl | None = None, linger: float = 2.0,
                       validate: Validate | None = None, min_rate: float = MIN_RATE,
                       rate_window: float = RATE_WINDOW, stream_sink: SinkFactory | None = None,
                       commit: Commit | None = None) -> ReceivedBlob:
    """Receive one blob over ``channel`` into ``dest_dir``; return once it is verified and in place.

    ``validate(path)`` (in a worker thread) checks the verified blob before it is moved into place; if it raises,
    the blob is removed, the sender gets ERROR(invalid) instead of DONE and this raises InvalidInputError.
    A sender delivering under ``min_rate`` bytes/s over a ``rate_window``-second window (while chunks are due)
    is ended with PeerTimeoutError saying so.
    ``decide(offer)`` runs before any chunk flows: True accepts, False sends REJECT (DeclinedError here), a
    :class:`Refusal` sends REJECT with its code and reason (the error for that code here).
    ``stream_sink``: take streamed transfers too (SPEC.md §12): the payload goes to a sink made for the offer as
    it arrives, and the ReceivedBlob's ``path`` is what the sink's ``finish`` returned.
    ``commit(path)`` (in a worker thread) is the caller's commit point, once the blob is verified and in place and
    before DONE: True keeps it (it must have recorded that durably), False — cancelled meanwhile — sends CANCEL
    instead and this raises TransferCancelledError (``commit`` removes the blob).
    Offers over ``max_raw_size`` are refused without asking (TooLargeError). A broken transfer leaves its
    partial file under ``dest_dir/.p2pd-partial/`` and a later transfer of the same blob resumes from it.
    Raises TransferCancelledError (cancelled, either side), BusyError, PeerGoneError, PeerTimeoutError,
    ConnectionFailedError, ProtocolError or TransferFailedError (checksum mismatch, storage).
    """
    side = ReceiveSide(channel, Path(dest_dir), decide, max_message_size=max_message_size,
                       max_raw_size=max_raw_size, idle_timeout=idle_timeout, on_progress=on_progress,
                       control=control, linger=linger, validate=validate, min_rate=min_rate,
                       rate_window=rate_window, stream_sink=stream_sink, commit=commit)
    try:
        return await side.run()
    except P2pdError:
        raise
    except (OSError, ValueError) as exc:  # pragma: no cover - safety net: report, never leak a raw error
        raise TransferFailedError(f"transfer failed: {exc}", party=Party.LOCAL) from exc


__all__ = ["HIGH_WATER", "LOW_WATER", "ChannelTap", "DataChannel", "ReceivedBlob", "Refusal", "TransferControl",
           "TransferResult", "attach", "receive_blob", "send_blob"]
