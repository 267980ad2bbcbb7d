"""Drive the browser client from inside a namespace: ``ip netns exec <ns> python -m tests.net.page URL OUT_DIR
SPKI`` (or ``… URL FILE SPKI CODE``: send ``FILE`` to the ``p2pd receive`` waiting on ``CODE``) launches Debian's
headless Chromium with Playwright there (so its WebRTC traffic goes through that home's router), opens ``URL``
(https, the code in its fragment), accepts the offer, waits for the end and prints one JSON line with what the
page showed; the downloaded conversation is saved in ``OUT_DIR``.

Chromium trusts the server's self-signed certificate by its public key only (``SPKI``, base64 SHA-256 of the
SubjectPublicKeyInfo: ``--ignore-certificate-errors-spki-list``), not by ignoring certificate errors wholesale.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from tests.web.conftest import CHROMIUM, CHROMIUM_FLAGS

ENDED = "body[data-state=done], body[data-state=sent], body[data-state=failed]"


def receive(url: str, out_dir: Path, spki: str) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    result: dict[str, Any] = {"console": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=[*CHROMIUM_FLAGS, f"--ignore-certificate-errors-spki-list={spki}"])
        try:
            page = browser.new_context(accept_downloads=True).new_page()
            page.set_default_timeout(45_000)
            page.on("console", lambda m: result["console"].append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: result["console"].append(f"pageerror: {e}"))
            started = time.monotonic()
            page.goto(url)
            page.wait_for_selector(f"#accept:visible, {ENDED}")
            result["offer_messages"] = page.inner_text("#offer-messages")
            result["offer_seconds"] = time.monotonic() - started
            if page.locator("#accept").is_visible():
                page.click("#accept")
                page.wait_for_selector(ENDED)
            result["seconds_total"] = time.monotonic() - started
            result["state"] = page.get_attribute("body", "data-state")
            result["error_kind"] = page.get_attribute("#error", "data-kind")
            result["text"] = page.inner_text("#session")
            result["sha256"] = page.get_attribute("#result", "data-sha256")
            result["seconds"] = float(page.get_attribute("#result", "data-seconds") or 0)
            result["sas"] = page.inner_text("#sas-value")
            result["messages"] = page.locator("[data-message]").count()
            result["tool_calls"] = page.locator("[data-message] details.tool-call").count()
            if result["state"] == "done":
                with page.expect_download() as info:
                    page.click("#download")
                target = out_dir / info.value.suggested_filename
                info.value.save_as(target)
                result["download"] = str(target)
        finally:
            browser.close()
    return result


def send(url: str, file: Path, spki: str, code: str) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    result: dict[str, Any] = {"console": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=[*CHROMIUM_FLAGS, f"--ignore-certificate-errors-spki-list={spki}"])
        try:
            page = browser.new_context().new_page()
            page.set_default_timeout(45_000)
            page.on("console", lambda m: result["console"].append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: result["console"].append(f"pageerror: {e}"))
            started = time.monotonic()
            page.goto(url)
            page.wait_for_selector("body[data-ready=true]")
            page.set_input_files("#file", str(file))
            page.fill("#send-code", code)
            page.click("#send-button")
            page.wait_for_selector(ENDED)
            result["seconds_total"] = time.monotonic() - started
            result["state"] = page.get_attribute("body", "data-state")
            result["error_kind"] = page.get_attribute("#error", "data-kind")
            result["text"] = page.inner_text("#session")
            result["sas"] = page.inner_text("#sas-value")
        finally:
            browser.close()
    return result


def main() -> int:
    if len(sys.argv) == 5:
        url, file, spki, code = sys.argv[1:5]
        print(json.dumps(send(url, Path(file), spki, code)), flush=True)
        return 0
    url, out_dir, spki = sys.argv[1:4]
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    print(json.dumps(receive(url, Path(out_dir), spki)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
