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

_SEPARATORS = re.compile(r"[\s\-]+")


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


def parse_code(text: str) -> Code:
    """Parse ``<digits>-<word>-<word>[-<word>…]``.

    Case, surrounding whitespace and Unicode forms are normalized; spaces work as separators too
    (``"7 Guitar  Meadow"`` is ``7-guitar-meadow``). Words outside the word list are accepted.
    Raises :class:`InvalidCodeError` with a message that names the problem but not the words.
    """
    normalized = unicodedata.normalize("NFKC", text).strip().casefold()
    if not normalized:
        raise InvalidCodeError("the pairing code is empty (expected something like 4-amber-river)")
    parts = [part for part in _SEPARATORS.split(normalized) if part]
    if not parts:
        raise InvalidCodeError("the pairing code has no number and no words (expected e.g. 4-amber-river)")
    plate, words = parts[0], parts[1:]
    if not plate.isascii() or not plate.isdigit():
        raise InvalidCodeError(
            "a pairing code starts with a number (the nameplate), as in 4-amber-river"
        )
    plate = _normalize_nameplate(plate)
    if len(words) < 2:
        raise InvalidCodeError(
            f"the pairing code needs at least 2 words after the number, it has {len(words)}"
            " (expected e.g. 4-amber-river)"
        )
    if len(words) > MAX_WORDS:
        raise InvalidCodeError(f"the pairing code has {len(words)} words; at most {MAX_WORDS} are allowed")
    for index, word in enumerate(words, start=1):
        if len(word) > MAX_WORD_CHARS:
            raise InvalidCodeError(f"word {index} of the pairing code is longer than {MAX_WORD_CHARS} characters")
        if not all(ch.isalnum() for ch in word):
            raise InvalidCodeError(
                f"word {index} of the pairing code contains characters other than letters and digits"
            )
    return Code(plate, tuple(words))


def _normalize_nameplate(plate: str) -> str:
    if not plate.isascii() or not plate.isdigit():
        raise InvalidCodeError("a nameplate is a number, e.g. 7")
    if len(plate.lstrip("0")) > MAX_NAMEPLATE_DIGITS:
        raise InvalidCodeError(f"the number at the start of the code is longer than {MAX_NAMEPLATE_DIGITS} digits")
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
