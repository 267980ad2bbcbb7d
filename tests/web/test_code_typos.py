"""A likely typo in a typed code is refused by the page before anything is sent, as by the CLI (issue 18: "validate
a typed or linked code (same rules and vectors as the CLI)"): the rule is web/src/typos.js, held with
p2pd/pairing/typos.py to tests/vectors/codes.json's typo cases (web/tests/codes.test.mjs and
tests/pairing/test_code_vectors.py). Here, in real Chromium with real ``p2pd send`` processes: "did you mean"
under the field, nothing sent; a suggestion's button pairs with the sender's real code; the same code submitted
again is used as typed (a sender's hand-chosen code, ``--exact-code`` on the CLI's side)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.signal_process import SignalProcess, p2pd, p2pd_env
from tests.web.conftest import LINK, read_until, stop
from tests.web.flows import SMALL, accepted, opened, state


def refused_once(page: Any, field: str, text: str) -> str:
    page.fill(f"#{field}", text)
    page.press(f"#{field}", "Enter")
    page.wait_for_selector(f"#{field}-typo:not([hidden])")
    assert state(page) == "idle", "a likely typo starts nothing"
    assert page.get_attribute(f"#{field}", "aria-invalid") == "true"
    assert page.evaluate("() => document.activeElement.id") == field
    return str(page.inner_text(f"#{field}-typo"))


@pytest.mark.parametrize("field", ["code", "send-code"])
def test_a_likely_typo_is_refused_with_suggestions(server: SignalProcess, page: Any, field: str) -> None:
    opened(page, server)
    said = refused_once(page, field, "3-Lone-CORN")
    assert "“lone”, “corn” are each one letter from a word of p2pd's list" in said, said
    assert "did you mean 3-alone-acorn or 3-alone-coin or 3-alone-horn?" in said, said
    buttons = page.locator(f"#{field}-typo button")
    assert buttons.all_inner_texts() == ["Use 3-alone-acorn", "Use 3-alone-coin", "Use 3-alone-horn"]
    # a hand-chosen code, far from every list word, goes through as typed: the hint goes away
    page.fill(f"#{field}", "7-quiet-harbour")
    page.press(f"#{field}", "Enter")
    page.wait_for_selector("body:not([data-state=idle])")
    assert page.locator(f"#{field}-typo").is_hidden()
    if field == "code":
        assert state(page) == "pairing"
        page.click("#cancel")
    else:  # no file was picked: the send itself says so
        assert "Pick a .a2a.json" in page.inner_text("#error")


def test_the_suggestion_pairs_with_the_sender(server: SignalProcess, page: Any, tmp_path: Path) -> None:
    sender = p2pd("send", str(SMALL), "--code", "5-amber-lotus", "--timeout", "60", env=p2pd_env(server),
                  cwd=tmp_path)
    try:
        read_until(sender, LINK)
        opened(page, server)
        assert "did you mean 5-amber-lotus?" in refused_once(page, "code", "5-amber-lotos")
        page.click("#code-typo button")
        accepted(page)
        assert page.input_value("#code") == "5-amber-lotus"
        assert sender.wait(30) == 0
    finally:
        stop(sender)


def test_the_same_code_again_is_used_as_typed(server: SignalProcess, page: Any, tmp_path: Path) -> None:
    sender = p2pd("send", str(SMALL), "--code", "4242-apple-river", "--exact-code", "--timeout", "60",
                  env=p2pd_env(server), cwd=tmp_path)
    try:
        read_until(sender, LINK)
        opened(page, server)
        said = refused_once(page, "code", "4242-apple-river")
        assert "did you mean 4242-ample-river?" in said and "press the button again" in said, said
        page.press("#code", "Enter")  # the person means it
        accepted(page)
        assert sender.wait(30) == 0
    finally:
        stop(sender)
