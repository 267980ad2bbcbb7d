"""``p2pd send`` and ``p2pd receive`` end to end: pair by code → connect peer to peer → transfer → verify,
or fall back to a ``.a2a.json`` file.

- ``handover`` — the send and receive flows and the small UI interface they report through;
- ``notice``   — the sender's fallback notice to the receiver, and the receiver's reader of sealed signals;
- ``weblink``  — the browser page's link (and QR code) for a code.
"""
