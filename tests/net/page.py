"""Drive the browser client from inside a namespace: ``ip netns exec <ns> python -m tests.net.page MODE URL PATH
SPKI [CODE]`` launches Debian's headless Chromium with Playwright there (so its WebRTC traffic goes through that
home's router), opens ``URL`` (https), waits for the end and prints one JSON line with what the page showed.

* ``receive URL OUT_DIR SPKI``: the code is in ``URL``'s fragment (a link ``p2pd send`` printed); the page accepts
  the offer and the downloaded conversation is saved in ``OUT_DIR``.
* ``receive URL OUT_DIR SPKI CODE``: the code is typed into the page's Receive form.
* ``receive URL OUT_DIR SPKI make``: the page makes a code to receive ("Make a code to receive").
* ``send URL FILE SPKI CODE``: ``FILE`` is picked and ``CODE`` (made by a receiver) typed into the Send form.
* ``send URL FILE SPKI make``: ``FILE`` is picked and the page makes a code to send ("Make a code to send").

A page that makes a code prints a first JSON line ``{"code": …, "link": …}`` as soon as the code is shown, for the
other side to use; the result is always the last line.

Chromium trusts the server's self-signed certificate by its public key only (``SPKI``, base64 SHA-256 of the
SubjectPublicKeyInfo: ``--ignore-certificate-errors-spki-list``), not by ignoring certificate errors wholesale.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.web.conftest import CHROMIUM, CHROMIUM_FLAGS

ENDED = "body[data-state=done], body[data-state=sent], body[data-state=failed]"
MAKE = "make"
WAIT_MS = 90_000  # a page that made a code waits for the other page's Chromium to start as well


@contextmanager
def chromium(spki: str, result: dict[str, Any]) -> Iterator[Any]:
    """A page of a fresh headless Chromium trusting the certificate with public key ``spki``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=[*CHROMIUM_FLAGS, f"--ignore-certificate-errors-spki-list={spki}"])
        try:
            page = browser.new_context(accept_downloads=True).new_page()
            page.set_default_timeout(WAIT_MS)
            page.on("console", lambda m: result["console"].append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: result["console"].append(f"pageerror: {e}"))
            yield page
        finally:
            browser.close()


def made_code(page: Any) -> None:
    """Wait for the code this page made and print it (the first line), for the other side."""
    page.wait_for_selector("#made-code:not([hidden])")
    print(json.dumps({"code": page.inner_text("#made-code-value"),
                      "link": page.get_attribute("#made-code-link", "href")}), flush=True)


def ended(page: Any, result: dict[str, Any], started: float) -> None:
    page.wait_for_selector(ENDED)
    result["seconds_total"] = time.monotonic() - started
    result["state"] = page.get_attribute("body", "data-state")
    result["error_kind"] = page.get_attribute("#error", "data-kind")
    result["text"] = page.inner_text("#session")
    result["sas"] = page.inner_text("#sas-value")


def receive(url: str, out_dir: Path, spki: str, code: str | None) -> dict[str, Any]:
    result: dict[str, Any] = {"console": []}
    with chromium(spki, result) as page:
        started = time.monotonic()
        page.goto(url)
        if code is not None:
            page.wait_for_selector("body[data-ready=true]")
            if code == MAKE:
                page.click("#make-receive-code")
                made_code(page)
            else:
                page.fill("#code", code)
                page.click("#receive-button")
        page.wait_for_selector(f"#accept:visible, {ENDED}")
        result["offer_messages"] = page.inner_text("#offer-messages")
        result["offer_seconds"] = time.monotonic() - started
        if page.locator("#accept").is_visible():
            page.click("#accept")
        ended(page, result, started)
        result["sha256"] = page.get_attribute("#result", "data-sha256")
        result["seconds"] = float(page.get_attribute("#result", "data-seconds") or 0)
        result["messages"] = page.locator("[data-message]").count()
        result["tool_calls"] = page.locator("[data-message] details.tool-call").count()
        if result["state"] == "done":
            with page.expect_download() as info:
                page.click("#download")
            target = out_dir / info.value.suggested_filename
            info.value.save_as(target)
            result["download"] = str(target)
    return result


def send(url: str, file: Path, spki: str, code: str) -> dict[str, Any]:
    result: dict[str, Any] = {"console": []}
    with chromium(spki, result) as page:
        started = time.monotonic()
        page.goto(url)
        page.wait_for_selector("body[data-ready=true]")
        page.set_input_files("#file", str(file))
        if code == MAKE:
            page.click("#make-send-code")
            made_code(page)
        else:
            page.fill("#send-code", code)
            page.click("#send-button")
        ended(page, result, started)
        result["result_text"] = page.inner_text("#result-text")
    return result


def main() -> int:
    mode, url, path, spki, *code = sys.argv[1:]
    if mode == "send":
        print(json.dumps(send(url, Path(path), spki, code[0])), flush=True)
        return 0
    Path(path).mkdir(parents=True, exist_ok=True)
    print(json.dumps(receive(url, Path(path), spki, code[0] if code else None)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
