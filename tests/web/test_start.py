"""The page starts either side (issue 18): it makes a code (shown with its QR code) to receive or to send, so
page → page, page → ``p2pd receive CODE`` and ``p2pd send --code CODE`` → page work without the CLI making the
code. Two Chromium contexts (two browsers' worth of storage) through a real p2pd-signal process."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.signal_process import SignalProcess, p2pd, p2pd_env
from tests.web.conftest import read_until, stop
from tests.web.flows import ENDED, SMALL, accepted, exported_small, opened, state

CODE = re.compile(r"^\d+-[a-z]+-[a-z]+$")


def made_code(page: Any) -> str:
    page.wait_for_selector("#made-code:not([hidden])")
    code = page.inner_text("#made-code-value")
    assert CODE.match(code), code
    assert page.locator("#qr svg[role=img] path.qr-dark").count() == 1, "a QR code is drawn"
    assert page.evaluate("() => document.activeElement.id") == "made-code-heading"
    return str(code)


def second_page(browser: Any) -> Any:
    context = browser.new_context(accept_downloads=True)
    other = context.new_page()
    other.set_default_timeout(60_000)
    return other


def downloaded(page: Any) -> Any:
    with page.expect_download() as info:
        page.click("#download")
    return json.loads(Path(info.value.path()).read_bytes())


def test_page_makes_a_code_to_send_and_another_page_receives(server: SignalProcess, page: Any, browser: Any,
                                                               tmp_path: Path) -> None:
    source = exported_small(server, tmp_path)
    opened(page, server)
    page.set_input_files("#file", str(source))
    page.click("#make-send-code")
    code = made_code(page)
    link = page.get_attribute("#made-code-link", "href")
    assert link == f"{server.http}/#{code}", link
    assert page.inner_text("#made-code-command") == f"p2pd receive {code}"
    other = second_page(browser)
    try:
        other.goto(str(link))  # what scanning the QR code opens
        other.wait_for_selector("#accept", state="visible")
        other.click("#accept")
        other.wait_for_selector(ENDED)
        page.wait_for_selector(ENDED)
        assert state(other) == "done", other.inner_text("#session")
        assert state(page) == "sent", page.inner_text("#session")
        assert other.inner_text("#sas-value") == page.inner_text("#sas-value")
        assert page.locator("#made-code").is_hidden(), "the code goes away once paired"
        assert downloaded(other) == json.loads(source.read_text())
    finally:
        other.context.close()


def test_page_makes_a_code_to_receive_and_another_page_sends(server: SignalProcess, page: Any, browser: Any,
                                                               tmp_path: Path) -> None:
    source = exported_small(server, tmp_path)
    opened(page, server)
    page.click("#make-receive-code")
    code = made_code(page)
    link = page.get_attribute("#made-code-link", "href")
    assert link == f"{server.http}/#send/{code}", link
    other = second_page(browser)
    try:
        other.goto(str(link))  # opens the send form with the code filled in, waiting for a file
        other.wait_for_selector("body[data-ready=true]")
        assert other.input_value("#send-code") == code and state(other) == "idle"
        assert other.evaluate("() => document.activeElement.id") == "drop"
        other.set_input_files("#file", str(source))
        other.click("#send-button")
        page.wait_for_selector("#accept", state="visible")
        page.click("#accept")
        page.wait_for_selector(ENDED)
        other.wait_for_selector(ENDED)
        assert state(page) == "done", page.inner_text("#session")
        assert state(other) == "sent", other.inner_text("#session")
        assert downloaded(page) == json.loads(source.read_text())
    finally:
        other.context.close()


def test_page_makes_a_code_and_p2pd_receive_uses_it(server: SignalProcess, page: Any, tmp_path: Path) -> None:
    source = exported_small(server, tmp_path)
    opened(page, server)
    page.set_input_files("#file", str(source))
    page.click("#make-send-code")
    code = made_code(page)
    receiver = p2pd("receive", code, "-o", str(tmp_path / "inbox"), "--yes", "--timeout", "60",
                    env=p2pd_env(server))
    try:
        out, err = receiver.communicate(timeout=90)
        assert receiver.returncode == 0, err
        page.wait_for_selector(ENDED)
        assert state(page) == "sent", page.inner_text("#session")
        assert page.inner_text("#sas-value") in err
        assert json.loads(Path(out.strip()).read_text()) == json.loads(source.read_text())
    finally:
        stop(receiver)


def test_page_makes_a_code_and_p2pd_send_uses_it(server: SignalProcess, page: Any, tmp_path: Path) -> None:
    opened(page, server)
    page.click("#make-receive-code")
    code = made_code(page)
    assert page.inner_text("#made-code-command") == f"p2pd send SESSION --code {code}"
    sender = p2pd("send", str(SMALL), "--code", code, "--timeout", "60", env=p2pd_env(server), cwd=tmp_path)
    try:
        # the receiving page waits already, so the sender prints no code, link or QR: nothing to read first
        accepted(page)
        _, err = sender.communicate(timeout=60)
        assert sender.returncode == 0, err
        assert page.inner_text("#sas-value") in err
    finally:
        stop(sender)


def test_peer_title_is_shown_with_bidi_overrides_made_visible(server: SignalProcess, page: Any, tmp_path: Path) -> None:
    source = exported_small(server, tmp_path)
    doc = json.loads(source.read_text())
    doc["title"] = "invoice\u202etxt.exe\u2066 done"
    source.write_text(json.dumps(doc))
    sender = p2pd("send", str(source), "--timeout", "60", env=p2pd_env(server), cwd=tmp_path)
    try:
        link, _ = read_until(sender, re.compile(r"open in a browser: (\S+)"))
        page.goto(link.group(1))
        page.wait_for_selector("#accept", state="visible")
        title = page.inner_text("#offer-title")
        assert "\u202e" not in title and "\u2066" not in title, repr(title)
        assert "\\u202e" in title and "\\u2066" in title, repr(title)
        page.click("#decline")
        page.wait_for_selector(ENDED)
    finally:
        stop(sender)
