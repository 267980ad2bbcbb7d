"""The browser page, served over https by p2pd-signal on the public address, moves a conversation across two
NATs, with headless Chromium inside a home's namespace (tests/net/page.py) trusting the server's self-signed
certificate by its public key:

* page ← CLI: ``p2pd send`` in home A (trusting the certificate through ``SSL_CERT_FILE``), the page in home B
  opening the https link the sender printed;
* page → CLI: the page in home A sends to ``p2pd receive --make-code`` in home B;
* page → page: the page in home A makes a code to send and the page in home B types it, or the page in home B
  makes a code to receive and the page in home A types it (each page starts either side: web/src/ui.js).

Both routers are symmetric, so the only way through is coturn; the tests assert what the pages verified (SHA-256,
the same verification string on both sides, the conversation received equal to the one sent) and the path, from
the routers' counters and, where a CLI takes part, from what it says.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import importlib.util
import ipaddress
import json
import os
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.net.internet import CORPUS_SESSION, ICE_URLS, ROOT, Internet, _env, _wait_listening
from tests.net.topology import PUBLIC_IP, Topology
from tests.web.conftest import CHROMIUM

TLS_SIGNAL_PORT = 8443
LINK = re.compile(r"open in a browser: (\S+)")

pytestmark = [
    pytest.mark.skipif(not CORPUS_SESSION.is_file(), reason=f"corpus session {CORPUS_SESSION} missing"),
    pytest.mark.skipif(not Path(CHROMIUM).is_file(),
                       reason=f"Chromium not found at {CHROMIUM} (.ci/setup installs Debian's chromium)"),
    pytest.mark.skipif(importlib.util.find_spec("playwright") is None,
                       reason="Playwright is not installed (pip install -e '.[test]')"),
    pytest.mark.skipif(not (ROOT / "web" / "vendor" / "lz4js.js").is_file(),
                       reason="web/ is not set up: run `bash .ci/setup` (npm ci in web/)"),
]


@dataclass
class TlsSignal:
    url: str  # wss://203.0.113.1:8443/
    cert: Path
    spki: str  # base64 SHA-256 of the certificate's SubjectPublicKeyInfo (what Chromium pins)


def self_signed(directory: Path, address: str) -> tuple[Path, Path, str]:
    """A self-signed certificate for ``address`` (an IP SAN) and its key, as PEM files; and its SPKI pin."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, address)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(address))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "signal-cert.pem", directory / "signal-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    spki = cert.public_key().public_bytes(serialization.Encoding.DER,
                                          serialization.PublicFormat.SubjectPublicKeyInfo)
    return cert_path, key_path, base64.b64encode(hashlib.sha256(spki).digest()).decode()


@pytest.fixture(scope="module")
def tls_signal(internet: Internet) -> Iterator[TlsSignal]:
    """p2pd-signal over TLS in the public namespace, serving the page and handing out coturn's STUN/TURN."""
    cert, key, spki = self_signed(internet.tmp, PUBLIC_IP)
    args = [sys.executable, "-m", "signaling", "--host", PUBLIC_IP, "--port", str(TLS_SIGNAL_PORT),
            "--cert", str(cert), "--key", str(key), "--turn-secret-file", str(internet.tmp / "turn-secret"),
            "--log-level", "INFO"]
    for url in ICE_URLS:
        args += ["--ice-server", url]
    with open(internet.tmp / f"signal-{TLS_SIGNAL_PORT}.log", "wb") as log:
        server = internet.topo.spawn("pub", args, stdout=log, stderr=subprocess.STDOUT,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    _wait_listening(internet.topo, TLS_SIGNAL_PORT, time.monotonic() + 30)
    yield TlsSignal(f"wss://{PUBLIC_IP}:{TLS_SIGNAL_PORT}/", cert, spki)
    server.terminate()


def _read_until(path: Path, pattern: re.Pattern[str], proc: subprocess.Popen[bytes], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        match = pattern.search(path.read_text(errors="replace"))
        if match:
            return match.group(1)
        time.sleep(0.05)
    raise AssertionError(f"never printed {pattern.pattern!r}:\n{path.read_text(errors='replace')}")


def test_https_page_receives_across_symmetric_nats(internet: Internet, tls_signal: TlsSignal) -> None:
    from p2pd.agents.claude_code.export import export_session

    topo = internet.topo
    topo.nat("a", "symmetric")
    topo.nat("b", "symmetric")
    case = internet.tmp / f"page-{secrets.token_hex(3)}"
    home_a, home_b = case / "home-a", case / "home-b"
    home_a.mkdir(parents=True)
    home_b.mkdir(parents=True)
    env = _env(home_a, TLS_SIGNAL_PORT, {"SSL_CERT_FILE": str(tls_signal.cert)})
    env["P2PD_SIGNAL"] = tls_signal.url
    sender_log = case / "sender.err"
    started = time.monotonic()
    with open(sender_log, "wb") as err:
        sender = topo.spawn("ha", [sys.executable, "-m", "p2pd", "send", str(CORPUS_SESSION), "--timeout", "60",
                                   "--fallback-dir", str(case)],
                            stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL, cwd=home_a, env=env)
    link = _read_until(sender_log, LINK, sender, 30)
    assert link.startswith(f"https://{PUBLIC_IP}:{TLS_SIGNAL_PORT}/#"), link
    page_env = {k: v for k, v in os.environ.items() if not k.startswith("P2PD_")}
    page_env.update(HOME=str(home_b), PYTHONPATH=str(ROOT))
    browser = topo.spawn("hb", [sys.executable, "-m", "tests.net.page", "receive", link, str(case / "downloads"),
                                tls_signal.spki],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=home_b, env=page_env)
    try:
        out, page_err = browser.communicate(timeout=120)
        sender.wait(timeout=30)
    finally:
        for proc in (browser, sender):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    seconds = time.monotonic() - started
    counters = {side: topo.counters(side) for side in ("a", "b")}
    sent = sender_log.read_text(errors="replace")
    assert browser.returncode == 0, page_err.decode(errors="replace")
    page = json.loads(out.decode().strip().splitlines()[-1])
    path = re.search(r"connected: [^\n]*", sent)
    print(f"\nhttps page across symmetric NATs: {page['state']} in {seconds:.1f} s (page: offer after "
          f"{page['offer_seconds']:.1f} s, accept → verified {page['seconds']:.2f} s); sender "
          f"{path.group(0) if path else 'said no path'}; counters {counters}")
    report = f"page: {json.dumps(page, indent=1)}\n--- sender ---\n{sent}"
    assert page["state"] == "done", report
    assert sender.returncode == 0, report
    # the page verified the SHA-256 the sender announced, and both showed the same verification string
    assert page["sha256"] and f"the receiver checked SHA-256 {page['sha256'][:16]}" in sent, report
    assert page["sas"] and page["sas"] in sent, report
    expected = export_session(CORPUS_SESSION).to_json_dict()
    assert page["offer_messages"] == str(expected["counts"]["messages"])
    # the reader shows the conversation a page at a time (tests/web covers its paging); here: it shows it
    assert page["messages"] > 0 and page["tool_calls"] > 0, report
    got = json.loads(Path(page["download"]).read_text())
    assert got["messages"] == expected["messages"] and got["subagents"] == expected["subagents"]
    # the path: relayed by coturn; nothing arrived straight from the other home
    assert "connected: relayed" in sent, report
    for side in ("a", "b"):
        assert counters[side]["udp_from_peer"] == 0, counters
        assert counters[side]["udp_to_peer"] < 5_000, counters
    assert counters["a"]["udp_to_relay"] > 500_000, counters  # aiortc: TURN over UDP, or to the page's relay
    # Chromium allocates on coturn over UDP and TCP and takes either (measured: TCP 1 run in 9)
    assert counters["b"]["udp_from_relay"] + counters["b"]["tcp_from_turn"] > 500_000, counters


def test_sender_refuses_an_untrusted_certificate(internet: Internet, tls_signal: TlsSignal) -> None:
    """Without the certificate in its trust store, ``p2pd send`` does not talk to the server at all."""
    home = internet.tmp / f"untrusting-{secrets.token_hex(3)}"
    home.mkdir()
    env = _env(home, TLS_SIGNAL_PORT, {})
    env.pop("SSL_CERT_FILE", None)
    env["P2PD_SIGNAL"] = tls_signal.url
    sender = internet.topo.spawn("ha", [sys.executable, "-m", "p2pd", "send", str(CORPUS_SESSION), "--timeout", "20",
                                        "--fallback-dir", str(home)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=home,
                                 env=env)
    _, err = sender.communicate(timeout=60)
    said = err.decode(errors="replace")
    print(f"\nuntrusted certificate: exit {sender.returncode}\n{said}")
    assert sender.returncode not in (0, None), said
    assert "Code:" not in said  # no room was made: the TLS handshake failed first
    assert "TLS certificate is not trusted" in said and "SSL_CERT_FILE" in said  # and the way to trust it


def test_https_page_sends_across_symmetric_nats(internet: Internet, tls_signal: TlsSignal) -> None:
    """The other direction: the page in home A sends an exported conversation to ``p2pd receive`` in home B."""
    topo = internet.topo
    topo.nat("a", "symmetric")
    topo.nat("b", "symmetric")
    case = internet.tmp / f"page-send-{secrets.token_hex(3)}"
    home_a, home_b = case / "home-a", case / "home-b"
    home_a.mkdir(parents=True)
    home_b.mkdir(parents=True)
    exported = case / "spotter.a2a.json"
    made = subprocess.run([sys.executable, "-m", "p2pd", "export", str(CORPUS_SESSION), "-o", str(exported)],
                          env=_env(home_a, TLS_SIGNAL_PORT, {}), cwd=home_a, capture_output=True, timeout=60)
    assert made.returncode == 0, made.stderr
    env = _env(home_b, TLS_SIGNAL_PORT, {"SSL_CERT_FILE": str(tls_signal.cert)})
    env["P2PD_SIGNAL"] = tls_signal.url
    receiver_log = case / "receiver.err"
    started = time.monotonic()
    with open(receiver_log, "wb") as err:
        receiver = topo.spawn("hb", [sys.executable, "-m", "p2pd", "receive", "--make-code", "--yes",
                                     "-o", str(case / "inbox"), "--timeout", "60"],
                              stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, cwd=home_b, env=env)
    code = _read_until(receiver_log, re.compile(r"Code: (\S+)"), receiver, 30)
    page_env = {k: v for k, v in os.environ.items() if not k.startswith("P2PD_")}
    page_env.update(HOME=str(home_a), PYTHONPATH=str(ROOT))
    browser = topo.spawn("ha", [sys.executable, "-m", "tests.net.page", "send",
                                f"https://{PUBLIC_IP}:{TLS_SIGNAL_PORT}/", str(exported), tls_signal.spki, code],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=home_a, env=page_env)
    try:
        out, page_err = browser.communicate(timeout=120)
        received_out, _ = receiver.communicate(timeout=30)
    finally:
        for proc in (browser, receiver):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    seconds = time.monotonic() - started
    counters = {side: topo.counters(side) for side in ("a", "b")}
    said = receiver_log.read_text(errors="replace")
    assert browser.returncode == 0, page_err.decode(errors="replace")
    page = json.loads(out.decode().strip().splitlines()[-1])
    path = re.search(r"connected: [^\n]*", said)
    print(f"\nhttps page sends across symmetric NATs: {page['state']} in {seconds:.1f} s; receiver "
          f"{path.group(0) if path else 'said no path'}; counters {counters}")
    report = f"page: {json.dumps(page, indent=1)}\n--- receiver ---\n{said}"
    assert page["state"] == "sent", report
    assert receiver.returncode == 0, report
    assert "SHA-256 verified" in said and page["sas"] and page["sas"] in said, report
    received = json.loads(Path(received_out.decode().strip()).read_text())
    assert received == json.loads(exported.read_text())
    assert "connected: relayed" in said, report
    for side in ("a", "b"):
        assert counters[side]["udp_from_peer"] == 0, counters
        assert counters[side]["udp_to_peer"] < 5_000, counters
    # Chromium sent through coturn (over UDP or TCP); p2pd received over UDP (TURN, or from the page's relay)
    # (TCP to coturn's port only: all TCP to the public host counts the page's https too, ~600 KB a page load —
    # ~150 requests, each on its own TLS connection)
    assert counters["a"]["udp_to_relay"] + counters["a"]["tcp_to_turn"] > 500_000, counters
    assert counters["b"]["udp_from_relay"] > 500_000, counters


def _page(topo: Topology, ns: str, home: Path, args: list[str], log: Path) -> subprocess.Popen[bytes]:
    """``tests.net.page`` with ``args`` in namespace ``ns``; its stdout goes to ``log`` (its stderr beside it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("P2PD_")}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT))
    with open(log, "wb") as out, open(log.with_suffix(".err"), "wb") as err:
        return topo.spawn(ns, [sys.executable, "-m", "tests.net.page", *args], stdout=out, stderr=err,
                          stdin=subprocess.DEVNULL, cwd=home, env=env)


def _last_json(log: Path) -> dict[str, Any]:
    lines = log.read_text(errors="replace").strip().splitlines()
    assert lines, f"the page printed nothing:\n{log.with_suffix('.err').read_text(errors='replace')}"
    return json.loads(lines[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize("maker", ["sending page", "receiving page"])
def test_https_page_to_page_across_symmetric_nats(internet: Internet, tls_signal: TlsSignal, maker: str) -> None:
    """A page in home A sends an exported conversation to a page in home B; one of them makes the code (the
    sending page: "Make a code to send"; or the receiving page: "Make a code to receive") and the other page has
    it typed into its form."""
    topo = internet.topo
    topo.nat("a", "symmetric")
    topo.nat("b", "symmetric")
    case = internet.tmp / f"page-to-page-{secrets.token_hex(3)}"
    home_a, home_b = case / "home-a", case / "home-b"
    home_a.mkdir(parents=True)
    home_b.mkdir(parents=True)
    exported = case / "spotter.a2a.json"
    made = subprocess.run([sys.executable, "-m", "p2pd", "export", str(CORPUS_SESSION), "-o", str(exported)],
                          env=_env(home_a, TLS_SIGNAL_PORT, {}), cwd=home_a, capture_output=True, timeout=60)
    assert made.returncode == 0, made.stderr
    url = f"https://{PUBLIC_IP}:{TLS_SIGNAL_PORT}/"
    downloads = case / "downloads"
    send_log, receive_log = case / "sending-page.out", case / "receiving-page.out"
    sending = ["send", url, str(exported), tls_signal.spki]
    receiving = ["receive", url, str(downloads), tls_signal.spki]
    started = time.monotonic()
    if maker == "sending page":
        first = _page(topo, "ha", home_a, [*sending, "make"], send_log)
        first_log = send_log
    else:
        first = _page(topo, "hb", home_b, [*receiving, "make"], receive_log)
        first_log = receive_log
    second: subprocess.Popen[bytes] | None = None
    try:
        code = _read_until(first_log, re.compile(r'^\{"code": "([^"]+)"', re.MULTILINE), first, 60)
        if maker == "sending page":
            second = _page(topo, "hb", home_b, [*receiving, code], receive_log)
        else:
            second = _page(topo, "ha", home_a, [*sending, code], send_log)
        second.wait(timeout=150)
        first.wait(timeout=60)
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    seconds = time.monotonic() - started
    counters = {side: topo.counters(side) for side in ("a", "b")}
    for proc, log in ((first, first_log), (second, receive_log if first_log == send_log else send_log)):
        assert proc is not None and proc.returncode == 0, log.with_suffix(".err").read_text(errors="replace")
    sent, got = _last_json(send_log), _last_json(receive_log)
    print(f"\nhttps page → page across symmetric NATs, code made by the {maker} ({code}): sender {sent['state']}, "
          f"receiver {got['state']} in {seconds:.1f} s (receiver: offer after {got['offer_seconds']:.1f} s, "
          f"accept → verified {got['seconds']:.2f} s); counters {counters}")
    report = f"sending page: {json.dumps(sent, indent=1)}\nreceiving page: {json.dumps(got, indent=1)}"
    assert got["state"] == "done" and sent["state"] == "sent", report
    # the receiving page verified the SHA-256 the sending page announced, and the sender heard so
    assert got["sha256"] and f"The receiver verified SHA-256 {got['sha256'][:16]}" in sent["result_text"], report
    assert got["sas"] and got["sas"] == sent["sas"], report  # the same verification string on both pages
    assert json.loads(Path(got["download"]).read_text()) == json.loads(exported.read_text())
    assert got["messages"] > 0 and got["tool_calls"] > 0, report
    # the path: relayed by coturn; nothing went straight between the homes
    for side in ("a", "b"):
        assert counters[side]["udp_from_peer"] == 0, counters
        assert counters[side]["udp_to_peer"] < 5_000, counters
    # Chromium allocates on coturn over UDP and TCP and takes either, on both sides
    # (TCP to coturn's port only: all TCP to the public host counts the page's https too, ~600 KB a page load —
    # ~150 requests, each on its own TLS connection)
    assert counters["a"]["udp_to_relay"] + counters["a"]["tcp_to_turn"] > 500_000, counters
    assert counters["b"]["udp_from_relay"] + counters["b"]["tcp_from_turn"] > 500_000, counters
