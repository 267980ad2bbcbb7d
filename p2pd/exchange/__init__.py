"""``p2pd send`` and ``p2pd receive`` end to end: pair by code → connect peer to peer → transfer → verify,
or fall back to a ``.a2a.json`` file.

- ``handover`` — the send and receive flows and the small UI interface they report through;
- ``producing``, ``producer`` — the conversation packed while it is sent, by a process of its own (``producer``:
  a session converted as a stream, ``document_file``: a document checked, then sent as it is); ``spare``: that
  process started before its job is known;
- ``consuming``, ``consumer``, ``packing`` — the receiver's checking process and the files it stages;
- ``notice``   — the sender's fallback notice to the receiver, and the receiver's reader of sealed signals;
- ``weblink``  — the browser page's link (and QR code) for a code.
"""
