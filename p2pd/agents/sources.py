"""Loading any supported session or conversation file into a document, and a session named by id or prefix.

Which agent wrote a file is each agent's own ``detect`` (:mod:`p2pd.agents.registry`): Codex (``*.jsonl.zst``, or a
first line ``{"type", "payload", …}``), Gemini (session metadata first, or an older ``*.json`` session), Claude Code
(any other ``*.jsonl``); anything else (``.a2a.json``, an ``.a2a.p2pd`` blob) is a conversation document.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from p2pd.agents import registry
from p2pd.agents.gemini.paths import is_gemini_meta
from p2pd.errors import NotFoundError
from p2pd.support.gcpause import bulk_work

if TYPE_CHECKING:  # (pydantic's models: imported by what reads or builds one, not by `p2pd send`)
    from p2pd.agents.spec import StreamWriter
    from p2pd.conversation.model import ConversationDocument

detect = registry.detect
__all__ = ["detect", "document_file_name", "is_gemini_meta", "load_conversation", "load_file"]


def load_file(path: str | os.PathLike[str]) -> ConversationDocument:
    """Any session file or conversation document → ConversationDocument, with its title, summary and what its
    agent keeps beside the session (Claude Code's agent-team state)."""
    p = Path(path)
    if not p.is_file():
        raise NotFoundError(f"file not found: {p}")
    with bulk_work():  # millions of objects that all live on: collections would free nothing
        return _load_file(p)


def _load_file(p: Path) -> ConversationDocument:
    from p2pd.conversation.summary import summarize

    agent = registry.detect_agent(p)
    if agent is None:
        from p2pd.agents.counting import count
        from p2pd.conversation.document_io import read_document

        doc = read_document(p)
        doc.counts = count(doc)  # a document from another tool (A2A v0.3, a bare message list) has none stored
    else:
        doc = agent.export(p)
        if agent.enrich is not None:
            agent.enrich(doc)
    if doc.summary is None or "teams" in (doc.metadata or {}):
        summarize(doc)
    return doc


def document_file_name(doc: ConversationDocument, suffix: str) -> str:
    """A file name for the document in the current folder, from its session id made safe: ASCII letters, digits,
    ``-``, ``_`` and inner dots only, so an id like ``../../x`` can neither leave the folder nor make one."""
    return f"{safe_file_stem(doc.context_id)}{suffix}"


def safe_file_stem(context_id: str) -> str:
    """:func:`document_file_name`'s stem for a context id."""
    stem = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "-" for c in context_id)[:80]
    return stem.strip(".") or "conversation"


def _looks_like_path(ref: str) -> bool:
    return os.sep in ref or ref.endswith((".jsonl", ".json", ".zst", ".p2pd"))


def streamable_session(ref: str) -> Path | None:
    """The file of ``ref`` when it is a session its agent converts as it is written (:func:`stream_writer`: Claude
    Code, Codex, Gemini CLI); None for anything else (read it with :func:`load_conversation`). The writer may still
    decline a session it must read whole (NotStreamable, before it writes anything: an odd Gemini CLI JSON
    session)."""
    p = Path(ref).expanduser()
    if p.is_file():
        return p if stream_writer(p) is not None else None
    if _looks_like_path(ref):
        return None
    for agent in registry.AGENTS:
        found = agent.resolve(ref) if agent.resolve is not None else None
        if found is not None:
            return Path(found) if agent.write_streamed is not None else None
    return None


def stream_writer(path: Path) -> StreamWriter | None:
    """How the session file at ``path`` is converted as it is written (its agent's
    :attr:`~p2pd.agents.spec.Agent.write_streamed`), or None: a document, or an agent's session read whole."""
    agent = registry.detect_agent(path)
    return agent.write_streamed if agent is not None else None


def named_file(ref: str) -> Path:
    """The file ``ref`` names: a path, or a session id / unique prefix / ``latest`` (agents asked in registry
    order). NotFoundError, saying where every agent looked, when nothing matches.

    ``p2pd send`` hands it to a packing process of its own (:mod:`p2pd.exchange.producer`): a Claude Code session
    or a Codex rollout is converted as a stream, a conversation document (``.a2a.json``, a blob) checked and sent
    as it is when p2pd wrote it (:mod:`p2pd.exchange.document_file`), any other loaded whole there, off the
    sender's event loop."""
    p = Path(ref).expanduser()
    if p.is_file():
        return p
    if _looks_like_path(ref):
        raise NotFoundError(f"file not found: {p}")
    for agent in registry.AGENTS:
        found = agent.resolve(ref) if agent.resolve is not None else None
        if found is not None:
            return Path(found)
    raise _no_match(ref)


def document_file(ref: str) -> Path | None:
    """The file of ``ref`` when it is a conversation document (``.a2a.json``, a blob), not an agent's session."""
    p = Path(ref).expanduser()
    return p if p.is_file() and registry.detect_agent(p) is None else None


def load_conversation(ref: str) -> ConversationDocument:
    """The conversation in the file ``ref`` names (:func:`named_file`)."""
    return load_file(named_file(ref))


def _no_match(ref: str) -> NotFoundError:
    """What no session matching ``ref`` is told as: where every agent looked."""
    where = []
    for agent in registry.AGENTS:
        if agent.resolve is not None:
            n = len(agent.find_sessions())
            where.append(f"none of {n} {agent.display} sessions" if n else f"no {agent.display} sessions")
    what = "no sessions" if ref == "latest" else f"no session matches {ref!r}"
    return NotFoundError(f"{what} ({'; '.join(where)})")
