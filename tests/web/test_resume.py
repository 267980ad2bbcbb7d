"""Cancel and resume in the page (issue 18): Cancel mid-transfer on either side sends the protocol's CANCEL frame
(the p2pd peer stops and says so), and a receive broken by a reload goes on where it stopped: the page kept what
was acknowledged in IndexedDB keyed by the payload's SHA-256 and lists it as held ranges in its ACCEPT."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from p2pd.errors import ExitCode
from tests.signal_process import SignalProcess
from tests.web.conftest import LINK, p2pd, p2pd_env, read_until, stop
from tests.web.test_browser import ENDED, big_conversation, state

PARTIALS = """() => new Promise((resolve, reject) => {
  const open = indexedDB.open('p2pd-partials', 1);
  open.onupgradeneeded = () => { open.result.createObjectStore('partials', { keyPath: 'sha' });
    open.result.createObjectStore('blocks'); };
  open.onerror = () => reject(open.error);
  open.onsuccess = () => { const db = open.result;
    const get = db.transaction('partials').objectStore('partials').getAll();
    get.onsuccess = () => { db.close(); resolve(get.result.map((r) => ({ sha: r.sha, ranges: r.ranges }))); }; };
})"""


def wait_for_progress(page: Any, at_least: float, *states: str) -> int:
    deadline = time.monotonic() + 90
    while True:
        done = int(page.get_attribute("#progress", "data-done") or 0)
        total = float(page.get_attribute("#progress", "max") or 1)
        if done >= at_least * total and done > 0:
            return done
        assert time.monotonic() < deadline, "no progress"
        assert state(page) in states, page.inner_text("#session")
        time.sleep(0.05)


def test_cancel_from_the_receiving_page_stops_p2pd_send(server: SignalProcess, page: Any, tmp_path: Path) -> None:
    big = tmp_path / "big.a2a.json"
    big_conversation(big, 24)
    sender = p2pd("send", str(big), "--timeout", "60", env=p2pd_env(server), cwd=tmp_path)
    try:
        link, _ = read_until(sender, LINK)
        page.goto(link.group(1))
        page.wait_for_selector("#accept", state="visible")
        page.click("#accept")
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
        assert sender.returncode == ExitCode.TRANSFER_FAILED, err
        assert "cancel" in err.lower(), err
        assert "by the person at the browser" in err, "the CANCEL frame's reason reached the sender"
    finally:
        stop(sender)


def test_cancel_from_the_sending_page_stops_p2pd_receive(server: SignalProcess, page: Any, tmp_path: Path) -> None:
    big = tmp_path / "big.a2a.json"
    big_conversation(big, 24)
    receiver = p2pd("receive", "-o", str(tmp_path / "inbox"), "--yes", "--timeout", "60", env=p2pd_env(server))
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
    sender = p2pd("send", str(big), "--timeout", "60", env=p2pd_env(server), cwd=tmp_path)
    try:
        link, _ = read_until(sender, LINK)
        page.goto(link.group(1))
        page.wait_for_selector("#accept", state="visible")
        page.click("#accept")
        wait_for_progress(page, 0.3, "receiving")
        page.reload()
        page.wait_for_selector("body[data-ready=true]")
        assert state(page) == "idle"
        _, err = sender.communicate(timeout=60)
        assert sender.returncode == ExitCode.TRANSFER_FAILED, err
        kept = page.evaluate(PARTIALS)
        assert len(kept) == 1 and kept[0]["ranges"] and kept[0]["ranges"][0][0] == 0, kept
        held = sum(end - start for start, end in kept[0]["ranges"])
    finally:
        stop(sender)
    # the same conversation again (a new code): the page asks only for what it lacks
    sender = p2pd("send", str(big), "--timeout", "60", env=p2pd_env(server), cwd=tmp_path)
    try:
        link, _ = read_until(sender, LINK)
        page.goto(link.group(1))
        page.wait_for_selector("#accept", state="visible")
        page.click("#accept")
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
        print(f"\nresume after reload: {resumed / 1e6:.1f} MB of {total / 1e6:.1f} MB were kept and not sent again")
    finally:
        stop(sender)
