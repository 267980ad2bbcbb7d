"""A Claude Code transcript's line types and its active conversation chain (lines are read by
:mod:`p2pd.agents.jsonl`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from p2pd.agents.jsonl import SourceLine

# Line types that take part in the parentUuid tree (as the official Agent SDK reads it).
CHAIN_TYPES = frozenset({"user", "assistant", "progress", "system", "attachment"})
MESSAGE_TYPES = frozenset({"user", "assistant"})
TITLE_TYPES = {"custom-title": "customTitle", "ai-title": "aiTitle", "summary": "summary"}


def message_problem(obj: dict[str, Any]) -> str | None:
    """Why a user/assistant line cannot be read as a conversation message, or None when it can."""
    msg = obj.get("message")
    if not isinstance(msg, dict):
        return f"{obj.get('type')} line without a message object"
    content = msg.get("content")
    if not isinstance(content, (str, list)):
        return f"{obj.get('type')} line without message.content"
    return None


def _uuid(obj: dict[str, Any]) -> str | None:
    u = obj.get("uuid")
    return u if isinstance(u, str) and u else None


def _parent(obj: dict[str, Any]) -> str | None:
    p = obj.get("parentUuid")
    return p if isinstance(p, str) and p else None


def active_chain(lines: Sequence[SourceLine]) -> list[int]:
    """Line numbers of the active conversation, root first, as Claude Code chooses it.

    Leaves are the user/assistant lines nearest to the tree's terminal nodes; non-sidechain, non-meta,
    non-team leaves win, and among them the one latest in the file. The chain is the walk up ``parentUuid``.
    Where the walk reaches a compaction boundary, it continues through ``logicalParentUuid`` into the history
    before the compaction, so the whole logical conversation is kept (Claude Code itself resumes from the
    boundary on; the earlier part stays readable).

    Transcripts with no parent links at all (old or synthetic files) are taken in file order.
    """
    nodes, links = _nodes(lines)
    if not nodes:
        return []
    if _unlinked(lines):
        return [ln.n for ln in lines if ln.type in MESSAGE_TYPES and ln.obj is not None
                and not ln.obj.get("isSidechain")]
    referenced = {parent for _, parent, _ in links.values() if parent is not None}
    leaves: list[SourceLine] = []
    seen_leaf: set[int] = set()
    for u, ln in nodes.items():
        if u in referenced:
            continue
        leaf = _walk_to_message(ln, nodes)
        if leaf is not None and leaf.n not in seen_leaf:
            seen_leaf.add(leaf.n)
            leaves.append(leaf)
    chain: list[int] = []
    visited: set[str] = set()
    limit: int | None = None  # when set, only leaves before this line may continue the history
    while True:
        pool = [ln for ln in leaves if limit is None or ln.n < limit]
        leaf = _pick_leaf(pool)
        if leaf is None:
            break
        segment, boundary = _walk_up(leaf, links, visited)
        chain[:0] = segment
        if boundary is None:
            break
        # A compaction boundary whose logical parent is missing from the file (trimmed or sanitized
        # transcripts): continue with the newest leaf written before the boundary.
        limit = boundary
    return _with_parallel_tool_branches(lines, chain, nodes)


Link = tuple[int, str | None, str | None]  # a chain line's number, parentUuid and logicalParentUuid (None: unset)


def _nodes(lines: Sequence[SourceLine]) -> tuple[dict[str, SourceLine], dict[str, Link]]:
    """The chain lines by uuid (the first line of a uuid wins), and each one's :data:`Link` (what the walks up
    read, taken out of its line once: a session's every line is walked)."""
    nodes: dict[str, SourceLine] = {}
    links: dict[str, Link] = {}
    for line in lines:
        o = line.obj
        if o is None or line.type not in CHAIN_TYPES:
            continue
        u = o.get("uuid")
        if isinstance(u, str) and u and u not in nodes:
            nodes[u] = line
            p = o.get("parentUuid")
            logical = o.get("logicalParentUuid")
            links[u] = (line.n, p if isinstance(p, str) and p else None,
                        logical if isinstance(logical, str) and logical else None)
    return nodes, links


def _unlinked(lines: Sequence[SourceLine]) -> bool:
    """True for old or synthetic files whose messages are not linked by parentUuid.

    A real transcript has one root message (its first); compaction starts new roots with a system line. Two
    or more root user/assistant lines mean the links are missing, and file order is the best guide.
    """
    msgs = [ln for ln in lines if ln.type in MESSAGE_TYPES and ln.obj is not None]
    main = [ln for ln in msgs if not (ln.obj or {}).get("isSidechain")] or msgs
    roots = sum(1 for ln in main if ln.obj is not None  # (_parent, inline)
                and not (isinstance(p := ln.obj.get("parentUuid"), str) and p))
    return roots >= 2


def _tool_use_ids(obj: dict[str, Any]) -> set[str]:
    content = (obj.get("message") or {}).get("content")
    if not isinstance(content, list):
        return set()
    return {b["id"] for b in content if isinstance(b, dict) and b.get("type") == "tool_use"
            and isinstance(b.get("id"), str)}


def _tool_result_ids(obj: dict[str, Any]) -> set[str] | None:
    """The tool_use ids a user line answers, or None when it is not purely tool results."""
    content = (obj.get("message") or {}).get("content")
    if not isinstance(content, list) or not content:
        return None
    ids = set()
    for b in content:
        if not (isinstance(b, dict) and b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str)):
            return None
        ids.add(b["tool_use_id"])
    return ids


def _with_parallel_tool_branches(lines: Sequence[SourceLine], chain: list[int],
                                 nodes: dict[str, SourceLine]) -> list[int]:
    """Add the short forks that parallel tool calls leave beside the chain.

    When Claude Code runs tools in parallel, each tool_use line and each tool_result line may hang off a
    different parent, so the newest-leaf walk keeps one branch and leaves the other results beside it
    (anthropics/claude-code #31330). Those results belong to the conversation: a line beside the chain is taken
    in when its parent message is taken and it is either another block of the same assistant response or a
    result of a tool call that is taken. The parent message is the nearest user/assistant line up the
    ``parentUuid`` links: hooks write ``progress`` rows between a tool call and the next block of the same
    response, so a parallel call often hangs off a progress row that is itself beside the chain. Lines come
    back in file order.
    """
    if not chain:
        return chain
    by_n = {ln.n: ln for ln in lines}

    def parent_message(obj: dict[str, Any]) -> str | None:
        seen: set[str] = set()
        parent = _parent(obj)
        while parent is not None and parent not in seen:
            seen.add(parent)
            node = nodes.get(parent)
            if node is None or node.obj is None or node.type != "progress":
                return parent
            parent = _parent(node.obj)
        return None

    taken = set(chain)
    first, last = min(taken), max(taken)
    sidechain = bool((by_n[chain[-1]].obj or {}).get("isSidechain"))
    candidates = [ln for ln in lines if ln.n not in taken and first < ln.n and ln.type in MESSAGE_TYPES
                  and ln.obj is not None and bool(ln.obj.get("isSidechain")) == sidechain]
    if not candidates:  # (nothing beside the chain: what follows reads the chain for nothing)
        return sorted(taken)
    uuid_taken = {u for n in taken if (o := by_n[n].obj) is not None and isinstance(u := o.get("uuid"), str) and u}
    tool_ids: set[str] = set()
    response_ids: set[str] = set()
    for n in taken:
        o = by_n[n].obj
        if o is not None and by_n[n].type == "assistant":
            tool_ids |= _tool_use_ids(o)
            mid = (o.get("message") or {}).get("id")
            if isinstance(mid, str):
                response_ids.add(mid)
    changed = True
    while changed:
        changed = False
        for ln in candidates:
            o = ln.obj
            if o is None or ln.n in taken or parent_message(o) not in uuid_taken:
                continue
            if ln.type == "assistant":
                mid = (o.get("message") or {}).get("id")
                ok = isinstance(mid, str) and mid in response_ids and ln.n < last
            else:
                answered = _tool_result_ids(o)
                ok = answered is not None and answered <= tool_ids
            if ok:
                taken.add(ln.n)
                if (u := _uuid(o)) is not None:
                    uuid_taken.add(u)
                if ln.type == "assistant":
                    tool_ids |= _tool_use_ids(o)
                changed = True
    return sorted(taken)


def _pick_leaf(leaves: Sequence[SourceLine]) -> SourceLine | None:
    def preferred(ln: SourceLine) -> bool:
        o = ln.obj or {}
        return not (o.get("isSidechain") or o.get("isMeta") or o.get("teamName"))

    pool = [ln for ln in leaves if preferred(ln)] or list(leaves)
    return max(pool, key=lambda ln: ln.n) if pool else None


def _walk_up(leaf: SourceLine, links: dict[str, Link], visited: set[str]) -> tuple[list[int], int | None]:
    """Walk from a leaf (a chain line) to its root, through compaction boundaries whose logical parent is present.

    Returns the line numbers (root first) and the line number of the boundary where the walk stopped for want of
    its logical parent, if any.
    """
    segment: list[int] = []
    stopped_at: int | None = None
    u: str | None = leaf.obj["uuid"] if leaf.obj is not None else None  # (a chain line's uuid: its key in links)
    while u is not None and u not in visited:
        link = links.get(u)
        if link is None:  # (a parent that is no chain line of this file: the walk ends there)
            break
        visited.add(u)
        n, u, logical = link
        segment.append(n)
        if u is None and logical is not None:
            if logical in links:
                u = logical
            else:
                stopped_at = n
    segment.reverse()
    return segment, stopped_at


def _walk_to_message(line: SourceLine, nodes: dict[str, SourceLine]) -> SourceLine | None:
    seen: set[int] = set()
    cur: SourceLine | None = line
    while cur is not None and cur.n not in seen:
        seen.add(cur.n)
        if cur.type in MESSAGE_TYPES:
            return cur
        p = _parent(cur.obj) if cur.obj else None
        cur = nodes.get(p) if p else None
    return None
