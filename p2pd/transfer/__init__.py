"""Conversation blobs over a WebRTC data channel: chunked, flow-controlled, SHA-256 verified, resumable,
cancellable (protocol: ``SPEC.md``).

Sans-I/O protocol core (pure, no asyncio, no aiortc):

* ``frames.py`` — the wire format: encode/decode every frame, reason codes, peer text made safe to show.
* ``sender.py`` / ``receiver.py`` — the two state machines (state → allowed frames as a table, ``ALLOWED``).
* ``plan.py`` — which chunks move (the complement of what the receiver holds).
* ``endings.py`` — how both machines end early (cancel, failure, timeout, lost channel).
* ``events.py`` — the actions the machines return, and :class:`Failure` → typed :mod:`p2pd.errors` exception.

Adapter (asyncio, any channel shaped like ``RTCDataChannel``):

* ``channel.py`` — the entry points: ``send_blob``, ``receive_blob``, ``attach``.
* ``control.py`` — ``TransferControl`` (cancel from outside), ``TransferResult``, ``ReceivedBlob``.
* ``datachannel.py`` — the typed ``DataChannel`` protocol: what the adapter uses of a channel.
* ``tap.py`` — the event tap: channel events (messages, close, ICE/DTLS failure) → one ordered queue.
* ``runloop.py`` — the run loop shared by both sides: drain, perform actions, idle timer, jobs, flush.
* ``jobs.py`` — the blocking work run in worker threads (read spans, write batches, open the blob) and
  ``JobDone``, how results come back.
* ``sending.py`` / ``receiving.py`` — the two sides: read-ahead and backpressure; decision, batched durable
  writes, digest and rename.
* ``partial.py`` — the receiver's resumable state on disk.
* ``peer.py`` — making the aiortc peer connection (with ``ice.py``, the only modules here that import aiortc at
  import time; both import ``nomedia.py`` first, so aiortc comes without PyAV, which data channels never use,
  and ``lazydns.py``, so aioice's dnspython loads only when a peer hands over an mDNS name).
* ``sockets.py`` / ``datapath.py`` / ``quickice.py`` / ``directfirst.py`` — per-connection adaptations of
  aioice/aiortc: UDP buffers; delayed SACKs (less CPU per MB on both ends); on to DTLS once ICE's check list is
  completed; a relayed pair not nominated while a direct path opens, and a check in progress sent again when the
  peer's check arrives.
* ``ice.py`` — which STUN/TURN servers it uses (local configuration merged with the signaling server's, every
  TURN URL probed so UDP, TCP and TLS relays are all tried), the path taken, and a failure explained.

This ``__init__`` imports nothing, so ``import p2pd.transfer.frames`` stays light.
"""
