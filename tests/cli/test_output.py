"""p2pd/cli/output.py: escaping our text and foreign text, sizes, list and record printing, the transfer UI and
the runner."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest

from p2pd.cli.output import CliUI, escape, human, out, print_rows, run, show_record, shown, shown_block, when
from p2pd.errors import ExitCode, PeerGoneError

EVIL = "a [/] b [bold]c[/bold] \u202ed\x1b[31me\u200b"
EVIL_SHOWN = "a [/] b [bold]c[/bold] \\u202ed\\x1b[31me\\u200b"


@pytest.mark.parametrize(("n", "text"), [(0, "0 B"), (999, "999 B"), (1000, "1.0 KB"), (1_536_000, "1.5 MB"),
                                         (3.2e9, "3.2 GB"), (5e12, "5000.0 GB"), (-2048, "-2.0 KB")])
def test_human(n: float, text: str) -> None:
    assert human(n) == text


def test_escape_prints_our_text_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    out.print(escape("/tmp/[x]/[/]file"))
    assert capsys.readouterr().out == "/tmp/[x]/[/]file\n"


def test_shown_makes_foreign_text_inert(capsys: pytest.CaptureFixture[str]) -> None:
    out.print(shown(EVIL))
    assert capsys.readouterr().out == EVIL_SHOWN + "\n"
    assert shown("x" * 400).endswith("…") and len(shown("x" * 400)) == 300
    assert shown("x" * 400, None) == "x" * 400


def test_shown_block_keeps_line_breaks_only(capsys: pytest.CaptureFixture[str]) -> None:
    out.print(shown_block(f"first {EVIL}\nsecond\r"))
    assert capsys.readouterr().out == f"first {EVIL_SHOWN}\nsecond\\x0d\n"


def test_when() -> None:
    assert when("2026-11-23T19:13:23.123456+00:00") == "2026-11-23 19:13:23"


def test_print_rows_json_empty_and_table(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"id": "t-1", "title": EVIL}]
    args = {"empty": "Nothing here.", "columns": ("id", "title"),
            "cells": lambda r: (shown(r["id"]), shown(r["title"]))}
    assert print_rows(rows, as_json=True, **args) == ExitCode.OK  # type: ignore[arg-type]
    assert json.loads(capsys.readouterr().out) == rows
    assert print_rows([], as_json=False, **args) == ExitCode.OK  # type: ignore[arg-type]
    assert capsys.readouterr().err == "Nothing here.\n"
    monkeypatch.setenv("COLUMNS", "200")
    assert print_rows(rows, as_json=False, **args) == ExitCode.OK  # type: ignore[arg-type]
    table = capsys.readouterr().out
    assert "t-1" in table and EVIL_SHOWN in table and "\x1b" not in table


def test_show_record_shows_every_value_safely(capsys: pytest.CaptureFixture[str]) -> None:
    show_record({"id": "h-1", "title": EVIL, "summary": "one\ntwo", "detail": {"k": [1, "\u202e"]}})
    assert capsys.readouterr().out.splitlines() == [
        "id: h-1", f"title: {EVIL_SHOWN}", "summary: one", "two", 'detail: {"k": [1, "\\u202e"]}']


def _offer(title: str) -> SimpleNamespace:
    info = SimpleNamespace(title=title, platform="claude-code", session_id="s-1", message_count=12)
    return SimpleNamespace(info=info, raw_size=2_000_000, compressed_size=500_000)


def test_the_offer_is_peer_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert asyncio.run(CliUI(yes=True, receiving=True).decide(_offer(EVIL))) is True
    err = capsys.readouterr().err
    assert err == (f"Offered: {EVIL_SHOWN}\n"
                   "  from claude-code session s-1, 12 messages, 2.0 MB (500.0 KB on the wire)\n")


def test_an_offer_without_a_terminal_is_declined(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert asyncio.run(CliUI().decide(_offer("t"))) is False
    assert "declining: no terminal to ask on" in capsys.readouterr().err


def test_code_lines_for_each_side(capsys: pytest.CaptureFixture[str]) -> None:
    CliUI(receiving=True).code_ready("12-word-word")
    CliUI().code_ready("12-word-word")
    assert capsys.readouterr().err.splitlines() == [
        "Code: 12-word-word (waiting for the sender)",
        "  on the sending machine run: p2pd send SESSION --code 12-word-word",
        "Code: 12-word-word (waiting for the receiver)",
        "  on the receiving machine run: p2pd receive 12-word-word"]


def test_no_directions_when_the_other_side_is_waiting_already(capsys: pytest.CaptureFixture[str]) -> None:
    """The other side is in the room: it has the code (a receiver given the sender's code is not told to run
    `p2pd send`; a sender given the receiver's code prints no link or QR code)."""
    CliUI(receiving=True).code_ready("12-word-word", peer_present=True)
    CliUI(signal_url="ws://127.0.0.1:1/").code_ready("12-word-word", peer_present=True)
    assert capsys.readouterr() == ("", "")


class _Recording(CliUI):
    stops = 0

    def stop(self) -> None:
        self.stops += 1
        super().stop()


def test_run_returns_the_result_and_stops_the_ui_however_it_ends() -> None:
    async def ok() -> int:
        return 7

    async def gone() -> int:
        raise PeerGoneError("the peer went away")

    ui = _Recording()
    assert run(ok(), ui) == 7 and ui.stops == 1
    with pytest.raises(PeerGoneError):
        run(gone(), ui)
    assert ui.stops == 2
    assert run(ok()) == 7
