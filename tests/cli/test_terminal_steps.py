"""Captured-terminal checks of the long steps outside a transfer (issue 17: "progress for export, conversion,
decompression and import"): on a real pty ``export``, ``convert``, ``import`` and ``send`` name each step with a
spinner and the time spent while it runs; the spinners are transient (the lines printed for good stay clean) and
nothing of them reaches a pipe."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import SHORT, run
from tests.cli.terminal import Terminal

pytestmark = pytest.mark.skipif(SHORT is None, reason="needs the transcript corpus")


def _steps_in_order(text: str, steps: list[str]) -> None:
    positions = [text.find(step) for step in steps]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), (steps, text)


def _wide(tmp_path: Path) -> dict[str, Any]:
    return {"cwd": tmp_path, "columns": 200}


def _env(tmp_path: Path) -> dict[str, str]:
    return {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "P2PD_CONFIG": str(tmp_path / "none.toml")}


def test_export_convert_and_import_name_their_steps_on_a_terminal(tmp_path: Path) -> None:
    doc, back = "c.a2a.p2pd", "back.jsonl"  # in tmp_path, short: a step's line is cut to the window's width
    with Terminal("export", str(SHORT), "--compressed", "-o", doc, env=_env(tmp_path), **_wide(tmp_path)) as t:
        assert t.wait() == 0, t.text
    # read, converted and written in one streamed step (the session is never held whole)
    _steps_in_order(t.text, [f"Reading, converting and writing {SHORT}", "Exported mix phx.server"])
    with Terminal("convert", doc, back, "--format", "claude-code", env=_env(tmp_path), **_wide(tmp_path)) as t:
        assert t.wait() == 0, t.text
    # read into a spool, converted and written in one streamed step (the document is never held whole)
    _steps_in_order(t.text, [f"Converting to Claude Code and writing {back}", "Wrote Claude Code session file"])
    with Terminal("import", doc, "--cwd", str(tmp_path), env=_env(tmp_path), **_wide(tmp_path)) as t:
        assert t.wait() == 0, t.text
    # read and imported in one streamed step (the document is never held whole)
    _steps_in_order(t.text, [f"Importing {doc} into Claude Code", "Imported mix phx.server"])
    assert "0:00:0" in t.text  # the time spent, beside the step


def test_no_step_reaches_a_pipe(tmp_path: Path) -> None:
    doc = tmp_path / "c.a2a.json"
    r = run("export", str(SHORT), "-o", str(doc), env=_env(tmp_path))
    assert r.returncode == 0 and "Reading" not in r.stderr and "Writing" not in r.stderr, r.stderr
    r = run("import", str(doc), "--cwd", str(tmp_path), env=_env(tmp_path))
    assert r.returncode == 0 and "Importing into" not in r.stderr, r.stderr
    assert "Reading" not in r.stderr and "0:00:0" not in r.stderr and "Imported mix phx.server" in r.stderr


def test_send_names_the_session_it_reads_before_the_code(tmp_path: Path) -> None:
    """``send --redact`` reads the session and masks it first (as streams, into a private work folder): that step
    is shown, then the session chosen, before any code or pairing."""
    env = {**_env(tmp_path), "P2PD_SIGNAL": "ws://127.0.0.1:9/"}
    with Terminal("send", str(SHORT), "--redact", "--timeout", "2", "--connect-timeout", "2", "--fallback-dir",
                  str(tmp_path), env=env, columns=200) as t:
        assert t.wait(60) == 7, t.text
    _steps_in_order(t.text, [f"Reading {SHORT} and masking secrets", "Redaction: ", "Sending mix phx.server",
                             "No peer connection"])
