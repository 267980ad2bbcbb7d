"""Links between agent sessions (seed 003) — the rules, pure (no I/O).

A session link joins agent sessions on this machine and on paired ones (each member a :class:`SessionRef`: device
and session id). The rules are those of the device links (:mod:`p2pd.daemon.links`, whose
:func:`~p2pd.daemon.links.merge_membership` both use), with a session as the member:

- the link is made by one member session (its creator); its device tells the other members' devices;
- only a member says it left: a device's update can only mark *its own* sessions as left, so a paired device can
  never remove a session of another machine; only the creator (its device) closes the link for everyone, and only
  the creator's device introduces a link;
- the member list and the creator are those first heard (the creator's), never taken from later updates; leaving
  and closing only grow, so updates from several devices merge in any order;
- a link is live while it is open and at least two members have not left. A member's turn output goes to every
  other member that has not left — never back to the sender (no echo) — and only while the link is live.

Every change is checked (:func:`check_change`) by the store before it is written.
"""

from __future__ import annotations

import secrets

from p2pd.daemon.links import merge_membership
from p2pd.daemon.peer_protocol import SessionLinkView, SessionRef
from p2pd.errors import ConflictError, InvalidInputError, NotFoundError


def new_link(name: str, creator: SessionRef, others: list[SessionRef]) -> SessionLinkView:
    members = [creator] + [m for i, m in enumerate(others) if m != creator and m not in others[:i]]
    if len(members) < 2:
        raise InvalidInputError("a session link needs at least one other session")
    return SessionLinkView(id="slink-" + secrets.token_hex(8), name=name[:64], created_by=creator, members=members)


def member_of(view: SessionLinkView, ref: SessionRef) -> bool:
    return ref in view.members


def active(view: SessionLinkView) -> list[SessionRef]:
    return [m for m in view.members if m not in view.left]


def live(view: SessionLinkView) -> bool:
    return not view.closed and len(active(view)) >= 2


def state(view: SessionLinkView) -> str:
    """``open``, ``ended`` (fewer than two members left in it) or ``closed`` (by its creator)."""
    return "closed" if view.closed else "open" if live(view) else "ended"


def recipients(view: SessionLinkView, sender: SessionRef) -> list[SessionRef]:
    """Who gets ``sender``'s turn output: every other member still in the link (none once it is not live, or when
    the sender left)."""
    if not live(view) or sender not in active(view):
        return []
    return [m for m in active(view) if m != sender]


def leave(view: SessionLinkView, member: SessionRef) -> SessionLinkView:
    if member not in view.members:
        raise NotFoundError(f"session {member.session} is not a member of link {view.name or view.id}")
    if member in view.left:
        return view
    return view.model_copy(update={"left": [*view.left, member]})


def close(view: SessionLinkView, by_device: str, by_session: str | None = None) -> SessionLinkView:
    """Close for everyone: only the creator session (or, with no session named, its device's user) may."""
    creator = view.created_by
    if creator.device != by_device or (by_session is not None and by_session != creator.session):
        raise ConflictError(f"only the session that made link {view.name or view.id} ({creator.session}) can "
                            "close it; leave it instead")
    return view if view.closed else view.model_copy(update={"closed": True})


def merge(current: SessionLinkView | None, incoming: SessionLinkView, from_device: str,
          own_device: str) -> SessionLinkView | None:
    """A paired device's view of a link, merged into ours; None when it is not for us or not from a member."""
    if current is None:
        if incoming.created_by.device != from_device:
            return None  # introduced by its creator's device only
        current = incoming.model_copy(update={"left": [], "closed": False})
    devices = {m.device for m in current.members}
    if own_device not in devices or from_device not in devices:
        return None
    left, closed = merge_membership(current.left, current.closed, incoming.left, incoming.closed,
                                    speaks_for=lambda m: m.device == from_device and m in current.members,
                                    from_creator=from_device == current.created_by.device)  # its own sessions only
    return current.model_copy(update={"left": left, "closed": closed})


def check_change(old: SessionLinkView, new: SessionLinkView) -> None:
    """What a stored link may become: same id, creator and members; leaving and closing only grow."""
    if (new.id, new.created_by, new.members) != (old.id, old.created_by, old.members):
        raise ConflictError(f"link {old.id}: its creator and members never change")
    if not set(old.left) <= set(new.left) or (old.closed and not new.closed):
        raise ConflictError(f"link {old.id}: a member that left never comes back, a closed link never reopens")


def remote_devices(view: SessionLinkView, own_device: str) -> list[str]:
    return sorted({m.device for m in view.members if m.device != own_device})
