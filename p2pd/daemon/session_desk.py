"""The agent sessions' side of session links and messages, on the store alone (no network, no event loop), so a
hook can do its part when no daemon runs and the daemon does the same when it does.

- links (:mod:`p2pd.daemon.session_links`): made, left, closed here; every change is queued for the other
  members' devices (``session_outbox``; the daemon's :mod:`p2pd.daemon.session_relay` sends it when they are
  online), and what paired devices say is merged here;
- a Stop hook's turn output goes to every other member of each live link the session is in: filed at once for
  sessions on this machine, queued for the others' devices — never back to the sender;
- messages for a session (a linked session's turn, the parent of a delegation, another local session) wait in its
  inbox until its next SessionStart or UserPromptSubmit hook puts them in its context (:meth:`SessionDesk.context`).
  Their text is shown through :func:`p2pd.support.text.visible` (a remote agent's words are peer text).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from p2pd.daemon import session_links as rules
from p2pd.daemon.devices import DeviceBook
from p2pd.daemon.peer_protocol import SessionLinkUpdate, SessionLinkView, SessionRef, SessionTurn
from p2pd.daemon.session_tables import SessionMessageRow, SessionStore
from p2pd.daemon.turn_output import TURN_LIMIT, bounded
from p2pd.errors import InvalidInputError, NotFoundError
from p2pd.support.text import visible

CONTEXT_MESSAGES = 10  # messages one hook puts in a session's context (the rest wait for the next)
CONTEXT_CHARS = 24_000  # … and characters of their text (past the first message)
MESSAGE_MAX = 12_000  # characters of one message


class SessionDesk:
    def __init__(self, folder: Path, store: SessionStore, own_device: str) -> None:
        self.folder = folder
        self.store = store
        self.own = own_device

    def ref(self, session: str, device: str | None = None) -> SessionRef:
        """A member: a session here (no device, or this device's id or name) or on a paired device (id or name)."""
        session = (session or "").strip()
        if not session:
            raise InvalidInputError("name the session (its id)")
        device_id = self.own
        if device and device.strip() not in (self.own, "", "local", "this"):
            book = DeviceBook(self.folder)
            try:
                device_id = book.get(device).device_id
            except NotFoundError:
                from p2pd.daemon.identity import load_identity

                if device.strip() != load_identity(self.folder).name:
                    raise
        try:
            return SessionRef(device=device_id, session=session)
        except ValueError:
            raise InvalidInputError(f"{session!r} is not a session id") from None

    def device_name(self, device_id: str) -> str:
        if device_id == self.own:
            return "this machine"
        try:
            return DeviceBook(self.folder).get(device_id).name
        except NotFoundError:
            return device_id

    # ---- links ---------------------------------------------------------------------------------------------

    def create_link(self, session: str, members: list[dict[str, Any]], name: str = "") -> SessionLinkView:
        creator = self.ref(session)
        others = [self.ref(str(m.get("session") or ""), m.get("device")) for m in members]
        view = self.store.add_link(rules.new_link(name, creator, others))
        self._announce(view)
        return view

    def leave(self, link_id: str, session: str) -> SessionLinkView:
        _, view = self.store.change_link(link_id, lambda v: rules.leave(v, self.ref(session)))
        self._announce(view)
        return view

    def close(self, link_id: str, session: str | None = None) -> SessionLinkView:
        _, view = self.store.change_link(link_id, lambda v: rules.close(v, self.own, session))
        self._announce(view)
        return view

    def sever(self, link_id: str, session: str, close: bool = False) -> SessionLinkView:
        """From inside a member session: leave the link (``close``: the creator closes it for everyone)."""
        return self.close(link_id, session) if close else self.leave(link_id, session)

    def links_of(self, session: str | None = None) -> list[SessionLinkView]:
        views = self.store.list_links()
        if session is None:
            return views
        me = self.ref(session)
        return [v for v in views if rules.member_of(v, me)]

    def end_session(self, session: str) -> list[SessionLinkView]:
        """A session ended (SessionEnd hook): it leaves every link it is still in."""
        me = self.ref(session)
        return [self.leave(v.id, session) for v in self.links_of(session) if me not in v.left and not v.closed]

    def view(self, view: SessionLinkView) -> dict[str, Any]:
        return {**view.model_dump(), "state": rules.state(view),
                "members": [{**m.model_dump(), "device_name": self.device_name(m.device), "left": m in view.left}
                            for m in view.members]}

    def _announce(self, view: SessionLinkView) -> None:
        update = SessionLinkUpdate(link=view).model_dump()
        for device in rules.remote_devices(view, self.own):
            self.store.enqueue(device, update)

    def merge_remote(self, view: SessionLinkView, from_device: str) -> SessionLinkView | None:
        merged = self.store.merge_link(view, from_device, self.own)
        return merged[1] if merged is not None else None

    # ---- turn output ---------------------------------------------------------------------------------------

    def turn(self, session: str, text: str, *, redact: bool = False) -> list[dict[str, Any]]:
        """A session's turn output to the other members of each live link it is in; returns where it went."""
        text = bounded(text, TURN_LIMIT, redact=redact)
        if not text.strip():
            return []
        me = self.ref(session)
        out: list[dict[str, Any]] = []
        for view in self.links_of(session):
            targets = rules.recipients(view, me)
            turn_id = "turn-" + secrets.token_hex(8)
            for m in targets:
                if m.device == self.own:
                    self.store.add_message(id=f"{turn_id}:{m.session}", session=m.session, kind="link",
                                           from_device=self.own, from_session=me.session, ref=view.id, text=text)
            for device in sorted({m.device for m in targets if m.device != self.own}):
                self.store.enqueue(device, SessionTurn(id=turn_id, link=view.id, sender=me, text=text).model_dump())
            if targets:
                out.append({"link": view.id, "to": [m.model_dump() for m in targets]})
        return out

    def receive_turn(self, turn: SessionTurn, from_device: str) -> list[str]:
        """A paired device's session said this on a link: filed for this machine's other members (the sessions
        returned). Refused (nothing filed) unless the sender is that device's own session, still in a live link."""
        return self.file_turn(turn, from_device)[0]

    def file_turn(self, turn: SessionTurn, from_device: str, per_session: int | None = None,
                  per_device: int | None = None) -> tuple[list[str], int]:
        """:meth:`receive_turn`, keeping the sending device's undelivered backlog within ``per_session`` and
        ``per_device`` (its oldest dropped); returns (the sessions it was filed for, how many were dropped)."""
        if turn.sender.device != from_device or turn.sender.device == self.own:
            return [], 0
        view = self.store.find_link(turn.link)
        if view is None:
            return [], 0
        delivered, dropped = [], 0
        for m in rules.recipients(view, turn.sender):
            if m.device != self.own:
                continue
            message = dict(id=f"{turn.id}:{m.session}", session=m.session, kind="link", from_device=from_device,
                           from_session=turn.sender.session, ref=view.id, text=turn.text)
            if per_session is None or per_device is None:
                filed, gone = self.store.add_message(**message), 0
            else:
                filed, gone = self.store.add_remote_message(per_session=per_session, per_device=per_device,
                                                            **message)
            dropped += gone
            if filed:
                delivered.append(m.session)
        return delivered, dropped

    # ---- messages and context --------------------------------------------------------------------------------

    def message(self, session: str, text: str, *, from_session: str | None = None, kind: str = "message",
                ref: str | None = None) -> SessionMessageRow:
        """A message for a session on this machine, given to it by its next hook."""
        self.ref(session)  # a session id
        if not text.strip():
            raise InvalidInputError("the message is empty")
        mid = "msg-" + secrets.token_hex(8)
        self.store.add_message(id=mid, session=session, kind=kind, from_device=self.own, from_session=from_session,
                               ref=ref, text=text[:MESSAGE_MAX])
        return next(m for m in self.store.messages(session, limit=20) if m.id == mid)

    def context(self, session: str, *, links: bool = True) -> str:
        """What a hook adds to ``session``'s context: the messages waiting for it (then marked delivered), and
        (``links``: at session start) the links it is in. "" when there is nothing."""
        lines: list[str] = []
        for m in self.store.take_undelivered(session, CONTEXT_MESSAGES, CONTEXT_CHARS):
            where = f"session {m.from_session or '?'} on {self.device_name(m.from_device)}"
            if m.kind == "link":
                head = f"[p2pd session link {m.ref}] the linked {where} finished a turn; its output:"
            elif m.kind == "delegation":
                head = f"[p2pd delegation {m.ref}] message from the parent {where}:"
            else:
                head = f"[p2pd message] from {where}:"
            lines.append(f"{head}\n{_block(m.text)}")
        waiting = len(self.store.messages(session, undelivered=True))
        if waiting:
            lines.append(f"({waiting} more p2pd messages wait: MCP tool read_session_messages)")
        live = [v for v in self.links_of(session) if links and rules.live(v) and self.ref(session) in rules.active(v)]
        if live:
            names = ", ".join(f"{v.id}" + (f" ({visible(v.name, 64)})" if v.name else "") for v in live)
            lines.append(f"This session is linked ({names}): your turn output goes to the linked sessions; "
                         "sever a link with the p2pd MCP tool sever_session_link.")
        return "\n\n".join(lines)


def _block(text: str) -> str:
    """Peer text that may span lines, for an agent's context: each line through ``visible`` (control, bidi and
    invisible characters escaped), the line breaks kept, at most :data:`MESSAGE_MAX` characters."""
    return "\n".join(visible(line, None) for line in text[:MESSAGE_MAX].split("\n"))
