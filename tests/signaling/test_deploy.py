"""The deployment recipe: the generated coturn config starts a real turnserver that accepts p2pd-signal's
credentials and refuses expired ones; p2pd-signal serves wss/https with --cert/--key."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from p2pd.transfer.ice import Outcome, Server, probe
from signaling.__main__ import tls_context
from signaling.deploy import main as deploy_main
from signaling.ice import rest_credential
from signaling.protocol import SUBPROTOCOL
from signaling.server import ServerOptions, SignalServer


def _free_port(kind: int) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def coturn(tmp_path: Path) -> Iterator[tuple[int, bytes]]:
    if shutil.which("turnserver") is None:
        pytest.skip("coturn's turnserver is not installed (.ci/setup installs it)")
    secret = b"deploy-test-secret"
    (tmp_path / "secret").write_bytes(secret + b"\n")
    port = _free_port(socket.SOCK_DGRAM)
    conf = tmp_path / "turnserver.conf"
    assert deploy_main(["coturn", "--realm", "p2pd.test", "--secret-file", str(tmp_path / "secret"),
                        "--listening-ip", "127.0.0.1", "--port", str(port), "--log-file", "stdout",
                        "-o", str(conf)]) == 0
    assert conf.stat().st_mode & 0o077 == 0  # it holds the secret
    text = conf.read_text()
    assert "use-auth-secret" in text and "denied-peer-ip=10.0.0.0-10.255.255.255" in text
    proc = subprocess.Popen(["turnserver", "-c", str(conf), f"--pidfile={tmp_path}/pid",
                             f"--userdb={tmp_path}/db"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield port, secret
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_generated_coturn_config_accepts_fresh_and_refuses_expired_credentials(coturn: tuple[int, bytes]):
    port, secret = coturn
    fresh = rest_credential(secret, "p2pd", int(time.time()) + 600)
    expired = rest_credential(secret, "p2pd", int(time.time()) - 60)
    for transport in ("udp", "tcp"):
        url = f"turn:127.0.0.1:{port}?transport={transport}"
        assert (await probe(Server(url, *fresh))).outcome is Outcome.OK
        assert (await probe(Server(url, *expired))).outcome is Outcome.REFUSED
    wrong = rest_credential(b"another secret", "p2pd", int(time.time()) + 600)
    assert (await probe(Server(f"turn:127.0.0.1:{port}", *wrong))).outcome is Outcome.REFUSED


async def test_signal_serves_wss_and_https(tmp_path: Path):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    client_ctx = ssl.create_default_context(cafile=str(cert))
    async with SignalServer(options=ServerOptions(port=0, tls=tls_context(cert, key))) as server:
        assert server.url.startswith("wss://")
        async with connect(server.url, subprotocols=[SUBPROTOCOL], ssl=client_ctx) as ws:  # type: ignore[list-item]
            assert json.loads(await asyncio.wait_for(ws.recv(), 5))["type"] == "welcome"

        def healthz() -> bytes:
            import urllib.request

            url = server.url.replace("wss://", "https://") + "healthz"
            with urllib.request.urlopen(url, context=client_ctx, timeout=5) as r:
                return bytes(r.read())

        assert await asyncio.to_thread(healthz) == b"ok\n"
