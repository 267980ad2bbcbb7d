"""Which version of each Gemini CLI message a document keeps, where it stands, under which id, and whether a
rewind left it — from the lines alone, without the messages (the whole way and the streamed way share it).

A JSONL recording (formats.md §2.2) changes its conversation as it goes: a message line whose ``id`` was seen
before replaces the earlier version in its place (the recorder writes a message again as its tool calls
finish); ``{"$rewindTo": ID}`` takes the conversation back to before message ``ID`` (those messages stay in the
document, marked inactive, and their ids are free again); ``{"$set": {…}}`` updates the session's metadata.
:class:`LineKinds` says what each line is, in order; :class:`Timeline` follows the messages. Memory: a few
numbers per message, none of its content.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Kind(Enum):
    """What a line of a JSONL recording is to the conversion."""

    UNREADABLE = "unreadable"  # not a JSON object: an issue, and a record kept byte for byte
    META = "meta"  # the session's metadata (the first object that is nothing else): a record
    UPDATE = "update"  # ``$set`` or ``$rewindTo``: a record, and an entry of the timeline
    MESSAGE = "message"  # an object with a string ``type``: an entry of the timeline
    OTHER = "other"  # an object that is none of those: an issue, and a record


NEITHER = "JSON object that is neither a message nor an update"  # the issue of an OTHER line


@dataclass
class LineKinds:
    """Each line's :class:`Kind`, in order (``kind``), and the session's metadata as the lines update it."""

    meta: dict[str, Any] = field(default_factory=dict)
    _entries: int = 0

    def kind(self, obj: dict[str, Any] | None) -> Kind:
        if obj is None:
            return Kind.UNREADABLE
        if not self.meta and not self._entries and "type" not in obj and "$set" not in obj \
                and "$rewindTo" not in obj:
            self.meta = dict(obj)
            return Kind.META
        if "$set" in obj or "$rewindTo" in obj:
            if isinstance(obj.get("$set"), dict):
                self.meta.update(obj["$set"])
            self._entries += 1
            return Kind.UPDATE
        if isinstance(obj.get("type"), str):
            self._entries += 1
            return Kind.MESSAGE
        return Kind.OTHER


@dataclass(slots=True)
class Place:
    """A message's place in the document: the line of its kept version, its id, whether it is active."""

    line: int
    message_id: str
    key: str | None = None  # the id its lines carry, when a string: what a new version or a rewind names
    active: bool = True


class Timeline:
    """The document's messages, in order, as the entries (updates and message lines) come."""

    def __init__(self) -> None:
        self.places: list[Place] = []
        self.superseded: dict[int, int] = {}  # line of a replaced version → line of the version replacing it
        self.rewound = 0  # messages a rewind made inactive
        self._index: dict[str, int] = {}  # id → its place, for the ids a rewind has not freed
        self._ids: Counter[str] = Counter()  # the ids in ``places`` (a freed id used again is renamed)

    def entry(self, line: int, obj: dict[str, Any]) -> None:
        """Follow one entry: an update (``$set`` changes no message) or a message line."""
        if "$rewindTo" in obj:
            self._rewind(obj.get("$rewindTo"))
        elif "$set" not in obj and isinstance(obj.get("type"), str):
            self._message(line, obj.get("id"))

    def _rewind(self, target: Any) -> None:
        if not isinstance(target, str) or target not in self._index:
            return
        start = self._index[target]
        for at in range(start, len(self.places)):  # (the places from the target on: their ids are free again)
            place = self.places[at]
            if place.active:
                place.active = False
                self.rewound += 1
            if place.key is not None and self._index.get(place.key) == at:
                del self._index[place.key]

    def _message(self, line: int, raw_id: Any) -> None:
        if isinstance(raw_id, str) and raw_id in self._index:  # a new version of a message: it takes its place
            place = self.places[self._index[raw_id]]
            self.superseded[place.line] = line
            place.line = line  # (its id, renamed or not, stays: the same message)
            return
        message_id = raw_id if isinstance(raw_id, str) and raw_id else f"gemini-{line}"
        if isinstance(raw_id, str):
            if self._ids[raw_id]:  # an id a rewind freed, used again
                message_id = f"{raw_id}#{line}"
            self._index[raw_id] = len(self.places)
        self._ids[message_id] += 1
        self.places.append(Place(line, message_id, raw_id if isinstance(raw_id, str) else None))

    def kept(self) -> dict[int, int]:
        """Line of each kept version → its place."""
        return {place.line: i for i, place in enumerate(self.places)}


__all__ = ["NEITHER", "Kind", "LineKinds", "Place", "Timeline"]
