"""Where ``p2pd-signal`` finds the browser page, and that it says so when the page is missing or incomplete
(an installed server answering GET / with 426, or serving a page whose modules 404, without a word, was issue 17).
The installed case — the wheel's copy of the page — is tests/test_wheel.py."""

from __future__ import annotations

from pathlib import Path

from signaling.page import default_web_dir, missing_parts, startup_notes
from tests.signal_process import ROOT, signal_server

_MAP = '<script type="importmap">\n{"imports": {"@noble/curves/": "./node_modules/@noble/curves/"}}\n</script>'


def page(root: Path, *, vendor: bool, mapped: bool) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "index.html").write_text(f"<html>{_MAP}<script type=module src=src/ui.js></script></html>")
    if vendor:
        (root / "vendor").mkdir()
        (root / "vendor" / "lz4js.js").write_text("export {}")
    if mapped:
        (root / "node_modules" / "@noble" / "curves").mkdir(parents=True)
    return root


def test_a_checkout_serves_its_web_folder() -> None:
    assert default_web_dir() == ROOT / "web"


def test_missing_parts_name_what_npm_ci_writes(tmp_path: Path) -> None:
    assert missing_parts(page(tmp_path / "full", vendor=True, mapped=True)) == []
    assert missing_parts(page(tmp_path / "bare", vendor=False, mapped=False)) == [
        "vendor/", "node_modules/@noble/curves/"]
    assert missing_parts(tmp_path / "nothing") == ["index.html"]
    single = page(tmp_path / "single", vendor=True, mapped=True)  # a bare specifier mapped to one file
    curves = '"./node_modules/@noble/curves/"'
    html = (single / "index.html").read_text().replace(curves, curves + ', "uqr": "./node_modules/uqr/index.mjs"')
    (single / "index.html").write_text(html)
    assert missing_parts(single) == ["node_modules/uqr/index.mjs"]
    (single / "node_modules" / "uqr").mkdir()
    (single / "node_modules" / "uqr" / "index.mjs").write_text("export {}")
    assert missing_parts(single) == []


def test_startup_notes(tmp_path: Path) -> None:
    assert startup_notes(None, no_web=True) == []
    assert startup_notes(page(tmp_path / "full", vendor=True, mapped=True), no_web=False) == []
    (none,) = startup_notes(None, no_web=False)
    assert "no browser page found" in none and "426" in none and "--static-dir" in none
    (lacking,) = startup_notes(page(tmp_path / "bare", vendor=False, mapped=True), no_web=False)
    assert "vendor/" in lacking and "npm ci" in lacking


def test_the_server_warns_at_start_about_an_incomplete_page(tmp_path: Path) -> None:
    # the notes come before the "listening on" line, which signal_server waits for
    with signal_server("--static-dir", str(page(tmp_path, vendor=False, mapped=False))) as server:
        text = "".join(server.output)
    assert "warning: the browser page" in text and "vendor/" in text and "node_modules/@noble/curves/" in text


def test_the_checkouts_page_starts_without_a_warning() -> None:
    with signal_server() as server:
        text = "".join(server.output)
    assert "listening on" in text and "warning" not in text
