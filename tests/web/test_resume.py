"""Cancel and resume in the page (issue 18): Cancel mid-transfer on either side sends the protocol's CANCEL frame
(the p2pd peer stops and says so), and a receive broken by a reload or a dropped connection (the sender's process
killed) goes on where it stopped: the page kept what was acknowledged in IndexedDB keyed by the payload's SHA-256
and lists it as held ranges in its ACCEPT when the same conversation is sent again."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from p2pd.errors import ExitCode
from tests.signal_process import SignalProcess, p2pd, p2pd_env
from tests.transfer.lossy import deaf_at, loss_simulated
from tests.web.conftest import read_until, stop
from tests.web.flows import ENDED, PARTIALS, big_conversation, held_ranges, receiving, state, wait_for_progress


def resumes(server: SignalProcess, page: Any, big: Path, cwd: Path, held: int, after: str) -> None:
    """The same conversation sent again (a new code): the page asks only for what it lacks, and gets it whole."""
    sender = receiving(server, page, big, cwd)
    try:
        page.wait_for_selector(ENDED, timeout=90_000)
        assert state(page) == "done", page.inner_text("#session")
        resumed = int(page.get_attribute("#progress-box", "data-resumed") or 0)
        assert 0 < resumed <= held, (resumed, held)
        assert "kept from an earlier try" in page.inner_text("#result-text")
        with page.expect_download() as info:
            page.click("#download")
        assert json.loads(Path(info.value.path()).read_bytes())["messages"] == json.loads(big.read_text())["messages"]
        _, err = sender.communicate(timeout=60)
        assert sender.returncode == 0, err
        assert page.evaluate(PARTIALS) == [], "a finished receive leaves no partial behind"
        total = float(page.get_attribute("#progress", "max") or 0)
        print(f"\nresume after {after}: {resumed / 1e6:.1f} MB of {total / 1e6:.1f} MB were kept and not sent again")
    finally:
        stop(sender)


@pytest.mark.parametrize("lost", [False, True], ids=["", "the CANCEL lost for 3 s"])
def test_cancel_from_the_receiving_page_stops_p2pd_send(server: SignalProcess, page: Any, tmp_path: Path,
                                                         lost: bool) -> None:
    """The CANCEL frame reaches the sender, and it says why it stopped — even when the packet bringing it, and
    every packet for 3 s after it, is lost (tests/transfer/lossy.py): the page keeps the connection until its
    channel's close, sent after the CANCEL, went through (it used to close it 0.3 s later, and the sender then said
    "the peer went away")."""
    big = tmp_path / "big.a2a.json"
    big_conversation(big, 24)
    sender = receiving(server, page, big, tmp_path, **(deaf_at("CANCEL") if lost else {}))
    try:
        wait_for_progress(page, 0, "receiving")
        assert page.locator("#cancel").is_visible()
        page.click("#cancel")
        page.wait_for_selector(ENDED)
        assert state(page) == "failed" and page.get_attribute("#error", "data-kind") == "cancelled"
        error = page.inner_text("#error")
        assert "You cancelled; the other side was told" in error and "receive the same conversation again" in error
        assert page.inner_text("#status") == "Receiving stopped."
        assert page.locator("#cancel").is_hidden() and page.locator("#result").is_hidden()
        _, err = sender.communicate(timeout=30)
        assert (loss_simulated("CANCEL") in err) is lost, err
        assert sender.returncode == ExitCode.TRANSFER_FAILED, err
        assert "cancel" in err.lower(), err
        assert "by the person at the browser" in err, "the CANCEL frame's reason reached the sender"
    finally:
        stop(sender)


def test_cancel_from_the_sending_page_stops_p2pd_receive(server: SignalProcess, page: Any, tmp_path: Path) -> None:
    big = tmp_path / "big.a2a.json"
    big_conversation(big, 24)
    receiver = p2pd("receive", "--make-code", "-o", str(tmp_path / "inbox"), "--yes", "--timeout", "60",
                    env=p2pd_env(server))
    try:
        code, _ = read_until(receiver, re.compile(r"Code: (\S+)"))
        page.goto(server.http + "/")
        page.wait_for_selector("body[data-ready=true]")
        page.set_input_files("#file", str(big))
        page.fill("#send-code", code.group(1))
        page.click("#send-button")
        wait_for_progress(page, 0, "pairing", "sending")
        page.click("#cancel")
        page.wait_for_selector(ENDED)
        assert state(page) == "failed" and page.get_attribute("#error", "data-kind") == "cancelled"
        assert page.inner_text("#error") == "You cancelled; the other side was told."
        _, err = receiver.communicate(timeout=30)
        assert receiver.returncode == ExitCode.TRANSFER_FAILED, err
        assert "cancel" in err.lower() and "by the person at the browser" in err, err
        assert not list((tmp_path / "inbox").glob("*.a2a.json"))
    finally:
        stop(receiver)


def test_cancel_while_a_made_code_waits(server: SignalProcess, page: Any) -> None:
    page.goto(server.http + "/")
    page.wait_for_selector("body[data-ready=true]")
    page.click("#make-receive-code")
    page.wait_for_selector("#made-code:not([hidden])")
    page.click("#cancel")
    page.wait_for_selector(ENDED)
    assert state(page) == "failed" and page.get_attribute("#error", "data-kind") == "cancelled"
    assert page.locator("#made-code").is_hidden()
    page.click("#again")
    assert state(page) == "idle"


def test_reload_mid_transfer_resumes_from_the_held_ranges(server: SignalProcess, page: Any, tmp_path: Path) -> None:
    big = tmp_path / "big.a2a.json"
    big_conversation(big, 24)
    page.on("dialog", lambda dialog: dialog.accept())  # "leave the page?" while receiving: yes
    sender = receiving(server, page, big, tmp_path)
    try:
        wait_for_progress(page, 0.3, "receiving")
        page.reload()
        page.wait_for_selector("body[data-ready=true]")
        assert state(page) == "idle"
        _, err = sender.communicate(timeout=60)
        assert sender.returncode == ExitCode.TRANSFER_FAILED, err
        held = held_ranges(page)
    finally:
        stop(sender)
    resumes(server, page, big, tmp_path, held, "a reload")


def test_dropped_connection_resumes_from_the_held_ranges(server: SignalProcess, page: Any, tmp_path: Path) -> None:
    """The sender's process dies mid-transfer (its data channel and signaling with it); the page says what it
    kept and, without a reload, a new ``p2pd send`` of the same conversation goes on from the held ranges."""
    big = tmp_path / "big.a2a.json"
    big_conversation(big, 24)
    sender = receiving(server, page, big, tmp_path)
    try:
        wait_for_progress(page, 0.3, "receiving")
        sender.kill()
        page.wait_for_selector(ENDED, timeout=45_000)
        assert state(page) == "failed" and page.get_attribute("#error", "data-kind") == "peer-gone"
        error = page.inner_text("#error")
        assert "went away" in error and "kept in this browser" in error and "receive the same conversation" in error
        held = held_ranges(page)
        assert f"{held / 1e6:.1f} MB of it are kept" in error, (error, held)
        assert page.locator("#result").is_hidden(), "no download is offered"
        assert page.locator("[data-message]").count() == 0, "no half conversation is shown"
    finally:
        stop(sender)
    page.evaluate("() => { window.__sameDocument = true; }")
    resumes(server, page, big, tmp_path, held, "a dropped connection")
    assert page.evaluate("() => window.__sameDocument === true"), "resumed in the same page, not after a reload"
