"""Browser tests: a real signaling server process serving web/, real p2pd processes, Debian's Chromium driven by
Playwright. A failing browser test saves a screenshot under tests/artifacts/ (the path is in the report)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import pipe_lines
from tests.signal_process import ROOT, SignalProcess, signal_server

CHROMIUM = os.environ.get("P2PD_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
# No WebRTC overrides: Chromium hides its host addresses behind mDNS .local names as it does for users, and the
# daemon side (aiortc) resolves them.
ARTIFACTS = ROOT / "tests" / "artifacts"
LINK = re.compile(r"open in a browser: (\S+)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "page" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    page = getattr(item, "funcargs", {}).get("page")
    if report.when == "call" and report.failed and page is not None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / (re.sub(r"[^A-Za-z0-9_.-]", "_", item.name) + ".png")
        try:
            page.screenshot(path=str(path), full_page=True)
            report.sections.append(("screenshot", f"saved to {path}"))
            print(f"\nscreenshot of the failing page: {path}", file=sys.stderr)
        except Exception as exc:  # the page may be gone with the failure
            report.sections.append(("screenshot", f"could not be taken: {exc}"))


@pytest.fixture(scope="package")  # Playwright's sync API keeps an event loop running in this thread while it
def browser() -> Iterator[Any]:      # is started: it must end with tests/web, or every asyncio test after it fails
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"Chromium not found at {CHROMIUM} (.ci/setup installs Debian's chromium)")
    if not (ROOT / "web" / "vendor" / "lz4js.js").is_file():
        pytest.fail("web/ is not set up: run `bash .ci/setup` (npm ci in web/)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(60_000)
    messages: list[str] = []
    page.on("console", lambda m: messages.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: messages.append(f"pageerror: {e}"))
    page.console_messages = messages  # type: ignore[attr-defined]
    yield page
    context.close()


@pytest.fixture
def server() -> Iterator[SignalProcess]:
    with signal_server() as s:
        yield s


def read_until(proc: subprocess.Popen[str], pattern: re.Pattern[str], timeout: float = 60) -> tuple[re.Match[str], str]:
    """Read the process's stderr line by line until ``pattern`` matches; returns the match and what was read.
    Fails after ``timeout`` seconds even if the process prints nothing (tests/pipe_lines.py)."""
    assert proc.stderr is not None
    match, seen = pipe_lines.read_until(proc.stderr, pattern, timeout)
    if match is None:
        raise AssertionError(f"the process never printed {pattern.pattern!r} within {timeout} s "
                             f"(exit {proc.poll()}):\n{seen}")
    return match, seen


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=30)


def node() -> str:
    found = shutil.which("node")
    if not found:
        pytest.fail("node is not installed")
    return found
