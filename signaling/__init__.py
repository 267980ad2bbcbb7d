"""p2pd signaling server: pairs peers by room name and relays their sealed WebRTC offers/answers.

- ``protocol.py``: the wire messages (msgspec structs, shared with p2pd's client), error and close codes.
- ``limits.py``: every limit (``ServerLimits``) and the sans-I/O counters enforcing them (token buckets,
  per-address counts, the socket gate, the forwarded-address rule).
- ``rooms.py``: the sans-I/O room registry — connections, rooms, relays, expiry — applying those limits.
- ``parsing.py``: client messages from raw frames, or a safe reason to refuse them.
- ``metrics.py``: the ``/metrics`` text exposition.
- ``ice.py``: the STUN/TURN servers handed to joined clients, with short-lived coturn REST credentials.
- ``server.py``: the thin websockets adapter (HTTP endpoints, static files, socket gating, TLS).
- ``page.py``: where the browser page is (installed with the package, or a checkout's ``web/``) and what it lacks.
- ``deploy.py`` and ``deploy/``: a coturn configuration for a public host, a systemd unit, an nginx example.
- ``__main__.py``: the ``p2pd-signal`` command.
"""
