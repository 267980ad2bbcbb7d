"""The page link ``p2pd send`` prints: derived from the signaling URL, or overridden; the code in the fragment."""

from __future__ import annotations

import pytest

from p2pd.errors import InvalidInputError
from p2pd.exchange.weblink import page_link, qr_text, web_base


@pytest.fixture(autouse=True)
def no_config(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("P2PD_WEB_URL", raising=False)
    monkeypatch.setenv("P2PD_CONFIG", str(tmp_path / "none.toml"))


def test_link_follows_the_signaling_url() -> None:
    assert page_link("ws://127.0.0.1:8765/", "7-amber-river") == "http://127.0.0.1:8765/#7-amber-river"
    assert page_link("wss://signal.example:443/", "12-a-b") == "https://signal.example:443/#12-a-b"
    assert web_base("ws://host:1") == "http://host:1/"


def test_override_from_environment_and_config(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("P2PD_WEB_URL", "https://p2pd.example/app")
    assert page_link("ws://127.0.0.1:8765/", "7-a-b") == "https://p2pd.example/app/#7-a-b"
    monkeypatch.setenv("P2PD_WEB_URL", "ftp://nope")
    with pytest.raises(InvalidInputError):
        web_base("ws://x:1/")
    monkeypatch.delenv("P2PD_WEB_URL")
    config = tmp_path / "config.toml"
    config.write_text('web_url = "https://from-config.example/"\n')
    monkeypatch.setenv("P2PD_CONFIG", str(config))
    assert page_link("ws://127.0.0.1:8765/", "7-a-b") == "https://from-config.example/#7-a-b"


def test_qr_code_is_drawn_for_the_terminal() -> None:
    small, large = qr_text("http://h:1/#7-a-b"), qr_text("http://h:1/#7-" + "word-" * 20 + "end")
    assert small.count("\n") >= 10 and "█" in small
    assert large.count("\n") > small.count("\n"), "a longer link makes a bigger code"
