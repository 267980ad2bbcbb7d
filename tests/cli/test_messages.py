"""One voice (issue 17, "Messages"): every line a transfer's failure prints — each code of
p2pd/transfer/events.py ``_WORDS``, ended by the peer or by this side with each reason the transfer code actually
gives — reads once: no stutter (a phrase said twice, a word twice in a row), no internal name (a cause or reason
code such as ``peer_gone``), and a peer's words quoted once."""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest

from p2pd.cli.main import error_line
from p2pd.errors import Cause
from p2pd.transfer.events import Failure
from p2pd.transfer.frames import Code

ROOT = Path(__file__).resolve().parents[2]


def local_reasons() -> dict[str, list[str]]:
    """Code name -> the reasons this side's transfer code fails with (``machine.fail(Code.X, "…")``, and
    ``cancel("…")`` for CANCELLED), read from the sources; an f-string's values and computed reasons become
    ``X…``."""
    found: dict[str, list[str]] = {}
    for path in (ROOT / "p2pd").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
                continue
            if node.func.attr == "fail" and len(node.args) == 2 and isinstance(node.args[0], ast.Attribute) \
                    and isinstance(node.args[0].value, ast.Name) and node.args[0].value.id == "Code":
                code, reason = node.args[0].attr, node.args[1]
            elif node.func.attr == "cancel" and len(node.args) == 1:
                code, reason = "CANCELLED", node.args[0]
            else:
                continue
            text = _literal(reason)
            if text is not None:
                found.setdefault(code, []).append(text)
    return found


def _literal(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else f"X{i}" for i, v in enumerate(node.values))
    return "X"  # computed: whatever the error in hand says


_INTERNAL = re.compile(r"\b[a-z]+_[a-z_]+\b")  # peer_gone, too_large, checksum_mismatch …


def stutter(line: str) -> str | None:
    """A phrase of three words said twice, or a word twice in a row; None when the line reads once."""
    words = re.findall(r"[\w'-]+", line.lower())
    for a, b in itertools.pairwise(words):
        if a == b:
            return f"{a} {b}"
    seen: set[tuple[str, ...]] = set()
    for i in range(len(words) - 2):
        phrase = tuple(words[i:i + 3])
        if phrase in seen:
            return " ".join(phrase)
        seen.add(phrase)
    return None


def test_the_reasons_are_found() -> None:
    reasons = local_reasons()
    assert {"TIMEOUT", "IO", "INVALID", "CANCELLED", "PROTOCOL", "CHECKSUM"} <= set(reasons), reasons


def test_the_checks_can_fail() -> None:
    assert stutter("signaling server unreachable: signaling server unreachable at X") == "signaling server unreachable"
    assert stutter("the transfer was cancelled: cancelled") == "cancelled cancelled"
    assert stutter("the receiver declined the offer; nothing was sent") is None
    assert _INTERNAL.search("the transfer failed (peer_gone)")


@pytest.mark.parametrize("code", list(Code), ids=lambda c: c.name)
def test_every_failure_line_reads_once(code: Code) -> None:
    reasons = [*local_reasons().get(code.name, []), "the peer sent X"]
    lines = [error_line(Failure(code, "", True).exception()), error_line(Failure(code, "not today", True).exception())]
    lines += [error_line(Failure(code, reason, False).exception()) for reason in reasons]
    causes = {c.value for c in Cause if "_" in c.value}
    for line in lines:
        text = line.removeprefix("[bold red]error:[/] ")
        assert stutter(text) is None, (stutter(text), text)
        assert not (set(_INTERNAL.findall(text)) & causes) and code.name not in text, text
        assert text.count("not today") <= 1, text


def test_counts_agree_with_their_noun(tmp_path: Path) -> None:
    """'dropped 1 thinking blocks' was one of the lines: the sample conversation has exactly one."""
    from tests.cli.helpers import SHORT, run

    r = run("import", str(SHORT), "--cwd", str(tmp_path), "--dry-run",
            env={"CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "P2PD_CONFIG": str(tmp_path / "none.toml")})
    assert r.returncode == 0, r.stderr
    assert "dropped 1 thinking block (" in r.stderr and "1 thinking blocks" not in r.stderr, r.stderr
    assert stutter(r.stderr.splitlines()[0]) is None
