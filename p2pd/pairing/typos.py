"""Typos in a typed code, caught before anything is sent.

A wrong code costs both sides their attempt (the PAKE fails as "wrong code", exit 9), so a code is checked first.
The word list (``wordlist.txt``) is built so that no two of its words are one edit apart, hence a word outside the
list that is one edit (a letter added, dropped or changed, or two neighbours swapped) from a list word is most
likely that word mistyped. A code is refused as a likely typo when it looks like a made code gone wrong: **every**
word is in the list or one edit from a list word, and not all are in it — ``5-amber-lotos`` gets "did you mean
5-amber-lotus?". A code with a word far from every list word is hand-chosen and passes unchanged
(``7-quiet-harbour``, ``8-lotos-zzyzx``).

Why every word and not any: about a quarter of common English words outside the list are one edit from a list
word ("apple"/"ample", "agents"/"agent"). Over random pairs of the words in this repository's documentation,
refusing a code when *any* word is near the list refused 41 % of the hand-chosen two-word codes, this rule 11 %;
both catch every single-edit typo of a made code (20,000 random typos, seed 1234). A hand-chosen code that is
still refused (``7-quiet-harbor``: "harbor" ~ "arbor") is used as given with the CLI's ``--exact-code``.
"""

from __future__ import annotations

import itertools
import string
from functools import lru_cache

from p2pd.pairing.codes import Code, InvalidCodeError, wordlist

MAX_SUGGESTIONS = 3


class LikelyTypoError(InvalidCodeError):
    """A code with a word one edit from a word of the list (``details["suggestions"]``: the codes it may mean)."""


@lru_cache(maxsize=1)
def _known() -> frozenset[str]:
    return frozenset(wordlist())


def near_words(word: str) -> tuple[str, ...]:
    """The list words one edit from ``word`` (none for a word of the list itself), in list order."""
    known = _known()
    if word in known:
        return ()
    edits: set[str] = set()
    for i in range(len(word) + 1):
        head, tail = word[:i], word[i:]
        if tail:
            edits.add(head + tail[1:])  # a letter dropped
            if len(tail) > 1:
                edits.add(head + tail[1] + tail[0] + tail[2:])  # two neighbours swapped
        for letter in string.ascii_lowercase:  # the list's words are lowercase ASCII
            edits.add(head + letter + tail)  # a letter added
            if tail:
                edits.add(head + letter + tail[1:])  # a letter changed
    found = edits & known
    return tuple(w for w in wordlist() if w in found)


def suggestions(code: Code) -> list[Code]:
    """What ``code`` probably meant when it looks like a made code mistyped (every word in the list or one edit
    from it): each word outside the list replaced by its near list words (at most :data:`MAX_SUGGESTIONS` codes).
    Empty when the code is all list words, or has a word far from every list word (hand-chosen)."""
    if code.in_wordlist:
        return []
    known = _known()
    options = [(word,) if word in known else near_words(word) for word in code.words]
    if not all(options):  # a word far from every list word: a hand-chosen code
        return []
    return [Code(code.nameplate, words) for words in itertools.islice(itertools.product(*options), MAX_SUGGESTIONS)]


def check_typos(code: Code, *, hint: str = "") -> Code:
    """``code`` when no word looks mistyped; else :class:`LikelyTypoError` saying "did you mean …?" (then
    ``hint``). The message shows the code's words: it is for the person who typed them, never for a log."""
    meant = suggestions(code)
    if not meant:
        return code
    typos = [w for w in code.words if near_words(w)]
    said = ", ".join(f"“{w}”" for w in typos)
    options = " or ".join(str(c) for c in meant)
    verb = "are each" if len(typos) > 1 else "is"
    message = f"{said} {verb} one letter from a word of p2pd's list: did you mean {options}?"
    raise LikelyTypoError(message + (f" {hint}" if hint else ""),
                          details={"reason": "typo", "suggestions": [str(c) for c in meant]})
