"""A simulated internet with its servers: namespaces (topology.py), a real coturn and real p2pd-signal
instances in the public namespace (:func:`internet`), and :func:`transfer`, which runs ``p2pd receive`` in home B
and ``p2pd send`` in home A. Used by the tests (conftest.py) and the benchmark (tests/bench/network.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.net.topology import PUBLIC_IP, TURN_PORT, Topology, unavailable

ROOT = Path(__file__).resolve().parents[2]
SIGNAL_PORT = 8765
CORPUS_SESSION = Path("/work/shared/corpus/claude-code/spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
ICE_URLS = (f"stun:{PUBLIC_IP}:{TURN_PORT}", f"turn:{PUBLIC_IP}:{TURN_PORT}?transport=udp",
            f"turn:{PUBLIC_IP}:{TURN_PORT}?transport=tcp")

UDP_ONLY_SIGNAL_PORT = 8766  # a server that hands out STUN and TURN over UDP only
BARE_SIGNAL_PORT = 8767  # a server without any ICE servers
STUN_SIGNAL_PORT = 8768  # a server that hands out STUN only
SIGNALS = {SIGNAL_PORT: ICE_URLS, UDP_ONLY_SIGNAL_PORT: ICE_URLS[:2], BARE_SIGNAL_PORT: (),
           STUN_SIGNAL_PORT: ICE_URLS[:1]}


@dataclass
class Internet:
    topo: Topology
    tmp: Path
    secret: str

    @property
    def signal_url(self) -> str:
        return f"ws://{PUBLIC_IP}:{SIGNAL_PORT}/"


def _wait_listening(topo: Topology, port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        if f":{port} " in topo.x("pub", "ss", "-ltn"):
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {PUBLIC_IP}:{port} in the public namespace")


def why_unavailable() -> str | None:
    why = unavailable()
    if why is None and shutil.which("turnserver") is None:
        why = "coturn's turnserver is not installed (.ci/setup installs it: apt-get install coturn)"
    return why


@contextlib.contextmanager
def internet(tmp: Path) -> Iterator[Internet]:
    """Build the topology, start coturn and the signaling servers; tear everything down on exit."""
    topo = Topology()
    secret = secrets.token_hex(16)
    try:
        topo.up()
        (tmp / "turn-secret").write_text(secret + "\n")
        with open(tmp / "turnserver.log", "wb") as log:
            topo.spawn("pub", ["turnserver", "-n", f"--listening-ip={PUBLIC_IP}", f"--relay-ip={PUBLIC_IP}",
                           f"--listening-port={TURN_PORT}", "--use-auth-secret", f"--static-auth-secret={secret}",
                           "--realm=p2pd.test", "--no-cli", "--no-tls", "--no-dtls", "--log-file=stdout",
                           "--simple-log", f"--pidfile={tmp}/turn.pid", f"--userdb={tmp}/turndb",
                           "--no-software-attribute"],
                       stdout=log, stderr=subprocess.STDOUT)
        for port, urls in SIGNALS.items():
            args = [sys.executable, "-m", "signaling", "--host", PUBLIC_IP, "--port", str(port), "--no-web",
                    "--log-level", "INFO"]
            if urls:
                args += ["--turn-secret-file", str(tmp / "turn-secret")]
            for url in urls:
                args += ["--ice-server", url]
            with open(tmp / f"signal-{port}.log", "wb") as log:
                topo.spawn("pub", args, stdout=log, stderr=subprocess.STDOUT,
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
        deadline = time.monotonic() + 30
        _wait_listening(topo, TURN_PORT, deadline)
        for port in SIGNALS:
            _wait_listening(topo, port, deadline)
        yield Internet(topo, tmp, secret)
    finally:
        topo.down()


@dataclass
class Run:
    """What one send → receive across the two homes did."""

    sender_rc: int
    receiver_rc: int
    sender_err: str
    receiver_err: str
    sender_out: str
    out_dir: Path
    seconds: float
    counters: dict[str, dict[str, int]]

    def received(self) -> list[Path]:
        return sorted(self.out_dir.glob("*.a2a.json"))


def _env(home: Path, port: int, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("P2PD_")}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT), P2PD_CONFIG=str(home / "no-config.toml"),
               P2PD_SIGNAL=f"ws://{PUBLIC_IP}:{port}/", NO_COLOR="1", COLUMNS="200", **extra)
    return env


def transfer(net: Internet, *, modes: tuple[str, str], session: Path = CORPUS_SESSION,
             send_args: tuple[str, ...] = (), receive_args: tuple[str, ...] = (),
             sender_env: dict[str, str] | None = None, receiver_env: dict[str, str] | None = None,
             timeout: float = 90.0, signal_port: int = SIGNAL_PORT, sender_ns: str = "ha") -> Run:
    """Set the routers' modes, run ``p2pd receive --yes`` in home B and ``p2pd send`` in home A (or
    ``sender_ns``: "hb2" is a second machine on home B's network)."""
    topo = net.topo
    topo.nat("a", modes[0])
    topo.nat("b", modes[1])
    case = net.tmp / f"case-{secrets.token_hex(3)}"
    homes = {side: case / f"home-{side}" for side in ("a", "b")}
    for home in homes.values():
        home.mkdir(parents=True)
    out_dir = case / "received"
    started = time.monotonic()
    receiver_log = case / "receiver.err"
    with open(receiver_log, "wb") as err:
        receiver = topo.spawn("hb", [sys.executable, "-m", "p2pd", "receive", "--make-code", "--yes",
                                     "-o", str(out_dir), "--timeout", "60", *receive_args],
                              stdout=subprocess.DEVNULL, stderr=err, cwd=homes["b"],
                              env=_env(homes["b"], signal_port, receiver_env or {}))
    code = None
    while code is None and time.monotonic() - started < 30 and receiver.poll() is None:
        match = re.search(r"Code: (\S+)", receiver_log.read_text(errors="replace"))
        code = match.group(1) if match else None
        time.sleep(0.05)
    assert code is not None, f"the receiver printed no code:\n{receiver_log.read_text(errors='replace')}"
    sender = topo.spawn(sender_ns, [sys.executable, "-m", "p2pd", "send", str(session), "--code", code,
                               "--fallback-dir", str(case), "--timeout", "60", *send_args],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=homes["a"],
                        env=_env(homes["a"], signal_port, sender_env or {}))
    try:
        sender_out, sender_err = sender.communicate(timeout=timeout)
        receiver.wait(timeout=max(5.0, timeout - (time.monotonic() - started)))
    except subprocess.TimeoutExpired:
        sender.kill()
        receiver.kill()
        sender_out, sender_err = b"", b"(timed out)"
        receiver.wait()
    seconds = time.monotonic() - started
    return Run(sender.returncode, receiver.returncode, sender_err.decode(errors="replace"),
               receiver_log.read_text(errors="replace"), sender_out.decode(errors="replace"), out_dir, seconds,
               {side: topo.counters(side) for side in ("a", "b")})
