"""Conversation blobs over a WebRTC data channel: chunked, flow-controlled, SHA-256 verified, resumable,
cancellable (protocol: ``SPEC.md``).

``frames``, ``sender``, ``receiver`` and ``plan`` are sans-I/O; ``channel`` runs them over aiortc and
``partial`` keeps the receiver's resumable state on disk. ``peer`` makes the WebRTC connection; ``ice`` picks
its STUN/TURN servers (local config merged with the signaling server's, every TURN URL probed), names the path
taken and explains a failure.
"""

from p2pd.errors import TransferCancelledError
from p2pd.transfer.channel import ReceivedBlob, TransferControl, TransferResult, attach, receive_blob, send_blob
from p2pd.transfer.frames import Offer, OfferInfo

__all__ = ["Offer", "OfferInfo", "ReceivedBlob", "TransferCancelledError", "TransferControl",
           "TransferResult", "attach", "receive_blob", "send_blob"]
