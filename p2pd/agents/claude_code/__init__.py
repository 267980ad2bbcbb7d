"""Claude Code sessions: reading transcripts, converting to and from A2A documents, importing for resume."""
