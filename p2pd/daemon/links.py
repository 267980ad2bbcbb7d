"""Links: a named group of paired devices that a conversation can be sent to at once (fan-out).

A link is made by one member (its creator) and told to the others over their control channels. Only the creator can
close it for everyone; a member can leave it. An update from a member can only say that *that* member left, and
only the creator's update can close the link or introduce it; the member list and the creator are those first heard
(the creator's), never taken from later updates. Closing and leaving only ever grow (a closed link never reopens, a
member that left never comes back), so updates from several members merge in any order. Sending to a link sends to
every member except the sender and those that left; a closed link sends nothing, and a receiver refuses a transfer
tagged with a link it knows is closed or that it left.

Kept in ``links.json`` in the daemon's folder.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from p2pd.daemon.peer_protocol import LinkMember, LinkView
from p2pd.errors import ConflictError, InvalidInputError, NotFoundError
from p2pd.support.atomic import atomic_write_bytes

LINKS_FILE = "links.json"
M = TypeVar("M")


def merge_membership(left: list[M], closed: bool, incoming_left: list[M], incoming_closed: bool, *,
                     speaks_for: Callable[[M], bool], from_creator: bool) -> tuple[list[M], bool]:
    """The membership rule of every link (device links here, session links in :mod:`p2pd.daemon.session_links`):
    an update adds to ``left`` only the members its sender speaks for (itself, or its own sessions), and closes the
    link only when it comes from the creator; both only grow, so updates merge in any order."""
    merged = list(left)
    for member in incoming_left:
        if speaks_for(member) and member not in merged:
            merged.append(member)
    return merged, closed or (incoming_closed and from_creator)


class LinkBook:
    def __init__(self, folder: Path, own_id: str) -> None:
        self.path = folder / LINKS_FILE
        self.own_id = own_id
        self.links: dict[str, LinkView] = {}
        if self.path.exists():
            try:
                body = json.loads(self.path.read_text(encoding="utf-8"))
                self.links = {item["id"]: LinkView.model_validate(item) for item in body["links"]}
            except (ValueError, KeyError, TypeError) as exc:
                raise InvalidInputError(f"{self.path} is damaged ({exc}); fix or remove it") from None

    def create(self, name: str, members: list[LinkMember]) -> LinkView:
        if not members:
            raise InvalidInputError("a link needs at least one other device")
        own = [m for m in members if m.id == self.own_id]
        others = [m for m in members if m.id != self.own_id]
        view = LinkView(id="link-" + secrets.token_hex(8), name=name[:64], created_by=self.own_id,
                        members=(own or [LinkMember(id=self.own_id)]) + others)
        self.links[view.id] = view
        self._save()
        return view

    def get(self, link_id: str) -> LinkView:
        try:
            return self.links[link_id]
        except KeyError:
            raise NotFoundError(f"no link {link_id!r} (known: {', '.join(self.links) or 'none'})") from None

    def merge(self, incoming: LinkView, from_device: str) -> LinkView | None:
        """Take a member's view of a link; returns the merged view, or None when it is not for us or not
        from a member."""
        known = current = self.links.get(incoming.id)
        if current is None:
            if from_device != incoming.created_by:
                return None  # a link is introduced by its creator only
            current = incoming.model_copy(update={"left": [], "closed": False, "closed_by": None})
        member_ids = {m.id for m in current.members}
        if self.own_id not in member_ids or from_device not in member_ids:
            return None
        left, closed = merge_membership(current.left, current.closed, incoming.left, incoming.closed,
                                        speaks_for=lambda m: m == from_device,
                                        from_creator=from_device == current.created_by)
        merged = current.model_copy(update={
            "left": sorted(left),
            "closed": closed,
            "closed_by": (current.closed_by or from_device) if closed else None,
        })
        if merged != known:
            self.links[merged.id] = merged
            self._save()
        return merged

    def close(self, link_id: str) -> LinkView:
        view = self.get(link_id)
        if view.created_by != self.own_id:
            raise ConflictError(f"only the device that created link {view.name or view.id} can close it; "
                                "leave it instead")
        if not view.closed:
            view = view.model_copy(update={"closed": True, "closed_by": self.own_id})
            self.links[link_id] = view
            self._save()
        return view

    def leave(self, link_id: str) -> LinkView:
        view = self.get(link_id)
        if self.own_id not in view.left:
            view = view.model_copy(update={"left": sorted({*view.left, self.own_id})})
            self.links[link_id] = view
            self._save()
        return view

    def targets(self, link_id: str) -> list[str]:
        """The devices a send to this link goes to now."""
        view = self.get(link_id)
        if view.closed:
            raise ConflictError(f"link {view.name or view.id} was closed; it delivers nothing more")
        if self.own_id in view.left:
            raise ConflictError(f"this device left link {view.name or view.id}")
        return [m.id for m in view.members if m.id != self.own_id and m.id not in view.left]

    def accepts(self, link_id: str, from_device: str) -> bool:
        """Whether a transfer tagged with this link, from ``from_device``, may be delivered here."""
        view = self.links.get(link_id)
        if view is None or view.closed or self.own_id in view.left:
            return False
        return from_device in {m.id for m in view.members} and from_device not in view.left

    def _save(self) -> None:
        body = {"links": [v.model_dump() for v in self.links.values()]}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.path, json.dumps(body, indent=2).encode("utf-8"))
