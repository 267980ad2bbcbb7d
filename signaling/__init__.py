"""p2pd signaling server: pairs peers by room name and relays sealed WebRTC offers/answers.

``protocol`` (message models), ``rooms`` (sans-I/O registry and limits), ``server`` (websockets adapter, HTTP),
``ice`` (STUN/TURN and short-lived TURN credentials for joined clients), ``deploy`` (coturn config for a
public host), ``__main__`` (the ``p2pd-signal`` command). Prose: ``PROTOCOL.md``.
"""
