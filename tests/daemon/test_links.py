"""Link membership rules of the LinkBook, without a network: only a member can say that it left, only the creator
closes a link (red-team finding: one member could mark others, or the receiver itself, as having left)."""

from __future__ import annotations

from pathlib import Path

import pytest

from p2pd.daemon.links import LinkBook
from p2pd.daemon.peer_protocol import LinkMember
from p2pd.errors import ConflictError


def books(tmp_path: Path) -> tuple[LinkBook, LinkBook, LinkBook]:
    return tuple(LinkBook(tmp_path / n, n) for n in ("a", "b", "c"))  # type: ignore[return-value]


def test_a_member_can_only_say_that_it_left_itself(tmp_path: Path) -> None:
    a, b, c = books(tmp_path)
    view = a.create("team", [LinkMember(id="a"), LinkMember(id="b"), LinkMember(id="c")])
    assert b.merge(view, "a") is not None and c.merge(view, "a") is not None
    forged = view.model_copy(update={"left": ["a", "b", "c"]})
    merged = b.merge(forged, "c")
    assert merged is not None and merged.left == ["c"]  # c's own leave counts; a's and b's are not c's to say
    assert b.accepts(view.id, "a")
    assert b.targets(view.id) == ["a"]


def test_only_the_creator_closes_and_introduces_a_link(tmp_path: Path) -> None:
    a, b, c = books(tmp_path)
    view = a.create("team", [LinkMember(id="a"), LinkMember(id="b"), LinkMember(id="c")])
    # a link first heard from a member that did not create it is ignored
    assert b.merge(view, "c") is None and view.id not in b.links
    b.merge(view, "a")
    c.merge(view, "a")
    with pytest.raises(ConflictError):
        c.close(view.id)
    closed_by_c = view.model_copy(update={"closed": True, "closed_by": "c"})
    assert b.merge(closed_by_c, "c") is not None and not b.get(view.id).closed
    # a member list rewritten by a member is not taken
    widened = view.model_copy(update={"members": [*view.members, LinkMember(id="x")]})
    b.merge(widened, "c")
    assert [m.id for m in b.get(view.id).members] == ["a", "b", "c"]
    closed = a.close(view.id)
    assert b.merge(closed, "a") is not None and b.get(view.id).closed and b.get(view.id).closed_by == "a"
    with pytest.raises(ConflictError):
        b.targets(view.id)
