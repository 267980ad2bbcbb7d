"""The signaling server hands STUN/TURN (with short-lived coturn REST credentials) to joined clients only, and
never shows the credentials in /metrics or its log."""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect

from signaling.__main__ import main
from signaling.ice import IceConfigError, IceSettings, rest_credential, settings_from
from signaling.protocol import SUBPROTOCOL
from signaling.server import ServerOptions, SignalServer

URLS = ("stun:203.0.113.1:3478", "turn:203.0.113.1:3478?transport=udp", "turns:turn.example:443")


def test_rest_credential_matches_coturns_scheme():
    # echo -n "1000:p2pd" | openssl dgst -sha1 -hmac s3cret -binary | base64
    assert rest_credential(b"s3cret", "p2pd", 1000) == ("1000:p2pd", "WUda6VzAzdcfzqbsq9w+p9T6mFE=")


def test_settings_refuse_what_cannot_work(tmp_path: Path):
    with pytest.raises(IceConfigError):
        IceSettings(urls=("turn:203.0.113.1:3478",))  # TURN without the secret
    with pytest.raises(IceConfigError):
        IceSettings(urls=("http://203.0.113.1/",))
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(IceConfigError):
        settings_from(["turn:h:3478"], tmp_path / "empty")
    assert settings_from([], None) is None
    (tmp_path / "secret").write_text("abc\n")
    conf = {"ice_servers": ["stun:h:3478", "turn:h:3478"], "turn_secret_file": str(tmp_path / "secret"),
            "turn_ttl": 60}
    settings = settings_from([], None, config=conf)
    assert settings is not None and settings.urls == ("stun:h:3478", "turn:h:3478") and settings.secret == b"abc"
    assert settings.ttl == 60
    assert main(["--ice-server", "turn:h:3478"]) == 2  # no secret file: refused before listening
    # credentials are handed out once per room: they must outlive it
    assert main(["--ice-server", "turn:h:3478", "--turn-secret-file", str(tmp_path / "secret"), "--turn-ttl", "60",
                 "--room-ttl", "600"]) == 2


async def _client(url: str) -> ClientConnection:
    ws = await connect(url, subprotocols=[SUBPROTOCOL], compression=None)  # type: ignore[list-item]
    assert json.loads(await ws.recv())["type"] == "welcome"
    return ws


async def _ask(ws: ClientConnection, message: dict[str, Any]) -> dict[str, Any]:
    await ws.send(json.dumps(message))
    return json.loads(await asyncio.wait_for(ws.recv(), 5))


async def test_joined_clients_get_fresh_credentials_and_anonymous_ones_none(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.DEBUG)
    ice = IceSettings(urls=URLS, secret=b"s3cret", ttl=600, clock=lambda: 400.0)
    async with SignalServer(options=ServerOptions(port=0, ice=ice)) as server:
        anonymous = await _client(server.url)
        assert (await _ask(anonymous, {"type": "ping", "id": 1}))["type"] == "pong"
        a = await _client(server.url)
        joined = await _ask(a, {"type": "allocate", "id": 1})
        assert joined["type"] == "joined"
        given = json.loads(await asyncio.wait_for(a.recv(), 5))
        assert given["type"] == "ice_servers" and given["expires_in"] == 600
        servers = given["ice_servers"]
        assert [s["urls"] for s in servers] == [[u] for u in URLS]
        assert "username" not in servers[0]  # STUN needs none
        assert all((s["username"], s["credential"]) == rest_credential(b"s3cret", "p2pd", 1000)
                   for s in servers[1:])
        b = await _client(server.url)
        assert (await _ask(b, {"type": "join", "room": joined["room"], "id": 2}))["type"] == "joined"
        assert json.loads(await asyncio.wait_for(b.recv(), 5))["type"] == "ice_servers"
        # the anonymous connection got nothing meanwhile
        assert (await _ask(anonymous, {"type": "ping", "id": 2})) == {"type": "pong", "id": 2}
        def get() -> str:
            with urllib.request.urlopen(server.url.replace("ws://", "http://") + "metrics", timeout=5) as r:
                return str(r.read().decode())
        metrics = await asyncio.to_thread(get)
        credential = servers[1]["credential"]
        assert credential not in metrics and "1000:p2pd" not in metrics and "s3cret" not in metrics
        assert credential not in caplog.text and "s3cret" not in caplog.text
        for ws in (anonymous, a, b):
            await ws.close()


