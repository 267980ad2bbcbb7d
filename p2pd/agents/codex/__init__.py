"""OpenAI Codex CLI rollouts: reading (lossless), restoring, and importing for ``codex resume``.

- ``agent``    — how this agent is described to :mod:`p2pd.agents.registry`;
- ``paths``    — where rollouts live (``$CODEX_HOME/sessions/YYYY/MM/DD/``), resolving ids and prefixes;
- ``rollout``  — reading a ``.jsonl``/``.jsonl.zst`` rollout into lines (whole, or one at a time);
- ``items``    — response items ⇄ A2A parts;
- ``export``   — a rollout → document;
- ``streamed`` — a rollout → document in the line layout, converted as it is written (memory: a line);
- ``restore``  — document → the exact rollout lines;
- ``importer`` — writing a resumable rollout (same-agent line for line, or rebuilt from another agent).
"""

NAME = "codex"  # the platform name in documents and on the command line
