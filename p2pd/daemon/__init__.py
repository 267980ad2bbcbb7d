"""``p2pd serve``: the local daemon — home folder and token, SQLite store, handoff lifecycle, HTTP API, MCP tools,
the Claude Code hook, and the CLI's client for it. See DAEMON.md beside this file."""
