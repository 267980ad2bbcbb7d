"""Showing text that came from elsewhere (a peer, a server, a transcript title) without letting it act.

:func:`visible` makes every control character, bidi override/isolate/mark and other invisible format character
visible as an escape (``\\u202e``), collapses nothing else, and caps the length. Use it on every string a peer or
server wrote before it reaches a terminal, a table, a log line or the page. Never compare peer text: decide on
typed fields (:mod:`p2pd.errors`), display text.
"""

from __future__ import annotations

import re
import unicodedata

# C0/C1 controls and DEL; bidi embeddings/overrides/isolates/marks; zero-width and other format characters
# that change how the rest of a line renders; line/paragraph separators.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_INVISIBLE = "\u200b-\u200d\u2028\u2029\u2060-\u2064\ufeff\ufff9-\ufffb"
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}{_INVISIBLE}]")
_UNSAFE_IN_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}{_INVISIBLE}]")  # (newline and tab kept)


def _escape(match: re.Match[str]) -> str:
    ch = match.group(0)
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, limit: int | None = 300) -> str:
    """``text`` with control, bidi and invisible format characters escaped, cut to ``limit`` characters."""
    out = _other_format(_UNSAFE.sub(_escape, text))
    if limit is not None and len(out) > limit:
        out = out[: limit - 1] + "…"
    return out


def visible_lines(text: str) -> str:
    """Like :func:`visible`, uncut, with its newlines and tabs kept: a multi-line text shown whole (``p2pd show
    --full``), nothing in it acting on the terminal."""
    return _other_format(_UNSAFE_IN_LINES.sub(_escape, text))


def _other_format(text: str) -> str:
    """Format characters (category Cf) not escaped by the patterns, escaped too."""
    if any(unicodedata.category(c) == "Cf" for c in text):
        return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) == "Cf" and ord(c) > 0xFF else c
                       for c in text)
    return text


def visible_line(text: str, limit: int | None = 300) -> str:
    """Like :func:`visible`, with runs of whitespace (newlines included) first folded to one space."""
    return visible(" ".join(text.split()), limit)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun that agrees with it: ``1 thinking block``, ``2 thinking blocks``, ``0 replies``."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def human(n: float) -> str:
    """A byte count for people: ``512 B``, ``1.5 KB``, ``3.2 GB`` (powers of 1000)."""
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"  # pragma: no cover - the loop returns at GB
