"""The byte patterns the structural scanner (:mod:`p2pd.conversation.json_scan`) matches in C: whole strings and
runs of plain bytes at a time, possessive (no backtracking, linear time)."""

from __future__ import annotations

import re

# Everything up to the next bracket, strings included (possessive: no backtracking, linear time).
COARSE = re.compile(rb'(?:[^"\[\]{}]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+', re.DOTALL)
# The skeleton's tokens: everything up to the next quote, bracket or comma.
PLAIN = re.compile(rb'[^"\[\]{},]*+')
# A string's body up to its closing quote (or the end of what has come).
BODY = re.compile(rb'[^"\\]*+(?:\\.[^"\\]*+)*+', re.DOTALL)
WS = re.compile(rb"[ \t\n\r]*+")


def _nested(levels: int) -> re.Pattern[bytes]:
    """A whole element nested at most ``levels`` deep, in one match (brackets are paired by count, not kind:
    the parser checks the element afterwards)."""
    string = rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
    inner = rb"(?!)"
    for _ in range(levels):
        inner = rb"[\[{](?:[^\"\[\]{}]++|" + string + rb"|" + inner + rb")*+[\]}]"
    return re.compile(inner, re.DOTALL)


FAST_LEVELS = 12
ELEMENT = _nested(FAST_LEVELS)  # most elements are found in one call; the rest bracket by bracket
