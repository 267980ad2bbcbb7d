"""The browser client end to end: a signaling server process serving web/, real ``p2pd`` processes (aiortc) and
headless Chromium (Playwright) on loopback. Waits use selectors only: the page's CSP forbids evaluating strings.

Figures: the daemon → browser test prints the receive rate of the corpus session (run with ``-s`` to see it).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from p2pd.errors import ExitCode
from tests.corpus import claude_code_files
from tests.signal_process import SignalProcess, p2pd, p2pd_env
from tests.transfer.lossy import deaf_at, loss_simulated
from tests.web.conftest import LINK, read_until, stop
from tests.web.flows import ENDED, SESSION, SMALL, export, receiving, state


def test_daemon_to_browser_corpus_session(server: SignalProcess, page: Any, tmp_path: Path) -> None:
    sender = p2pd("send", str(SESSION), "--timeout", "60", env=p2pd_env(server), cwd=tmp_path)
    try:
        link, _ = read_until(sender, LINK)
        assert link.group(1).startswith(server.http + "/#"), link.group(1)
        page.goto(link.group(1))
        page.wait_for_selector("#accept", state="visible")
        expected = export(SESSION)
        assert page.inner_text("#offer-messages") == str(expected["counts"]["messages"])
        assert page.inner_text("#offer-agent").startswith("claude-code")
        assert page.url == server.http + "/", "the code is taken out of the address bar"
        page.click("#accept")
        page.wait_for_selector(ENDED)
        assert state(page) == "done", page.inner_text("#session")
        _, err = sender.communicate(timeout=60)
        assert sender.returncode == 0, err
        # the same SHA-256 on both sides, and the same verification string
        sha = page.get_attribute("#result", "data-sha256")
        assert sha and f"the receiver checked SHA-256 {sha[:16]}" in err
        assert page.inner_text("#sas-value") in err
        # rendered a page at a time: every message but those holding only results (shown inside their calls),
        # numbered as in the document; every tool call folded with its result
        page.wait_for_selector("[data-reader][data-ready=true]")
        numbers: list[int] = []
        calls = answered = 0
        while True:
            numbers += [int(t.split()[0].lstrip("#")) for t in page.locator("[data-message] h3").all_inner_texts()]
            calls += page.locator("[data-message] details.tool-call").count()
            answered += page.locator("[data-message] details.tool-call:is(.ok, .error)").count()
            following = page.locator(".pager-view nav.pager >> nth=0 >> text=Next page")
            if following.is_hidden() or following.is_disabled():
                break
            shown = page.get_attribute(".messages", "data-page")
            following.click()
            page.wait_for_selector(f".messages[data-page='{int(shown or 0) + 1}'][aria-busy=false]")
        results_only = {i + 1 for i, m in enumerate(expected["messages"])
                        if m["parts"] and all(p.get("mediaType", "").endswith("tool-result+json") for p in m["parts"])}
        assert numbers == [n for n in range(1, len(expected["messages"]) + 1) if n not in results_only]
        assert calls == expected["counts"]["toolCalls"] and answered == expected["counts"]["toolResults"]
        assert page.locator("details.tool-result").count() == 0
        with page.expect_download() as info:
            page.click("#download")
        downloaded = Path(info.value.path()).read_bytes()
        assert info.value.suggested_filename.endswith(".a2a.json")
        got = json.loads(downloaded)
        assert got["messages"] == expected["messages"] and got["subagents"] == expected["subagents"]
        seconds = float(page.get_attribute("#result", "data-seconds") or 0)
        print(f"\nbrowser receive: {SESSION.name} {len(downloaded) / 1e6:.2f} MB JSON in {seconds:.2f} s "
              f"(accept → verified) = {len(downloaded) / 1e6 / max(seconds, 1e-6):.1f} MB/s of conversation")
    finally:
        stop(sender)


def test_browser_to_daemon(server: SignalProcess, page: Any, tmp_path: Path) -> None:
    exported = tmp_path / "tool_heavy.a2a.json"
    source = next(f for f in claude_code_files(include_subagents=False) if f.name == "tool_heavy.jsonl")
    made = p2pd("export", str(source), "-o", str(exported), env=p2pd_env(server))
    assert made.wait(60) == 0
    inbox = tmp_path / "inbox"
    receiver = p2pd("receive", "--make-code", "-o", str(inbox), "--yes", "--timeout", "60", env=p2pd_env(server))
    try:
        code, _ = read_until(receiver, re.compile(r"Code: (\S+)"))
        page.goto(server.http + "/")
        page.set_input_files("#file", str(exported))
        page.fill("#send-code", code.group(1))
        page.click("#send-button")
        page.wait_for_selector(ENDED)
        assert state(page) == "sent", page.inner_text("#session")
        out, err = receiver.communicate(timeout=60)
        assert receiver.returncode == 0, err
        assert "SHA-256 verified" in err
        assert page.inner_text("#sas-value") in err
        received = json.loads(Path(out.strip()).read_text())
        assert received == json.loads(exported.read_text())
    finally:
        stop(receiver)


def test_wrong_code(server: SignalProcess, page: Any, tmp_path: Path) -> None:
    sender = p2pd("send", str(SMALL), "--code", "4343-amber-river", "--timeout", "30", env=p2pd_env(server),
                  cwd=tmp_path)
    try:
        read_until(sender, LINK)
        page.goto(server.http + "/#4343-apple-pear")
        page.wait_for_selector(ENDED)
        assert state(page) == "failed"
        assert page.get_attribute("#error", "data-kind") == "wrong-code"
        assert "Wrong code" in page.inner_text("#error")
        assert page.inner_text("#status") == "Receiving stopped.", "no stale step (\"Waiting for the sender…\")"
        assert page.locator("#result").is_hidden() and page.locator("#offer").is_hidden()
        _, err = sender.communicate(timeout=30)
        assert sender.returncode == ExitCode.WRONG_CODE and "wrong code" in err.lower()
        assert not list(tmp_path.glob("*.a2a.json")), "a wrong code is an answer, not a reason to fall back"
    finally:
        stop(sender)


def test_declined_offer(server: SignalProcess, page: Any, tmp_path: Path) -> None:
    sender = p2pd("send", str(SMALL), "--timeout", "30", env=p2pd_env(server), cwd=tmp_path)
    try:
        link, _ = read_until(sender, LINK)
        page.goto(link.group(1))
        page.wait_for_selector("#decline", state="visible")
        page.click("#decline")
        page.wait_for_selector(ENDED)
        assert state(page) == "failed" and page.get_attribute("#error", "data-kind") == "declined"
        assert "You declined the offer" in page.inner_text("#error")
        assert page.locator("[data-message]").count() == 0 and page.locator("#result").is_hidden()
        _, err = sender.communicate(timeout=30)
        assert sender.returncode == ExitCode.DECLINED and "declin" in err.lower()
    finally:
        stop(sender)


def test_a_done_lost_past_the_linger_still_completes_the_sender(server: SignalProcess, page: Any,
                                                                 tmp_path: Path) -> None:
    """The page's DONE lost, with every packet for 3 s after it (the ``p2pd send`` process drops them:
    tests/transfer/lossy.py): the page shows the conversation at once, and keeps the connection until DONE
    got through, so the sender ends with success too — not "the peer went away; run the command again"."""
    sender = receiving(server, page, SMALL, tmp_path, **deaf_at("DONE"))
    try:
        page.wait_for_selector(ENDED)
        assert state(page) == "done", page.inner_text("#session")
        assert page.locator("[data-message]").count() > 0
        _, err = sender.communicate(timeout=60)
        assert loss_simulated("DONE") in err, "the loss was simulated: " + err
        assert sender.returncode == ExitCode.OK, err
    finally:
        stop(sender)


def test_page_is_served_with_a_strict_content_security_policy(server: SignalProcess, page: Any) -> None:
    response = page.goto(server.http + "/")
    csp = response.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "object-src 'none'" in csp and "'unsafe-inline'" not in csp
    assert f"connect-src 'self' ws://127.0.0.1:{server.port}" in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    page.wait_for_selector("body[data-ready=true]")  # the modules (and the import map, by hash) loaded under it
