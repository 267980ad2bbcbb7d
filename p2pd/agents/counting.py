"""A document's counts (messages, tool calls, side branches, malformed lines…), the same for every agent and for
documents read from a file."""

from __future__ import annotations

from p2pd.conversation.model import ConversationDocument, Counts


def count(doc: ConversationDocument) -> Counts:
    c = Counts()
    for m in doc.messages:
        c.add(m)
    c.source_lines = doc.line_count
    c.records = len(doc.records)
    c.malformed_lines = len(doc.issues) + sum(len(s.issues) for s in doc.subagents)
    c.subagents = len(doc.subagents)
    return c
