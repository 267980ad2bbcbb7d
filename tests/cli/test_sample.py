"""The sample session ``p2pd demo`` hands over when given none (p2pd/cli/demo_session.jsonl): small, sanitized,
and a real Claude Code session that converts like any other. ``p2pd demo`` with it, from an installed wheel, is
tests/test_wheel.py."""

from __future__ import annotations

import json
import re

from p2pd.agents.sources import load_file
from p2pd.cli.exchange import sample_session


def test_the_sample_is_small_and_sanitized() -> None:
    path = sample_session()
    data = path.read_bytes()
    assert 10_000 < len(data) < 100_000
    text = data.decode("utf-8")
    assert "marco" not in text.lower()
    assert not re.search(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[a-z]{2,}", text), "an e-mail address"
    lines = [json.loads(line) for line in text.splitlines()]
    assert {"user", "assistant", "progress", "file-history-snapshot"} <= {line["type"] for line in lines}
    assert (path.parent / "demo_session.NOTICE.txt").read_text(encoding="utf-8").count("MIT") >= 1


def test_the_sample_converts_as_a_claude_code_session() -> None:
    doc = load_file(str(sample_session()))
    assert doc.counts.messages == 9 and doc.counts.tool_calls == 4
    assert doc.title and doc.title.startswith("Work on bead spotter-dov")
