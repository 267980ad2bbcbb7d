"""A Gemini CLI session in the older JSON format read one message at a time: ``{sessionId, projectHash, startTime,
lastUpdated, messages: [...]}``, one object the CLI wrote again at every turn.

The whole reading (:func:`~p2pd.agents.gemini.export.export_gemini`) decodes the file (UTF-8, undecodable bytes
kept as surrogates) and parses it with ``json.loads``. Here the file is decoded the same way a piece at a time,
and the top-level object is walked with the same parser, ``json``'s (``JSONDecoder.raw_decode``: one value from a
position, in C): each member's key, then its value — ``messages`` an element at a time, every other member whole
(the session's metadata). So every value is the one ``json.loads`` makes, and memory is one message and the text
not parsed yet (a piece: a message longer than that is read on until it ends).

Whatever this reading could read otherwise than the whole one is left to it — :class:`NotStreamable`, raised
before the caller writes anything: a top level that is not one object holding one ``messages`` array, text after
it, anything ``json`` refuses (the whole reading then says why).
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from p2pd.agents.jsonl import open_lines
from p2pd.agents.spec import NotStreamable

PIECE = 1 << 20
_WHITESPACE = " \t\n\r"  # JSON's (json.loads skips these around values)
_DECODER = json.JSONDecoder()


class _Text:
    """The file's text from ``at`` on, decoded a piece at a time (``more`` reads on; false at the end)."""

    def __init__(self, fh: Any) -> None:
        self._fh = fh
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
        self.text = ""
        self.at = 0
        self.ended = False

    def more(self, at_least: int = PIECE) -> bool:
        if self.ended:
            return False
        if self.at > PIECE:  # (let go of what was parsed)
            self.text, self.at = self.text[self.at:], 0
        data = self._fh.read(max(at_least, PIECE))
        self.text += self._utf8.decode(data, final=not data)
        self.ended = not data
        return True

    def skip_space(self) -> str:
        """The next character that is no whitespace ("" at the end)."""
        while True:
            text, at = self.text, self.at
            while at < len(text) and text[at] in _WHITESPACE:
                at += 1
            self.at = at
            if at < len(text) or not self.more():
                return text[at] if at < len(text) else ""

    def closes(self, bracket: str) -> bool:
        """After a member or an element: True at ``bracket`` (the object or array ends), False at a comma."""
        mark = self.skip_space()
        self.at += 1
        if mark == bracket:
            return True
        if mark != ",":
            raise _Refused
        return False

    def expect(self, char: str) -> None:
        if self.skip_space() != char:
            raise _Refused
        self.at += 1

    def value(self) -> Any:
        """The JSON value from here, after whitespace (read on while it is cut off by the end of what was read)."""
        self.skip_space()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.at)
            except json.JSONDecodeError:
                if not self.more(len(self.text)):  # (doubling: a long value is parsed again a few times, not n)
                    raise _Refused from None
                continue
            except RecursionError:
                raise _Refused from None
            if end == len(self.text) and self.more():  # (a number may go on in the next piece)
                continue
            self.at = end
            return value


class _Refused(Exception):
    """Not a session this reading takes as the whole reading would."""


class JsonSession:
    """The file at ``path``: :meth:`messages` reads its ``messages`` elements in order, each as ``(index,
    value)``; once a reading has ended, :attr:`meta` holds the other members (the whole reading's ``meta``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.meta: dict[str, Any] = {}

    def messages(self) -> Iterator[tuple[int, Any]]:
        meta: dict[str, Any] = {}
        seen = False
        try:
            with open_lines(self.path) as fh:
                text = _Text(fh)
                text.expect("{")
                while True:
                    key = text.value()  # (an empty object has none: refused, and the whole reading says why)
                    if not isinstance(key, str):
                        raise _Refused
                    text.expect(":")
                    if key != "messages":
                        meta[key] = text.value()
                    elif seen or text.skip_space() != "[":
                        raise _Refused  # (two of them, or one that is no array)
                    else:
                        seen = True
                        yield from self._elements(text)
                    if text.closes("}"):
                        break
                if text.skip_space() != "" or not seen:
                    raise _Refused  # (text after the object; no messages)
        except _Refused:
            raise NotStreamable(self.path) from None
        self.meta = meta

    @staticmethod
    def _elements(text: _Text) -> Iterator[tuple[int, Any]]:
        text.at += 1  # (the "[")
        if text.skip_space() == "]":
            text.at += 1
            return
        index = 0
        while True:
            yield index, text.value()
            index += 1
            if text.closes("]"):
                return


__all__ = ["JsonSession"]
