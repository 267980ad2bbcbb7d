"""``p2pd serve`` as a process: bind refusal, clean stop, restart keeping pending handoffs, interrupted and
cancelled transfers, the CLI talking to the daemon (or saying how to start it), the systemd unit."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect as ws_connect
from websockets.typing import Subprotocol

from p2pd.daemon.serve import check_bind, is_loopback
from p2pd.errors import InvalidInputError
from tests.daemon.conftest import SESSION_CWD, SESSION_ID, Daemon, make_env
from tests.signal_process import SignalProcess

PACKAGE = {"summary": "s", "goal": "g", "cwd": SESSION_CWD, "session_id": SESSION_ID}


def test_loopback_rule() -> None:
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.9"):
        assert is_loopback(host)
        check_bind(host, False)
    for host in ("0.0.0.0", "::", "192.168.1.10", "example.org"):
        assert not is_loopback(host)
        with pytest.raises(InvalidInputError, match="allow_remote"):
            check_bind(host, False)
        check_bind(host, True)


def test_non_loopback_bind_refused_unless_configured(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    run = [sys.executable, "-m", "p2pd", "serve", "--port", "0"]
    for args, extra in ((["--host", "0.0.0.0"], {}), ([], {"P2PD_HOST": "192.0.2.1"})):
        r = subprocess.run(run + args, env={**env, **extra}, capture_output=True, text=True, timeout=60)
        assert r.returncode == 4, r.stderr
        assert "refusing to serve on" in r.stderr and "allow_remote" in r.stderr
        assert not (tmp_path / "p2pd-home" / "daemon.json").exists()
    # configured: allowed (and still needs the token)
    (tmp_path / "config.toml").write_text('allow_remote = true\nhost = "0.0.0.0"\n')
    d = Daemon(tmp_path).start()
    try:
        assert "0.0.0.0" not in d.url  # it says where a client on this machine reaches it
        assert httpx.get(f"{d.url}/stats", trust_env=False).status_code == 401
    finally:
        assert d.stop() == 0


def test_sigterm_and_sigint_stop_cleanly(tmp_path: Path) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        d = Daemon(tmp_path).start()
        assert (d.home / "daemon.json").exists()
        assert d.stop(sig) == 0, "".join(d.output)
        assert not (d.home / "daemon.json").exists()
        assert "Traceback" not in "".join(d.output)


def test_second_daemon_on_the_same_home_refused(daemon: Daemon) -> None:
    r = daemon.p2pd("serve", "--port", "0", timeout=60)
    assert r.returncode != 0 and "already runs" in r.stderr


def test_restart_keeps_pending_handoffs_and_interrupts_transfers(tmp_path: Path, signaling: SignalProcess) -> None:
    d = Daemon(tmp_path, signal_url=signaling.url).start()
    with d.client() as c:
        pending = c.post("/handoffs", json=PACKAGE).json()["id"]
        claimed = c.post("/handoffs", json=PACKAGE).json()["id"]
        c.post(f"/handoffs/{claimed}/claim", json={"claimer": "desk"})
        waiting = c.post("/send", json={"session": SESSION_ID, "to": {"code": ""}}).json()
        assert waiting["state"] in ("queued", "running") and waiting["code"]
    assert d.stop() == 0
    d.start()  # a clean stop: the transfer waiting for its receiver is interrupted
    with d.client() as c:
        assert c.get(f"/handoffs/{pending}").json()["state"] == "pending"
        assert c.get(f"/handoffs/{claimed}").json()["state"] == "claimed"
        assert c.get(f"/transfers/{waiting['id']}").json()["state"] == "interrupted"
        assert c.get("/stats").json()["handoffs"]["pending"] == 1
        again = c.post("/send", json={"session": SESSION_ID, "to": {"code": ""}}).json()
    d.kill()  # a crash: the next start finds the row still running
    d.start()
    with d.client() as c:
        assert c.get(f"/transfers/{again['id']}").json()["state"] == "interrupted"
        assert c.get(f"/handoffs/{pending}").json()["state"] == "pending"
        # an interrupted transfer can be cancelled for good
        assert c.post(f"/transfers/{again['id']}/cancel").json()["state"] == "cancelled"
    d.kill()


def test_cancel_a_send_waiting_for_its_receiver(tmp_path: Path, signaling: SignalProcess) -> None:
    d = Daemon(tmp_path, signal_url=signaling.url).start()
    try:
        with d.client() as c:
            t = c.post("/send", json={"session": SESSION_ID, "to": {"code": ""}}).json()
            started = time.monotonic()
            r = c.post(f"/transfers/{t['id']}/cancel", json={"reason": "changed my mind"})
            assert r.status_code == 200 and r.json()["state"] == "cancelled"
            assert r.json()["error"] == "changed my mind"
            assert time.monotonic() - started < 10
            assert c.post(f"/transfers/{t['id']}/cancel").status_code == 409
            assert c.get("/stats").json()["running_tasks"] == 0
            # a receiver waiting in a room whose sender never speaks, cancelled too (a code with no room at all
            # fails at once with "not found", so the room is held open here by a silent sender)
            with ws_connect(signaling.url, subprotocols=[Subprotocol("p2pd-signal.v1")]) as silent:
                silent.send(json.dumps({"type": "allocate"}))
                room = next(m["room"] for m in map(json.loads, iter(silent.recv, None)) if m["type"] == "joined")
                rx = c.post("/receive", json={"code": f"{room}-nobody-here"}).json()
                deadline = time.monotonic() + 20
                while c.get(f"/transfers/{rx['id']}").json()["state"] == "queued" and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert c.get(f"/transfers/{rx['id']}").json()["state"] == "running"  # waiting in the room
                assert c.post(f"/transfers/{rx['id']}/cancel").json()["state"] == "cancelled"
    finally:
        d.kill()


def test_cli_without_daemon_says_how_to_start_it(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    for args in (["transfers"], ["inbox"], ["handoffs"], ["send", "latest", "--to", "laptop"]):
        r = subprocess.run([sys.executable, "-m", "p2pd", *args], env=env, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 1, (args, r.stderr)
        assert "daemon is not running" in r.stderr and "p2pd serve" in r.stderr


def test_cli_talks_to_the_daemon(daemon: Daemon) -> None:
    with daemon.client() as c:
        hid = c.post("/handoffs", json=PACKAGE).json()["id"]
    r = daemon.p2pd("handoffs")
    assert r.returncode == 0 and hid in r.stdout
    r = daemon.p2pd("handoffs", "show", hid, "--json")
    assert r.returncode == 0 and f'"{hid}"' in r.stdout and '"pending"' in r.stdout
    r = daemon.p2pd("handoffs", "stats", "--json")
    assert r.returncode == 0 and '"pending": 1' in r.stdout
    r = daemon.p2pd("handoffs", "cancel", hid)
    assert r.returncode == 0 and "cancelled" in r.stdout
    r = daemon.p2pd("handoffs", "cancel", hid)
    assert r.returncode == 10 and "already cancelled" in r.stderr
    r = daemon.p2pd("transfers")
    assert r.returncode == 0 and "No transfers" in r.stderr
    r = daemon.p2pd("transfers", "tr_missing")
    assert r.returncode == 3 and "no transfer" in r.stderr
    r = daemon.p2pd("inbox")
    assert r.returncode == 0 and "inbox is empty" in r.stderr
    r = daemon.p2pd("inbox", "show")
    assert r.returncode == 2 and "needs an id" in r.stderr  # a usage error
    r = daemon.p2pd("send", SESSION_ID, "--to", "laptop")
    assert r.returncode == 3 and "p2pd pair" in r.stderr


def test_cli_inbox_roundtrip(tmp_path: Path, signaling: SignalProcess) -> None:
    """A CLI sender (``p2pd send --code``) → the daemon receives into its inbox → ``p2pd inbox`` import and rm."""
    d = Daemon(tmp_path, signal_url=signaling.url).start()
    try:
        sender = subprocess.Popen([sys.executable, "-m", "p2pd", "send", SESSION_ID, "--code", "4711-amber-river",
                                   "--timeout", "60"], env=d.env, cwd=tmp_path, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert sender.stderr is not None
        for line in sender.stderr:
            if "Code:" in line:
                break
        with d.client() as c:
            rx = c.post("/receive", json={"code": "4711 Amber River", "wait": 90}, timeout=120).json()
        sender.communicate(timeout=60)
        assert sender.returncode == 0 and rx["state"] == "done", rx
        entry = rx["detail"]["inbox_id"]
        r = d.p2pd("inbox")
        assert r.returncode == 0 and entry in r.stdout
        project = tmp_path / "project"
        project.mkdir()
        r = d.p2pd("inbox", "import", entry, "--cwd", str(project))
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip().startswith(("claude", "cd ")) and "--resume" in r.stdout
        path = Path(c_get(d, f"/inbox/{entry}")["document_path"])
        assert path.is_file()
        r = d.p2pd("inbox", "rm", entry)
        assert r.returncode == 0 and not path.exists()
        assert d.p2pd("inbox", "show", entry).returncode == 3
    finally:
        d.kill()


def c_get(d: Daemon, path: str) -> dict:
    with d.client() as c:
        return c.get(path).json()


def test_print_systemd_unit(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "p2pd", "serve", "--print-systemd-unit"], env=make_env(tmp_path),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    assert "[Service]" in r.stdout and "ExecStart=" in r.stdout and "p2pd serve" in r.stdout
    assert "WantedBy=default.target" in r.stdout


def test_cors_only_for_configured_origins(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('cors_origins = ["http://app.example"]\n')
    d = Daemon(tmp_path).start()
    try:
        with d.client() as c:
            ok = c.get("/stats", headers={"Origin": "http://app.example"})
            assert ok.headers.get("access-control-allow-origin") == "http://app.example"
            other = c.get("/stats", headers={"Origin": "https://evil.example"})
            assert "access-control-allow-origin" not in other.headers
        pre = httpx.options(f"{d.url}/stats", trust_env=False, headers={
            "Origin": "http://app.example", "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "authorization"})
        assert pre.status_code == 200 and pre.headers["access-control-allow-origin"] == "http://app.example"
        # the preflight carries no token; the real request still needs it
        assert httpx.get(f"{d.url}/stats", headers={"Origin": "http://app.example"}, trust_env=False).status_code == 401
    finally:
        d.kill()
    (tmp_path / "config.toml").write_text('cors_origins = ["*"]\n')
    r = d.p2pd("serve", "--port", "0", timeout=60)
    assert r.returncode == 4 and "cors_origins" in r.stderr
