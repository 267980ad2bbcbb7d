"""The page installs and loads offline (issue 18): a web app manifest, a service worker that keeps what the page
loaded, Chromium's own installability check (DevTools' Page.getInstallabilityErrors) finding nothing to object
to, and a reload with the network off that still shows a working page (reading a file needs no network)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.signal_process import SignalProcess
from tests.web.generated import conversation


def test_installable_and_loads_offline(server: SignalProcess, browser: Any, tmp_path: Path) -> None:
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(server.http + "/")
        page.wait_for_selector("body[data-offline-ready=true]", timeout=30_000)
        manifest = page.evaluate("() => fetch('manifest.json').then((r) => r.json())")
        assert manifest["display"] == "standalone" and manifest["icons"], manifest
        cdp = context.new_cdp_session(page)
        errors = cdp.send("Page.getInstallabilityErrors")["installabilityErrors"]
        # Playwright's contexts are incognito ones, where nothing installs; everything else must pass
        assert [e for e in errors if e["errorId"] != "in-incognito"] == [], errors
        context.set_offline(True)
        page.reload()
        page.wait_for_selector("body[data-ready=true]")
        assert page.get_attribute("body", "data-state") == "idle"
        # offline, a file can still be read with the whole reader
        path = tmp_path / "offline.a2a.json"
        path.write_text(json.dumps(conversation(120)))
        page.set_input_files("#file", str(path))
        page.click("#read-button")
        page.wait_for_selector("[data-reader][data-ready=true]")
        assert page.locator("[data-message]").count() == 50
    finally:
        context.close()
