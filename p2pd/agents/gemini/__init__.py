"""Gemini CLI chat recordings (the JSON and the JSONL formats) → A2A conversation documents (read only).

- ``agent``  — how this agent is described to :mod:`p2pd.agents.registry`;
- ``paths``  — where sessions live (``$GEMINI_DIR/tmp/<project hash>/chats/``) and telling its files apart;
- ``export`` — a session file → document.
"""

NAME = "gemini"  # the platform name in documents and on the command line
