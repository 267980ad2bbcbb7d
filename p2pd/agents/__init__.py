"""Agents' own session formats, to and from the conversation document.

- ``spec``        — what p2pd knows about one agent (:class:`~p2pd.agents.spec.Agent`), and typed import notes;
- ``registry``    — the agents, each described once: names, aliases, detect, list, resolve, export, import,
  restore; every other module asks it instead of branching on agent names;
- ``claude_code/``, ``codex/``, ``gemini/`` — one subpackage per agent: ``agent.py`` describes it to the registry;
  ``paths`` (where its sessions live), reading its transcript format, ``export`` (file → document),
  ``restore``/``importer`` (document → a session it resumes);
- ``jsonl``       — reading any JSONL file into parsed lines (malformed ones kept verbatim with their reason), and
  the session's own time for ``createdAt``;
- ``counting``    — a document's counts, the same for every agent and for documents read from a file;
- ``sources``     — loading any supported file into a document, and a session named by id, prefix or ``latest``;
- ``sessions``    — listing local sessions across agents;
- ``importing``   — importing a document into the agent the user names;
- ``crossagent``  — carrying another agent's turns into Claude Code or Codex (what cannot carry: ``CROSSAGENT.md``).
"""
