"""visible_lines (p2pd/support/text.py): visible() uncut, with newlines and tabs kept — the same escapes as the
vectors both ports are held to (tests/vectors/visible_text.json) for every text without them."""

from __future__ import annotations

import json
from pathlib import Path

from p2pd.support.text import visible, visible_lines

VECTORS = json.loads((Path(__file__).resolve().parents[1] / "vectors" / "visible_text.json").read_text())["cases"]


def test_the_same_escapes_as_visible_without_a_limit() -> None:
    texts = {case["text"] for case in VECTORS if "\n" not in case["text"] and "\t" not in case["text"]}
    assert len(texts) > 5
    for text in texts:
        assert visible_lines(text) == visible(text, None), text


def test_newlines_and_tabs_stay_everything_else_shows() -> None:
    text = "line one\n\tindented \x1b[2J\r\n\u202eend\u2028\x00"
    assert visible_lines(text) == "line one\n\tindented \\x1b[2J\\x0d\n\\u202eend\\u2028\\x00"
    assert visible(text, None) == "line one\\x0a\\x09indented \\x1b[2J\\x0d\\x0a\\u202eend\\u2028\\x00"
