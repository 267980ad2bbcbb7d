"""p2pd: hand an AI coding agent's conversation to another machine or another agent.

The packages, in the order the data flows through them:

- ``agents``       — each agent's sessions (Claude Code, Codex, Gemini): find, read, export, import; one registry.
- ``conversation`` — the A2A conversation document (model, reading/writing) and its transforms (summary,
                     agent teams, secret redaction, terminal rendering).
- ``blob``         — the wire container: header, codecs, SHA-256.
- ``pairing``      — short codes, the CPace PAKE, sealed signaling, the rendezvous with the signaling server.
- ``transfer``     — the peer connection and the chunked, verified, resumable transfer protocol over it.
- ``exchange``     — ``send`` and ``receive`` end to end (pair → connect → transfer, or fall back to a file).
- ``daemon``       — ``p2pd serve``: store, lifecycles, device network, HTTP API and MCP tools.
- ``cli``          — the ``p2pd`` command line; it drives everything above and nothing imports it.

``errors`` (failures as typed data, with exit codes), ``config`` (configuration) and ``support`` (atomic files,
the event loop runner) are used throughout.
"""

__version__ = "0.1.0"
