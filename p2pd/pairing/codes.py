"""Pairing codes: ``<nameplate>-<word>-<word>``, e.g. ``7-guitar-meadow``.

The *nameplate* (digits) names the room on the signaling server and is public. The *words* are the PAKE
password and never leave the two peers. Generated codes draw their words from the project's own word list
(``wordlist.txt``, 1024 words, so two words carry 20 bits); a code typed by hand may use any words.
"""

from __future__ import annotations

import os
import re
import secrets
import sys
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TextIO

from p2pd.errors import InvalidInputError

CODE_ENV_VAR = "P2PD_CODE"
DEFAULT_WORDS = 2
MAX_WORDS = 8
MAX_NAMEPLATE_DIGITS = 9
MAX_WORD_CHARS = 32

# The one normalization (Python and the page, web/src/codes.js; pinned by tests/vectors/codes.json):
#   1. NFKC;  2. drop the invisible characters below;  3. full Unicode case folding;  4. NFKC again;
#   5. split on runs of separators: Unicode White_Space, the hyphen-minus, the hyphens and dashes U+2010–U+2015
#      and the minus sign U+2212 (a code pasted from a typeset page);
#   6. the first part is the nameplate (ASCII digits, leading zeros dropped), the others are the words: letters
#      and digits (general categories L* and N*), with the marks of scripts that combine them (M*) after the
#      first character (so नमस्ते, ไทย and i̇stanbul are words).
# Case folding, not lowercasing: "STRASSE", "Straße" and "strasse" are one word, as are "ΟΔΟΣ" and "οδος".
_IGNORED = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))  # soft hyphen, zero-width, BOM
_SEPARATORS = re.compile(
    "[\t\n\u000b\u000c\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\\-\u2010-\u2015\u2212]+")


class InvalidCodeError(InvalidInputError):
    """A pairing code that cannot be parsed (the message says what is wrong, never the words)."""


@lru_cache(maxsize=1)
def wordlist() -> tuple[str, ...]:
    """The project's word list: 1024 distinct lowercase words, 3–6 letters, no two one edit apart."""
    text = resources.files("p2pd.pairing").joinpath("wordlist.txt").read_text(encoding="utf-8")
    return tuple(line.strip() for line in text.splitlines() if line.strip())


@dataclass(frozen=True, slots=True)
class Code:
    """A parsed pairing code."""

    nameplate: str
    words: tuple[str, ...]

    @property
    def password(self) -> bytes:
        """The PAKE password: the normalized words joined by ``-`` (the nameplate is not part of it)."""
        return "-".join(self.words).encode("utf-8")

    @property
    def in_wordlist(self) -> bool:
        """Whether every word is from the project's list (a hand-picked code may use any words)."""
        known = set(wordlist())
        return all(word in known for word in self.words)

    def __str__(self) -> str:
        return "-".join((self.nameplate, *self.words))

    def __repr__(self) -> str:  # never print the secret words by accident
        return f"Code(nameplate={self.nameplate!r}, words=<{len(self.words)} hidden>)"


def generate_code(nameplate: str | int, *, words: int = DEFAULT_WORDS) -> Code:
    """A fresh code for ``nameplate`` with ``words`` words drawn uniformly from the word list."""
    if not 1 <= words <= MAX_WORDS:
        raise ValueError(f"a code has 1 to {MAX_WORDS} words, not {words}")
    plate = _normalize_nameplate(str(nameplate))
    choices = wordlist()
    return Code(plate, tuple(secrets.choice(choices) for _ in range(words)))


def normalize_text(text: str) -> str:
    """Steps 1–4 of the normalization: NFKC, invisible characters dropped, case folded, NFKC again."""
    folded = unicodedata.normalize("NFKC", text).translate(_IGNORED).casefold()
    return unicodedata.normalize("NFKC", folded)


def parse_code(text: str) -> Code:
    """Parse ``<digits>-<word>-<word>[-<word>…]``, normalized as the comment above ``_SEPARATORS`` says.

    Spaces work as separators too (``"7 Guitar  Meadow"`` is ``7-guitar-meadow``). Words outside the word list
    are accepted (:mod:`p2pd.pairing.typos` catches the near misses). Raises :class:`InvalidCodeError` with a
    message that names the problem but not the words; its ``details["reason"]`` is the kind of problem (as
    tests/vectors/codes.json names it).
    """
    parts = [part for part in _SEPARATORS.split(normalize_text(text)) if part]
    if not parts:
        raise _invalid("empty", "the pairing code is empty (expected something like 4-amber-river)")
    plate, words = parts[0], parts[1:]
    plate = _normalize_nameplate(plate)
    if len(words) < 2:
        raise _invalid("too-few-words", f"the pairing code needs at least 2 words after the number, it has "
                                        f"{len(words)} (expected e.g. 4-amber-river)")
    if len(words) > MAX_WORDS:
        raise _invalid("too-many-words", f"the pairing code has {len(words)} words; at most {MAX_WORDS} are allowed")
    for index, word in enumerate(words, start=1):
        if len(word) > MAX_WORD_CHARS:
            raise _invalid("word-too-long",
                           f"word {index} of the pairing code is longer than {MAX_WORD_CHARS} characters")
        if unicodedata.category(word[0])[0] not in "LN" or not all(unicodedata.category(ch)[0] in "LMN" for ch in word):
            raise _invalid("not-letters",
                           f"word {index} of the pairing code contains characters other than letters and digits")
    return Code(plate, tuple(words))


def _invalid(reason: str, message: str) -> InvalidCodeError:
    return InvalidCodeError(message, details={"reason": reason})


def _normalize_nameplate(plate: str) -> str:
    if not plate.isascii() or not plate.isdigit():
        raise _invalid("no-nameplate", "a pairing code starts with a number (the nameplate), as in 4-amber-river")
    if len(plate.lstrip("0")) > MAX_NAMEPLATE_DIGITS:
        raise _invalid("nameplate-too-long",
                       f"the number at the start of the code is longer than {MAX_NAMEPLATE_DIGITS} digits")
    return str(int(plate))


def read_code(
    argument: str | None = None,
    *,
    stdin: TextIO | None = None,
    environ: dict[str, str] | None = None,
) -> Code | None:
    """The code from (in order) ``argument``, ``$P2PD_CODE`` or stdin.

    ``argument == "-"`` reads the first line of ``stdin`` (so the code stays out of the process list and
    shell history). Without an argument the environment variable is used when set; returns ``None`` when
    no source gave a code (the caller then allocates a new one).
    """
    env = os.environ if environ is None else environ
    if argument == "-":
        stream = sys.stdin if stdin is None else stdin
        line = stream.readline()
        if not line.strip():
            raise InvalidCodeError("expected the pairing code on standard input, got nothing")
        return parse_code(line)
    if argument is not None:
        return parse_code(argument)
    value = env.get(CODE_ENV_VAR)
    if value is not None and value.strip():
        return parse_code(value)
    return None
