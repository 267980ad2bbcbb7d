"""A simulated internet in network namespaces, for the tests of tests/net/.

    <p>-pub   "the internet": bridge br0 203.0.113.1/24 — p2pd-signal and coturn run here; a default route to a
              gateway nobody is, so packets to addresses nobody has vanish (as on the internet)
    <p>-ra    home router A: wan 203.0.113.11, lan 10.1.0.1/24, NAT on wan
    <p>-ha    home A: 10.1.0.2 behind ra
    <p>-rb    home router B: wan 203.0.113.12, lan 10.2.0.1/24
    <p>-hb    home B: 10.2.0.2 behind rb
    <p>-hb2   a second machine in home B: 10.2.0.3 (same LAN as hb)

``<p>`` is unique per test run, so runs never collide; :meth:`Topology.down` deletes every namespace (the
processes started with :meth:`Topology.spawn` are killed first). Router modes (iptables):

* ``cone``      MASQUERADE (endpoint-independent mapping); inbound only for conntrack replies, and the router
                drops unsolicited packets to itself (as home routers do) — STUN hole punching works
* ``symmetric`` MASQUERADE --random-fully: a new public port per destination — hole punching fails, TURN needed
* ``noudp``     cone, and every forwarded UDP packet dropped: only TCP leaves (TURN over TCP)

Counters on each router's wan: UDP to/from the relay (203.0.113.1) and to/from the other home's router, TCP to the
public host (TURN, https and wss alike) and TCP from and to coturn's port (TURN over TCP).
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field

PUBLIC_IP = "203.0.113.1"
TURN_PORT = 3478
WAN = {"a": "203.0.113.11", "b": "203.0.113.12"}
LAN = {"a": "10.1.0", "b": "10.2.0"}
MODES = ("cone", "symmetric", "noudp")


def unavailable() -> str | None:
    """Why the namespace tests cannot run here, or ``None``."""
    for tool in ("ip", "iptables", "conntrack"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (.ci/setup installs it)"
    probe = f"p2probe{secrets.token_hex(3)}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot create network namespaces (`ip netns add` failed: {made.stderr.strip()}); needs root"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _run(argv: Sequence[str]) -> str:
    done = subprocess.run(list(argv), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip()}")
    return done.stdout


@dataclass
class Topology:
    prefix: str = field(default_factory=lambda: f"p2{secrets.token_hex(3)}")
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    made: list[str] = field(default_factory=list)

    def ns(self, name: str) -> str:
        return f"{self.prefix}-{name}"

    def x(self, name: str, *argv: str) -> str:
        return _run(["ip", "netns", "exec", self.ns(name), *argv])

    def up(self) -> None:
        for name in ("pub", "ra", "rb", "ha", "hb", "hb2"):
            _run(["ip", "netns", "add", self.ns(name)])
            self.made.append(name)
            self.x(name, "ip", "link", "set", "lo", "up")
        self.x("pub", "ip", "link", "add", "br0", "type", "bridge")
        self.x("pub", "ip", "addr", "add", f"{PUBLIC_IP}/24", "dev", "br0")
        self.x("pub", "ip", "link", "set", "br0", "up")
        self.x("pub", "ip", "neigh", "add", "203.0.113.254", "lladdr", "02:00:00:00:00:fe", "dev", "br0",
               "nud", "permanent")
        self.x("pub", "ip", "route", "add", "default", "via", "203.0.113.254", "dev", "br0")
        for side in ("a", "b"):
            router = f"r{side}"
            _run(["ip", "link", "add", "wan", "netns", self.ns(router), "type", "veth", "peer", "name", f"up{side}",
                  "netns", self.ns("pub")])
            self.x("pub", "ip", "link", "set", f"up{side}", "master", "br0", "up")
            self.x(router, "ip", "addr", "add", f"{WAN[side]}/24", "dev", "wan")
            self.x(router, "ip", "link", "set", "wan", "up")
            self.x(router, "ip", "route", "add", "default", "via", PUBLIC_IP)
            self.x(router, "sysctl", "-qw", "net.ipv4.ip_forward=1")
            self.x(router, "ip", "link", "add", "lan", "type", "bridge")
            self.x(router, "ip", "addr", "add", f"{LAN[side]}.1/24", "dev", "lan")
            self.x(router, "ip", "link", "set", "lan", "up")
            self.nat(side, "cone")
        for home, side, host in (("ha", "a", 2), ("hb", "b", 2), ("hb2", "b", 3)):
            _run(["ip", "link", "add", "eth0", "netns", self.ns(home), "type", "veth", "peer", "name", f"p-{home}",
                  "netns", self.ns(f"r{side}")])
            self.x(f"r{side}", "ip", "link", "set", f"p-{home}", "master", "lan", "up")
            self.x(home, "ip", "addr", "add", f"{LAN[side]}.{host}/24", "dev", "eth0")
            self.x(home, "ip", "link", "set", "eth0", "up")
            self.x(home, "ip", "route", "add", "default", "via", f"{LAN[side]}.1")

    def nat(self, side: str, mode: str) -> None:
        """Switch router ``side`` ("a"/"b") to ``mode`` and forget its old mappings and counters."""
        if mode not in MODES:
            raise ValueError(f"unknown NAT mode {mode!r}")
        r = f"r{side}"
        other = WAN["b" if side == "a" else "a"]
        ipt = ("iptables", "-w")
        self.x(r, *ipt, "-t", "nat", "-F")
        self.x(r, *ipt, "-F")
        self.x(r, *ipt, "-P", "FORWARD", "DROP")
        self.x(r, *ipt, "-P", "INPUT", "ACCEPT")
        for rule in (["-i", "lo"], ["-i", "lan"], ["-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED"]):
            self.x(r, *ipt, "-A", "INPUT", *rule, "-j", "ACCEPT")
        self.x(r, *ipt, "-P", "INPUT", "DROP")
        # accounting rules (no target: they only count), in this order — see counters()
        self.x(r, *ipt, "-A", "FORWARD", "-o", "wan", "-p", "udp", "-d", PUBLIC_IP)
        self.x(r, *ipt, "-A", "FORWARD", "-i", "wan", "-p", "udp", "-s", PUBLIC_IP)
        self.x(r, *ipt, "-A", "FORWARD", "-o", "wan", "-p", "udp", "-d", other)
        self.x(r, *ipt, "-A", "FORWARD", "-i", "wan", "-p", "udp", "-s", other)
        self.x(r, *ipt, "-A", "FORWARD", "-o", "wan", "-p", "tcp", "-d", PUBLIC_IP)
        self.x(r, *ipt, "-A", "FORWARD", "-i", "wan", "-p", "tcp", "-s", PUBLIC_IP, "--sport", str(TURN_PORT))
        self.x(r, *ipt, "-A", "FORWARD", "-o", "wan", "-p", "tcp", "-d", PUBLIC_IP, "--dport", str(TURN_PORT))
        if mode == "noudp":
            self.x(r, *ipt, "-A", "FORWARD", "-p", "udp", "-j", "DROP")
        self.x(r, *ipt, "-A", "FORWARD", "-i", "lan", "-o", "lan", "-j", "ACCEPT")
        self.x(r, *ipt, "-A", "FORWARD", "-i", "lan", "-o", "wan", "-j", "ACCEPT")
        self.x(r, *ipt, "-A", "FORWARD", "-i", "wan", "-o", "lan", "-m", "conntrack", "--ctstate",
               "ESTABLISHED,RELATED", "-j", "ACCEPT")
        masq = ["-t", "nat", "-A", "POSTROUTING", "-o", "wan", "-j", "MASQUERADE"]
        self.x(r, *ipt, *masq, *(["--random-fully"] if mode == "symmetric" else []))
        with contextlib.suppress(RuntimeError):
            self.x(r, "conntrack", "-F")

    def counters(self, side: str) -> dict[str, int]:
        """Bytes through router ``side``'s wan: UDP to/from the relay, to/from the other home; TCP to the relay
        (TURN and https/wss); TCP from and to coturn's port (TURN over TCP)."""
        out = self.x(f"r{side}", "iptables", "-w", "-L", "FORWARD", "-v", "-x", "-n").splitlines()[2:9]
        names = ("udp_to_relay", "udp_from_relay", "udp_to_peer", "udp_from_peer", "tcp_to_relay", "tcp_from_turn",
                 "tcp_to_turn")
        return {name: int(line.split()[1]) for name, line in zip(names, out, strict=True)}

    def spawn(self, name: str, argv: Sequence[str], **kwargs: object) -> subprocess.Popen[bytes]:
        proc: subprocess.Popen[bytes] = subprocess.Popen(["ip", "netns", "exec", self.ns(name), *argv],
                                                         **kwargs)  # type: ignore[call-overload]
        self.processes.append(proc)
        return proc

    def down(self) -> None:
        for proc in self.processes:
            if proc.poll() is None:
                proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        self.processes.clear()
        for name in self.made:
            subprocess.run(["ip", "netns", "del", self.ns(name)], capture_output=True)
        self.made.clear()
