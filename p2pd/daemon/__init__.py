"""``p2pd serve``: the local daemon. See DAEMON.md (API, MCP, store) and DEVICES.md (paired devices) beside this file.

Files and their roles:

- Entry and surfaces: ``serve.py`` (runs uvicorn, daemon.json, signals), ``api.py`` (HTTP API; errors carry their
  cause, status from ``HTTP_STATUS``), ``mcp_tools.py`` (MCP tools; errors ``[cause] message``), ``client.py`` (the
  CLI's HTTP client; rebuilds errors with ``errors.from_wire``), ``hook.py`` (Claude Code hooks: settings, start).
- What the daemon does: ``service.py`` (``DaemonService``: the one object the API and MCP call),
  ``code_transfers.py`` (sends and receives with a pairing code), ``inbox.py`` (received conversations, import),
  ``handoff_work.py`` (work on handoffs both sides: imports, worker reports, claim leases, a resumed session's
  context), ``housekeeping.py`` (outbox and partial receives pruned by age and size; ``p2pd gc``).
- Lifecycles (pure: a state enum, a transition table, one diagram): ``transfers.py`` (transfer states and what a
  failure means, decided on causes), ``handoffs.py`` (handoff states and the context package), ``offers.py``
  (handoffs offered to this daemon, the receiving side), ``device_state.py`` (device-session states and retry
  policy).
- Running transfers: ``running.py`` (the one registry that starts and cancels them; the throttled progress writer).
- Storage (synchronous): ``store.py`` (SQLite store, enforces the lifecycles), ``rows.py`` (schema, migrations,
  row types), ``home.py`` (the home folder and token).
- Paired devices: ``identity.py`` (this device's key and name), ``devices.py`` (the paired-device book),
  ``device_pairing.py`` (``p2pd pair``), ``peer_protocol.py`` (sealed control messages), ``network.py`` (the device
  network: sessions, handoff and link control, the dispatch of control messages), ``device_session.py`` (one
  device's control channel and outbox worker), ``device_transfers.py`` (transfers to and from devices),
  ``room_waits.py`` (when a transfer the receiving device's disk refused is sent again),
  ``offer_desk.py`` (offers recorded, claimed, the worker's reports sent back),
  ``outbox.py`` (packed blobs kept for resume; exports), ``packer.py`` (the packing process: a conversation
  written to a file, never built in the daemon), ``ready_blob.py`` (an outbox blob as a code send's stream),
  ``links.py`` (fan-out groups of devices).
- Agent sessions (seeds 002, 003): ``agent_sessions.py`` (the one object the API and MCP call for them),
  ``session_api.py`` / ``session_tools.py`` (their HTTP routes and MCP tools), ``delegations.py`` (delegation
  lifecycle, pure), ``delegating.py`` (fork a session into a folder or worktree, start and watch its agent),
  ``worktree.py`` (``git worktree add``), ``session_links.py`` (session-link rules, pure), ``session_desk.py``
  (links, turn output and session messages on the store), ``session_relay.py`` (the same across paired devices),
  ``session_hooks.py`` (the SessionStart/UserPromptSubmit/Stop/SessionEnd hook events), ``turn_output.py`` (a
  transcript's last turn), ``session_tables.py`` (their SQLite tables, enforcing the lifecycles).
"""
