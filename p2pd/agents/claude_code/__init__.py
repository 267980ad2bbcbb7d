"""Claude Code sessions: reading transcripts, converting to and from A2A documents, importing for resume.

- ``agent``      — how this agent is described to :mod:`p2pd.agents.registry`;
- ``paths``      — where sessions live (``<config>/projects/<folder per cwd>/``), resolving ids and prefixes;
- ``transcript`` — line types and the active conversation chain (the parentUuid tree);
- ``blocks``     — content blocks ⇄ A2A parts;
- ``export``     — a session file (with subagents and spilled tool results) → document;
- ``restore``    — document → the exact source lines;
- ``synthesize`` — messages from elsewhere → Claude Code lines;
- ``importer``   — writing a resumable session (linear chain, answered tool calls, safe paths).
"""

NAME = "claude-code"  # the platform name in documents and on the command line
