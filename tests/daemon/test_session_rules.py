"""The agent-session pieces on their own: session-link rules (merge in any order, membership), the store enforcing
link changes and delegation moves, a repeated turn filed once, a forged sender refused, the last turn read from a
Claude Code transcript, and ``git worktree add`` refusals."""

from __future__ import annotations

import itertools
import json
import os
import random
from pathlib import Path

import pytest

from p2pd.daemon import session_links as rules
from p2pd.daemon.peer_protocol import SessionLinkView, SessionRef, SessionTurn
from p2pd.daemon.session_desk import SessionDesk
from p2pd.daemon.session_tables import DelegationRow, SessionStore
from p2pd.daemon.turn_output import bounded, last_turn
from p2pd.daemon.worktree import add_worktree
from p2pd.errors import ConflictError, InvalidInputError, NotFoundError
from tests.daemon.sessions_fixtures import git, make_repo

A, B, C = SessionRef(device="desk", session="s-a"), SessionRef(device="laptop", session="s-b"), \
    SessionRef(device="laptop", session="s-c")


def test_recipients_never_include_the_sender_and_stop_once_the_link_is_not_live() -> None:
    view = rules.new_link("l", A, [B, C, A, B])
    assert view.members == [A, B, C] and rules.state(view) == "open"
    assert rules.recipients(view, A) == [B, C] and rules.recipients(view, B) == [A, C]
    view = rules.leave(view, C)
    assert rules.recipients(view, C) == [] and rules.recipients(view, A) == [B]
    view = rules.leave(view, B)
    assert rules.state(view) == "ended" and rules.recipients(view, A) == []
    with pytest.raises(InvalidInputError):
        rules.new_link("l", A, [A])
    with pytest.raises(NotFoundError):
        rules.leave(view, SessionRef(device="desk", session="stranger"))


def test_only_the_creator_closes() -> None:
    view = rules.new_link("l", A, [B])
    with pytest.raises(ConflictError):
        rules.close(view, "laptop")
    with pytest.raises(ConflictError):
        rules.close(view, "desk", "s-other")
    assert rules.close(view, "desk", "s-a").closed and rules.close(view, "desk").closed


def test_merges_in_any_order_agree_and_a_device_speaks_only_for_its_own_sessions() -> None:
    seed = random.randrange(1 << 30)
    print("seed", seed)
    rng = random.Random(seed)
    base = rules.new_link("l", A, [B, C])
    updates = [(base, "desk"), (rules.leave(base, B), "laptop"), (rules.leave(base, C), "laptop"),
               (rules.leave(base, A), "laptop"),  # the laptop cannot say the desk's session left
               (rules.close(base, "desk"), "laptop"),  # nor close it
               (base.model_copy(update={"members": [B, C]}), "desk")]  # nor change the members
    results = set()
    orders = list(itertools.permutations(updates))
    for order in rng.sample(orders, 40):
        view: SessionLinkView | None = None
        for incoming, sender in order:
            merged = rules.merge(view, incoming, sender, "laptop" if sender == "desk" else "desk")
            if merged is not None:
                view = merged
        if view is not None:
            results.add((tuple(sorted(m.session for m in view.left)), view.closed, tuple(view.members)))
    assert results <= {(("s-b", "s-c"), False, (A, B, C)), ((), False, (A, B, C)), (("s-b",), False, (A, B, C)),
                       (("s-c",), False, (A, B, C))}
    full = rules.merge(rules.merge(None, base, "desk", "laptop"), rules.leave(rules.leave(base, B), C), "laptop",
                       "desk")
    assert full is not None and set(full.left) == {B, C} and not full.closed
    assert rules.merge(None, base, "laptop", "desk") is None  # introduced by its creator's device only


def test_the_store_enforces_link_changes_and_delegation_moves(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "state.sqlite3")
    view = store.add_link(rules.new_link("l", A, [B]))
    with pytest.raises(ConflictError):
        store.add_link(view)
    store.change_link(view.id, lambda v: rules.leave(v, B))
    with pytest.raises(ConflictError):  # a member that left never comes back
        store.change_link(view.id, lambda v: v.model_copy(update={"left": []}))
    with pytest.raises(ConflictError):
        store.change_link(view.id, lambda v: v.model_copy(update={"members": [A, C]}))
    store.change_link(view.id, lambda v: rules.close(v, "desk"))
    with pytest.raises(ConflictError):  # a closed link never reopens
        store.change_link(view.id, lambda v: v.model_copy(update={"closed": False}))
    row = DelegationRow(id="dg_1", parent_session="p", parent_transcript=None, session_id="c", agent="claude-code",
                        cwd="/x", transcript_path=None, repo=None, worktree=None, branch=None, prompt="",
                        resume_command="claude --resume c", state="created", pid=None, exit_code=None, reason=None,
                        log_path=None, created_at="t", updated_at="t", started_at=None, ended_at=None)
    store.add_delegation(row)
    with pytest.raises(ConflictError):
        store.move_delegation("dg_1", "exited")
    assert store.move_delegation("dg_1", "running", pid=1).state == "running"
    assert store.move_delegation("dg_1", "exited", exit_code=3).exit_code == 3
    assert store.move_delegation("dg_1", "running", pid=2).exit_code is None  # started again
    with pytest.raises(InvalidInputError):
        store.move_delegation("dg_1", "exited", session_id="x")  # not a field that moves
    assert store.delegation_of_session("c") is not None and store.delegation_of_session("p") is None


def test_a_turn_is_filed_once_and_a_forged_sender_is_refused(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "state.sqlite3")
    desk = SessionDesk(tmp_path, store, "laptop")
    view = rules.new_link("l", A, [B, C])
    assert store.merge_link(view, "desk", "laptop") is not None
    turn = SessionTurn(id="turn-1", link=view.id, sender=A, text="hello")
    assert desk.receive_turn(turn, "desk") == ["s-b", "s-c"]
    assert desk.receive_turn(turn, "desk") == []  # a repeat (resent after a reconnect) is not filed again
    forged = SessionTurn(id="turn-2", link=view.id, sender=A, text="forged")
    assert desk.receive_turn(forged, "elsewhere") == []  # only the desk speaks for its sessions
    mine = SessionTurn(id="turn-3", link=view.id, sender=B, text="echo?")
    assert desk.receive_turn(mine, "laptop") == []  # never our own sessions' words from outside
    assert [m.text for m in store.messages("s-b")] == ["hello"]
    # the laptop's own turn: filed for its other session, queued for the desk, never for the sender
    assert desk.turn("s-c", "from c") == [{"link": view.id, "to": [A.model_dump(), B.model_dump()]}]
    queued = [m for _, m in store.outgoing("desk")]
    assert [m["kind"] for m in queued] == ["session-turn"] and queued[0]["sender"] == C.model_dump()
    assert [m.text for m in store.messages("s-c")] == ["hello"]  # not its own words


def test_a_hook_gives_a_bounded_share_of_what_waits(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "state.sqlite3")
    for n in range(5):
        store.add_message(id=f"m{n}", session="s", kind="message", from_device="d", from_session=None, ref=None,
                          text=str(n) * 10_000)
    taken = [[m.id for m in store.take_undelivered("s", 10, 24_000)] for _ in range(4)]
    assert taken == [["m0", "m1"], ["m2", "m3"], ["m4"], []]
    store.add_message(id="big", session="s", kind="message", from_device="d", from_session=None, ref=None,
                      text="x" * 50_000)
    assert [m.id for m in store.take_undelivered("s", 10, 24_000)] == ["big"]  # the first always goes


def _line(kind: str, content: object, **extra: object) -> str:
    return json.dumps({"type": kind, "message": {"role": kind, "content": content}, **extra})


def test_the_last_turn_of_a_transcript(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([
        _line("user", "first prompt"), _line("assistant", [{"type": "text", "text": "old answer"}]),
        _line("user", "second prompt"),
        _line("assistant", [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "Looking."},
                            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]),
        _line("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]),
        _line("assistant", [{"type": "text", "text": "side"}], isSidechain=True),
        "not json",
        _line("assistant", [{"type": "text", "text": "Done: 3 tests fixed."}])]) + "\n")
    assert last_turn(path) == "Looking.\n\nDone: 3 tests fixed."
    assert last_turn(tmp_path / "missing.jsonl") == ""
    assert bounded("x" * 50 + "END", 10) == "…" + "x" * 6 + "END"
    assert "[REDACTED:aws-access-key]" in bounded("key AKIA" + "ABCDEFGHIJKLMNOP", redact=True)


def test_worktree_refusals(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError):
        add_worktree(tmp_path, "b")  # not a repository
    repo = make_repo(tmp_path / "r")
    with pytest.raises(InvalidInputError):
        add_worktree(repo, "bad..name")
    made = add_worktree(repo / "src", "one", path=tmp_path / "wt")
    assert made.created_branch and made.repo == str(repo) and Path(made.path, "src", "parser.py").is_file()
    with pytest.raises(ConflictError):
        add_worktree(repo, "two", path=tmp_path / "wt")  # the folder exists
    with pytest.raises(ConflictError) as info:
        add_worktree(repo, "one", path=tmp_path / "wt2")  # checked out in another worktree already
    assert info.value.peer_text  # git's words, kept for people
    git("branch", "three", cwd=repo)
    again = add_worktree(repo, "three", path=tmp_path / "wt3")
    assert not again.created_branch and os.path.isdir(again.path)
