"""Agents' own session formats, to and from the conversation document.

- ``claude_code/``, ``codex/``, ``gemini/`` — one subpackage per agent: where its sessions live, reading its
  transcript format, exporting to a document, restoring/importing for resume;
- ``sources``     — which agent wrote a file, and loading any supported file into a document;
- ``sessions``    — listing local sessions across agents and resolving ``latest``/ids/prefixes/paths;
- ``importing``   — importing a document into the agent the user names;
- ``crossagent``  — carrying another agent's turns into Claude Code (what cannot carry: ``CROSSAGENT.md``).
"""
