"""A document's counts (messages, tool calls, side branches, malformed lines…), the same for every agent and for
documents read from a file."""

from __future__ import annotations

from p2pd.conversation import media_types as mt
from p2pd.conversation.model import ConversationDocument, Counts, Role


def count(doc: ConversationDocument) -> Counts:
    c = Counts()
    for m in doc.messages:
        c.messages += 1
        if m.role is Role.USER:
            c.user_messages += 1
        else:
            c.agent_messages += 1
        if m.p2pd.get("active", True):
            c.active_messages += 1
        else:
            c.side_branch_messages += 1
        for p in m.parts:
            if p.media_type == mt.TOOL_USE:
                c.tool_calls += 1
            elif p.media_type == mt.TOOL_RESULT:
                c.tool_results += 1
    c.source_lines = doc.line_count
    c.records = len(doc.records)
    c.malformed_lines = len(doc.issues) + sum(len(s.issues) for s in doc.subagents)
    c.subagents = len(doc.subagents)
    return c
