"""Local agent sessions, listed across agents (``p2pd sessions``).

Where each agent keeps its sessions is the agent's own ``find_sessions`` (:mod:`p2pd.agents.registry`): Claude
Code ``$CLAUDE_CONFIG_DIR`` or ``~/.claude`` ``/projects/*/*.jsonl``; Codex ``$CODEX_HOME`` or ``~/.codex``
``/sessions/YYYY/MM/DD/rollout-*.jsonl[.zst]``; Gemini CLI ``$GEMINI_DIR`` or ``~/.gemini`` ``/tmp/*/chats/session-*``.
A file that cannot be read is listed with its error as title rather than hiding the others.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from p2pd.agents import registry
from p2pd.agents.spec import Agent, NotStreamable, StreamWriter
from p2pd.conversation.model import ConversationDocument
from p2pd.errors import P2pdError, TooLargeError, writing

PLATFORMS = registry.names()


@dataclass
class SessionInfo:
    platform: str
    session_id: str
    cwd: str | None
    title: str
    messages: int
    size: int
    last_activity: str
    path: str
    summary: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _mtime(path: Path) -> str:
    return _utc(datetime.fromtimestamp(path.stat().st_mtime, UTC))


def _utc(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def last_message_time(doc: ConversationDocument) -> str | None:
    """When the conversation's last message was written (UTC, ``…Z``), from the messages' own timestamps; None
    when no message carries one. A file's mtime is not this: copying or touching a transcript changes it."""
    for message in reversed(doc.messages):
        if (when := message_time(message.p2pd)) is not None:
            return when
    return None


def message_time(p2pd: dict[str, Any]) -> str | None:
    """A message's own time (its ``p2pd.timestamp``), in UTC (``…Z``); None when it has none that reads."""
    stamp = p2pd.get("timestamp")
    if isinstance(stamp, str):
        try:
            when = datetime.fromisoformat(stamp)
        except ValueError:
            return None
        return _utc(when if when.tzinfo else when.replace(tzinfo=UTC))
    return None


def info_from_document(platform: str, path: Path, doc: ConversationDocument) -> SessionInfo:
    from p2pd.conversation.summary import summarize

    summarize(doc)
    return SessionInfo(platform=platform, session_id=doc.origin.session_id or doc.context_id, cwd=doc.origin.cwd,
                       title=doc.title, messages=len(doc.messages), size=path.stat().st_size,
                       last_activity=last_message_time(doc) or _mtime(path), path=str(path),
                       summary=doc.summary or "")


def session_info(agent: Agent, path: Path) -> SessionInfo:
    """The row of ``agent``'s session file at ``path``: from its stream when the agent converts it as it is
    written, else from the session read whole; a file that cannot be read is a row saying why."""
    try:
        if agent.write_streamed is not None:
            try:
                return _streamed_info(agent.name, path, agent.write_streamed)
            except (NotStreamable, TooLargeError):  # (read whole, as the agent's own reading does, without limits)
                pass
        return info_from_document(agent.name, path, agent.export(path))
    except P2pdError as exc:
        return SessionInfo(platform=agent.name, session_id=path.stem, cwd=None, title=f"[unreadable: {exc}]",
                           messages=0, size=path.stat().st_size, last_activity=_mtime(path), path=str(path))


def _streamed_info(platform: str, path: Path, write: StreamWriter) -> SessionInfo:
    """The session's row from its document converted as a stream and read back as it is written (the envelope —
    title, summary, origin, counts — and each message's time): memory bounded by a message, not the session."""
    from p2pd.conversation.stream_reader import DocumentReader
    from p2pd.support import workroom

    last: list[str] = []

    def seen(key: str, subagent: int | None, model: Any) -> None:
        if key == "messages" and subagent is None and (when := message_time(model.p2pd)) is not None:
            last[:] = [when]

    reader = DocumentReader(source=str(path), on_model=seen)
    with workroom.held_folder(workroom.SPOOL) as spool, \
            writing(f"the spool of {path.name} in {spool.parent}", reading=path):
        write(path, reader.feed, spool_dir=spool)
    summary = reader.finish()
    doc = summary.document
    return SessionInfo(platform=platform, session_id=doc.origin.session_id or doc.context_id, cwd=doc.origin.cwd,
                       title=doc.title, messages=summary.counts.messages, size=path.stat().st_size,
                       last_activity=last[0] if last else _mtime(path), path=str(path), summary=doc.summary or "")


def list_sessions(platform: str | None = None, *, limit: int | None = None) -> list[SessionInfo]:
    """Sessions, newest last message first. Each agent lists its files newest mtime first; a file's last message
    is never newer than its mtime, so with ``limit`` the files are read in that order only until no file left
    can beat the ``limit``-th newest last message found."""
    infos: list[SessionInfo] = []
    for agent in registry.AGENTS:
        if platform not in (None, agent.name):
            continue
        found: list[SessionInfo] = []
        for path in agent.find_sessions():
            if limit and len(found) >= limit:
                found.sort(key=lambda i: i.last_activity, reverse=True)
                if _mtime(path) < found[limit - 1].last_activity:
                    break
            found.append(session_info(agent, path))
        infos.extend(found)
    infos.sort(key=lambda i: i.last_activity, reverse=True)
    return infos[:limit] if limit else infos
