"""Finding a conversation document's elements in a stream of JSON bytes, in any layout, in bounded memory.

A structural scanner, sans-I/O: it is fed the document's bytes in pieces of any size and hands out, one at a
time, each element of the big arrays — ``messages``, ``records`` and ``toolResults`` at the top, ``messages`` and
``records`` of every ``subagents`` object, or the elements of a bare top-level array of messages — and keeps the
rest (the "skeleton": the envelope with those arrays left empty) for the end. In the line layout
(:mod:`p2pd.conversation.layout`) an element alone on its line is found with one ``find`` and parsed at once
by orjson (or first offered to a quick check: :mod:`p2pd.conversation.element_check`), with no regular
expression over its bytes; anything else is scanned without building values —
strings, brackets and the keys of the two objects whose keys matter — with regular expressions that run in C
over whole strings and runs of plain bytes, and handed out as bytes for the caller to parse (and check as JSON).

Memory is one element plus one piece. Limits (:mod:`p2pd.conversation.json_limits`) are checked while scanning,
before anything is parsed: the nesting depth (bracket by bracket, so 10⁵ levels stop at the first level past the
limit; on the fast path bounded by the element's brackets and measured only when they could be too many), the
bytes of one element and of the skeleton, and the number of values in one element (bounded by its length, or a
cheap comma count made exact only when it says too many), which bounds the Python objects parsing it makes.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from msgspec.json import decode

from p2pd.conversation.json_limits import DEFAULT_LIMITS, Limits, count_values, opening_brackets, value_depth
from p2pd.conversation.json_patterns import BODY, COARSE, ELEMENT, FAST_LEVELS, PLAIN, WS
from p2pd.conversation.json_text import DECODE_REFUSED
from p2pd.errors import InvalidInputError, TooLargeError

# (array key, subagent index or None, the element's bytes, its value when the scanner parsed it, else UNPARSED)
ElementSink = Callable[[str, int | None, bytes, object], None]
SubagentSink = Callable[[int, bytes], None]  # (subagent index, its object without its element arrays)
QuickCheck = Callable[[str, bytearray], object]  # (array key, a line's element) -> its checked value, or None
UNPARSED = object()  # an element handed out as bytes only (the caller parses it)

_LINE_WAIT = 8 << 20  # how far the line layout's fast path looks for an element's line end
_LINE_TAIL = frozenset(b" \t\r,")  # what may follow an element on its line (the scan checks the comma)
_OPEN = frozenset(b"[{")
_SCALAR_START = frozenset(b'"-0123456789tfnNI')
_QUOTE, _COMMA = ord('"'), ord(",")
_LBRACE, _RBRACE, _LBRACKET, _RBRACKET = (ord(c) for c in "{}[]")

TOP_ARRAYS = (b"messages", b"records", b"toolResults")  # element arrays of the document object
SUB_ARRAYS = (b"messages", b"records")  # element arrays of each subagent object

# Frame roles: what an open container is, for what its children mean.
_TOP, _SUBAGENTS, _SUBAGENT, _OTHER = range(4)


class _Frame:
    __slots__ = ("count", "expect_key", "index", "is_object", "key", "role", "skeleton_at")

    def __init__(self, is_object: bool, role: int, index: int = -1, skeleton_at: int = 0) -> None:
        self.is_object = is_object
        self.role = role
        self.expect_key = is_object
        self.key = b""
        self.index = index  # a subagent's index
        self.count = 0  # subagents seen (the subagents array)
        self.skeleton_at = skeleton_at  # where a subagent's object starts in the skeleton


class Scanner:
    """Feed it bytes (:meth:`feed`); it calls ``on_element`` for each element and ``on_subagent`` as each
    subagent's object closes; :meth:`finish` returns the skeleton. Raises InvalidInputError for what is not JSON
    or nests too deep, TooLargeError for what is over a limit."""

    def __init__(self, on_element: ElementSink, on_subagent: SubagentSink | None = None, *,
                 limits: Limits = DEFAULT_LIMITS, source: str = "input", keep_raw: bool = False,
                 quick: QuickCheck | None = None) -> None:
        """``keep_raw``: hand out the bytes of parsed elements too (else ``b""``). ``quick``: the line layout's
        elements are first offered to it (:mod:`p2pd.conversation.element_check`); what it returns is handed out
        as their value, None sends them to orjson."""
        self._quick = quick
        self.limits = limits
        self.keep_raw = keep_raw
        self.source = source
        self._on_element = on_element
        self._on_subagent = on_subagent
        self._buf = bytearray()
        self._pos = 0
        self._stack: list[_Frame] = []
        self._skeleton = bytearray()
        self._skel_from = 0  # start of the skeleton bytes not yet copied (in _buf); -1 inside an element array
        self._done = False  # the top-level value has closed
        self._started = False
        self._final = False  # finish(): nothing more will come
        self._lines = False  # an element was found alone on its line: the next one waits for its line's end
        self._format_seen = False
        self._opened: set[tuple[bytes, int | None]] = set()
        # element-array state
        self._array: tuple[str, int | None] | None = None
        self._array_depth = 0
        self._after_element = False  # an element was read; a comma or the end comes next
        self._after_comma = False
        self._elem_start = -1  # where the element being scanned starts (-1: between elements)
        self._elem_depth = 0
        self._elem_containers = 0
        self._str_resume = -1  # inside a string: where to go on scanning its body
        self.elements = 0
        self._lines_before = 0  # newlines in the bytes let go
        self._nl_mark = 0  # the newlines in _buf[:_nl_mark] are _nl_count (the line layout counts them as it goes)
        self._nl_count = 0
        self._col_base = 0  # bytes let go since the last of them
        self.element_at = 0  # where the element being handed out starts in the buffer

    # ------------------------------------------------------------------ feeding
    def feed(self, data: bytes) -> None:
        if not data:
            return
        self._buf += data
        self._scan()
        self._compact()

    def finish(self) -> bytes:
        self._final = True
        self._scan()
        if not self._done:
            raise self._not_json("the document ends before its last bracket closes" if self._started
                                 else "the document is empty")
        self._compact()
        return bytes(self._skeleton)

    def _compact(self) -> None:
        keep = self._pos
        if self._array is None:
            self._copy_skeleton(self._pos)
        if self._elem_start >= 0:
            keep = self._elem_start
            if len(self._buf) - keep > self.limits.element_bytes:
                raise self._too_large(f"an element over {self.limits.element_bytes} bytes")
        elif self._array is None and len(self._skeleton) + len(self._buf) - keep > self.limits.skeleton_bytes:
            raise self._too_large(f"over {self.limits.skeleton_bytes} bytes outside its messages")
        if keep:
            mark = self._nl_mark
            dropped = self._nl_count + self._buf.count(b"\n", mark, keep) if mark <= keep else \
                self._buf.count(b"\n", 0, keep)
            self._lines_before += dropped
            self._nl_mark, self._nl_count = max(mark - keep, 0), max(self._nl_count - dropped, 0)
            nl = self._buf.rfind(b"\n", 0, keep)
            self._col_base = keep - nl - 1 if nl >= 0 else self._col_base + keep
            del self._buf[:keep]
            self._pos -= keep
            if self._elem_start >= 0:
                self._elem_start -= keep
            if self._str_resume >= 0:
                self._str_resume -= keep
                self._str_start -= keep
            if self._skel_from >= 0:
                self._skel_from = max(0, self._skel_from - keep)

    def _copy_skeleton(self, upto: int) -> None:
        if self._skel_from >= 0 and upto > self._skel_from:
            self._skeleton += self._buf[self._skel_from:upto]
            self._skel_from = upto
            if len(self._skeleton) > self.limits.skeleton_bytes:
                raise self._too_large(f"over {self.limits.skeleton_bytes} bytes outside its messages")

    # ------------------------------------------------------------------ the scan
    def _scan(self) -> None:
        buf = self._buf
        while self._pos < len(buf):
            if self._done:
                end = WS.match(buf, self._pos).end()  # type: ignore[union-attr]
                if end < len(buf):
                    raise self._not_json(f"more data after the document at {self.where(end)}")
                self._pos = end
                return
            progressed = self._in_array() if self._array is not None else self._in_skeleton()
            if not progressed:
                return

    def _in_skeleton(self) -> bool:
        buf, pos = self._buf, self._pos
        if not self._started:
            pos = WS.match(buf, pos).end()  # type: ignore[union-attr]
            self._pos = pos
            if pos >= len(buf):
                return False
            if buf[pos] not in _OPEN:
                raise self._not_json("it does not start with { or [")
            self._started = True
        if self._str_resume >= 0:  # a string that did not end in the last piece
            end = BODY.match(buf, self._str_resume).end()  # type: ignore[union-attr]
            if end >= len(buf) or buf[end] != _QUOTE:
                self._str_resume = end
                return False
            start = self._str_start
            self._str_resume = -1
            self._pos = end + 1
            self._string(start, end + 1)
            return True
        pos = PLAIN.match(buf, pos).end()  # type: ignore[union-attr]
        if pos >= len(buf):
            self._pos = pos
            return False
        c = buf[pos]
        if c == _QUOTE:
            self._str_start = pos
            self._str_resume = pos + 1
            self._pos = pos
            return True
        self._pos = pos + 1
        if c == _COMMA:
            if self._stack and self._stack[-1].is_object:
                self._stack[-1].expect_key = True
        elif c in _OPEN:
            self._open(c == _LBRACE, pos)
        else:
            self._close(c == _RBRACE, pos)
        return True

    _str_start = 0

    def _string(self, start: int, end: int) -> None:
        frame = self._stack[-1] if self._stack else None
        if frame is None or not frame.is_object or not frame.expect_key:
            return
        frame.expect_key = False
        if frame.role not in (_TOP, _SUBAGENT):
            return
        raw = bytes(self._buf[start + 1:end - 1])
        if b"\\" in raw:
            try:
                raw = json.loads(b'"' + raw + b'"').encode("utf-8", "surrogatepass")
            except ValueError:
                raise self._not_json("a key that is not a JSON string") from None
        frame.key = raw
        if frame.role == _TOP and raw == b"format":
            self._format_seen = True

    def _open(self, is_object: bool, pos: int) -> None:
        parent = self._stack[-1] if self._stack else None
        if len(self._stack) >= self.limits.depth:
            raise self._too_deep()
        role, index = _OTHER, -1
        array: tuple[str, int | None] | None = None
        if parent is None:
            if is_object:
                role = _TOP
            else:
                array = ("messages", None)  # a bare list of messages
        elif parent.role == _TOP and parent.is_object and not is_object:
            key = parent.key
            if key == b"messages" or (self._format_seen and key in TOP_ARRAYS):
                array = (key.decode(), None)
            elif key == b"subagents" and self._format_seen:
                role = _SUBAGENTS
        elif parent.role == _SUBAGENTS and is_object:
            role, index = _SUBAGENT, parent.count
            parent.count += 1
        elif parent.role == _SUBAGENT and parent.is_object and not is_object and parent.key in SUB_ARRAYS:
            array = (parent.key.decode(), parent.index)
        frame = _Frame(is_object, role, index, len(self._skeleton) + (pos - self._skel_from))
        self._stack.append(frame)
        if array is not None:
            marker = (array[0].encode(), array[1])
            if marker in self._opened:
                raise InvalidInputError(f"{self.source} holds its {array[0]} array twice in one object")
            self._opened.add(marker)
            self._copy_skeleton(pos + 1)
            self._skel_from = -1
            self._array = array
            self._array_depth = len(self._stack)
            self._after_element = self._after_comma = False

    def _close(self, is_object: bool, pos: int) -> None:
        if not self._stack or self._stack[-1].is_object != is_object:
            raise self._not_json(f"a closing bracket that closes nothing open at {self.where(pos)}")
        frame = self._stack.pop()
        if not self._stack:
            self._done = True
        if frame.role == _SUBAGENT and self._on_subagent is not None:
            self._copy_skeleton(pos + 1)
            self._on_subagent(frame.index, bytes(self._skeleton[frame.skeleton_at:]))

    # ------------------------------------------------------------------ inside an element array
    def _in_array(self) -> bool:
        buf = self._buf
        if self._elem_start >= 0:
            return self._in_element()
        pos = WS.match(buf, self._pos).end()  # type: ignore[union-attr]
        self._pos = pos
        if pos >= len(buf):
            return False
        c = buf[pos]
        if c == _RBRACKET and not self._after_comma:
            self._array = None
            self._skel_from = pos
            return True  # the skeleton scan closes the array
        if self._after_element:
            if c != _COMMA:
                raise self._not_json(f"a missing comma between two elements at {self.where(pos)}")
            self._after_element, self._after_comma = False, True
            self._pos = pos + 1
            return True
        if c not in _OPEN:
            if c not in _SCALAR_START:
                raise self._not_json(f"an unexpected character at {self.where(pos)}")
            raise InvalidInputError(f"wrong schema in {self.source}: an element of {self._where()} that is not "
                                    "an object")
        self._after_comma = False
        if c == _LBRACE:
            got = self._line_element(pos)
            if got is not None:
                return got
        if self._array_depth + FAST_LEVELS <= self.limits.depth:
            m = ELEMENT.match(buf, pos)
            if m is not None:
                end = m.end()
                self._pos = end
                self._element_done(pos, end, -1)
                return True
        self._elem_start, self._elem_depth, self._elem_containers = pos, 0, 0
        return True

    def _in_element(self) -> bool:
        buf = self._buf
        if self._str_resume >= 0:
            end = BODY.match(buf, self._str_resume).end()  # type: ignore[union-attr]
            if end >= len(buf) or buf[end] != _QUOTE:
                self._str_resume = end
                return False
            self._str_resume = -1
            self._pos = end + 1
        limit = self.limits.depth - self._array_depth
        while True:
            pos = COARSE.match(buf, self._pos).end()  # type: ignore[union-attr]
            if pos >= len(buf):
                self._pos = pos
                return False
            c = buf[pos]
            if c == _QUOTE:  # a string not ended in what has come
                self._pos = pos
                self._str_resume = pos + 1
                return self._in_element()
            self._pos = pos + 1
            if c in (_LBRACE, _LBRACKET):
                self._elem_depth += 1
                self._elem_containers += 1
                if self._elem_depth > limit:
                    raise self._too_deep()
            else:
                self._elem_depth -= 1
                if self._elem_depth == 0:
                    self._element_done(self._elem_start, pos + 1, self._elem_containers)
                    return True

    def _line_element(self, pos: int) -> bool | None:
        """The line layout's fast path: an element alone on its line (after a comma, before a comma or the line's
        end) is found with one ``find`` and read at once by the quick check or orjson, which say whether those bytes
        are exactly one object (they then are the element, whatever the rest). Limits are checked before: its bytes,
        the values (bounded by its length, counted when longer than the cap), the depth (bounded by its brackets;
        when they are more than the depth left, orjson parses it and the value is measured: it stops at 1024).
        It goes on with the next line while the layout holds. True: elements were handed out; False: wait for the
        line's end; None: the bracket-by-bracket scan takes this element."""
        buf, limits, got = self._buf, self.limits, False
        depth_left = limits.depth - self._array_depth
        while True:
            nl = buf.find(b"\n", pos, pos + _LINE_WAIT)
            if nl < 0:
                wait = self._lines and not self._final and len(buf) - pos < min(_LINE_WAIT, limits.element_bytes)
                return got or (False if wait else None)
            end = nl
            while buf[end - 1] in _LINE_TAIL and end - 1 > pos:
                end -= 1
            if buf[end - 1] != _RBRACE or end - pos > limits.element_bytes:
                return got or None
            if end - pos > limits.element_values and buf.count(b",", pos, end) + buf.count(b"{", pos, end) + \
                    buf.count(b"[", pos, end) > limits.element_values:
                return got or None  # counted exactly by the scan
            line = buf[pos:end]  # (d levels take 2d bytes and d brackets; a deep one is measured parsed)
            deep = len(line) > 2 * depth_left and opening_brackets(line) > depth_left
            value = None
            if self._quick is not None and not deep:
                assert self._array is not None
                value = self._quick(self._array[0], line)
            if value is None:
                try:
                    value = decode(line)
                except DECODE_REFUSED:
                    return got or None  # not one object (several, a lone surrogate, not JSON): the scan says
                if deep and value_depth(value) > depth_left:
                    raise self._too_deep()
            self._lines = got = True
            self._pos = end
            if self._nl_mark <= pos:  # [pos, nl) holds no newline: count this line's without reading it again
                self._nl_count += buf.count(b"\n", self._nl_mark, pos) + 1
                self._nl_mark = nl + 1
            self._handed(pos, bytes(line) if self.keep_raw else b"", value)
            if end == nl and buf.startswith(b",{", nl + 1):  # the next element, its comma leading its line
                pos = nl + 2
            elif buf.startswith(b",\n{", end):  # or ending this one
                pos = nl + 1
            else:
                return True
            self._pos, self._after_element = pos, False

    def _element_done(self, start: int, end: int, containers: int) -> None:
        """``containers``: how many arrays and objects the element holds (-1: not counted yet)."""
        if end - start > self.limits.element_bytes:
            raise self._too_large(f"an element over {self.limits.element_bytes} bytes")
        raw = bytes(self._buf[start:end])
        cap = self.limits.element_values
        cheap = raw.count(b",") + (raw.count(b"{") + raw.count(b"[") if containers < 0 else containers)
        if cheap > cap and count_values(raw) > cap:
            raise self._too_large(f"an element of more than {cap} JSON values")
        self._handed(start, raw, UNPARSED)

    def _handed(self, start: int, raw: bytes, value: object) -> None:
        self._elem_start = -1
        self._after_element = True
        self.elements += 1
        if self.elements > self.limits.elements:
            raise self._too_large(f"more than {self.limits.elements} messages, records and tool results")
        assert self._array is not None
        key, sub = self._array
        self.element_at = start
        self._on_element(key, sub, raw, value)

    def _where(self) -> str:
        assert self._array is not None
        key, sub = self._array
        return f"$.subagents[{sub}].{key}" if sub is not None else f"$.{key}"

    # ------------------------------------------------------------------ errors
    def where(self, pos: int, line_offset: int = 0, column: int = 0) -> str:
        """``line L column C`` of a byte still in the buffer (plus a line and column counted from it)."""
        line = self._lines_before + self._buf.count(b"\n", 0, pos) + 1
        start = self._buf.rfind(b"\n", 0, pos)
        col = pos - start if start >= 0 else self._col_base + pos + 1
        if line_offset:
            return f"line {line + line_offset} column {column}"
        return f"line {line} column {col + max(column - 1, 0)}"

    def _not_json(self, what: str) -> InvalidInputError:
        return InvalidInputError(f"{self.source} is not JSON: {what}")

    def _too_deep(self) -> InvalidInputError:
        return InvalidInputError(f"{self.source} nests JSON deeper than {self.limits.depth} levels; not a "
                                 "conversation document")

    def _too_large(self, what: str) -> TooLargeError:
        return TooLargeError(f"{self.source} holds {what}, over this receiver's limit")


__all__ = ["DEFAULT_LIMITS", "UNPARSED", "Limits", "Scanner"]
