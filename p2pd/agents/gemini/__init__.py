"""Gemini CLI chat recordings (the JSON and the JSONL formats) → A2A conversation documents (read only).

- ``agent``  — how this agent is described to :mod:`p2pd.agents.registry`;
- ``paths``  — where sessions live (``$GEMINI_DIR/tmp/<project hash>/chats/``) and telling its files apart;
- ``timeline`` — which version of each message a document keeps, where, under which id, whether rewound;
- ``export`` — a session file → document (whole);
- ``streamed`` — a JSONL recording → document, a line at a time (memory bounded by a message).
"""

NAME = "gemini"  # the platform name in documents and on the command line
