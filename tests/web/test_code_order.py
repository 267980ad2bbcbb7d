"""A code both sides know works with the page too, whichever side starts first, and the page and p2pd read a typed
code alike: the page waits first with ``321-Straße-Maß`` and ``p2pd send --code 321-STRASSE-MASS`` finds it (p2pd
then prints no link: the page is there already); the page sends first and ``p2pd receive`` comes later."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.signal_process import SignalProcess, p2pd, p2pd_env
from tests.web.conftest import stop
from tests.web.flows import ENDED, SMALL, accepted, opened, state


def test_the_page_receives_first_with_a_typed_code(server: SignalProcess, page: Any, tmp_path: Path) -> None:
    opened(page, server)
    page.fill("#code", "321-Straße-Maß")
    page.click("#receive-button")
    page.wait_for_selector("#status:has-text('Waiting for the sender')")  # in the room, alone
    sender = p2pd("send", str(SMALL), "--code", "321-STRASSE-MASS", "--timeout", "60", env=p2pd_env(server),
                  cwd=tmp_path)
    try:
        accepted(page)
        _, err = sender.communicate(timeout=60)
        assert sender.returncode == 0, err
        assert "open in a browser" not in err and "Code:" not in err, err
    finally:
        stop(sender)


def test_the_page_sends_first_with_a_typed_code(server: SignalProcess, page: Any, tmp_path: Path) -> None:
    exported = tmp_path / "small.a2a.json"
    assert p2pd("export", str(SMALL), "-o", str(exported), env=p2pd_env(server)).wait(60) == 0
    opened(page, server)
    page.set_input_files("#file", str(exported))
    page.fill("#send-code", "322 quiet harbour")
    page.click("#send-button")
    page.wait_for_selector("#status:has-text('Waiting for the receiver')")
    receiver = p2pd("receive", "322-quiet-harbour", "--yes", "-o", str(tmp_path / "in"), "--timeout", "60",
                    env=p2pd_env(server), cwd=tmp_path)
    try:
        _, err = receiver.communicate(timeout=60)
        assert receiver.returncode == 0, err
        assert "Code:" not in err and "p2pd send" not in err, err  # the page was waiting: no directions
        page.wait_for_selector(ENDED)
        assert state(page) == "sent", page.inner_text("body")
        assert len(list((tmp_path / "in").glob("*.a2a.json"))) == 1
    finally:
        stop(receiver)
