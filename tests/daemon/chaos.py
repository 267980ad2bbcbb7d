"""The seeded kill/restart driver: real processes — one ``p2pd-signal`` (``python -m signaling``) and two
``p2pd serve`` daemons paired through it — while a randomized plan sends conversations (``send --to`` and
``POST /send``) and makes handoffs from ``desk`` to ``laptop``, and at random moments SIGKILLs or SIGTERMs and
restarts the sending daemon, the receiving daemon or the signaling server, or cancels a transfer or a handoff.

Afterwards (within a bounded wait, everything back up) :func:`check` asserts the properties of issue 16:

- both sides end in the same final state for every transfer and every handoff;
- nothing is imported after a cancel (no inbox entry for a cancelled send or handoff);
- nothing is imported twice (at most one inbox entry per conversation);
- every transfer and handoff that was not cancelled completes.

One run is :func:`run_once` (seeded: ``random.Random(seed)`` makes the plan and the documents; a failure says the
seed). The pairing is made once (:func:`make_template`) and copied for each run. ``tests/daemon/test_chaos.py``
runs a few seeds in CI; ``tests/bench/chaos.py`` runs many and prints a table.
"""

from __future__ import annotations

import base64
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from p2pd.agents.sources import load_file
from p2pd.conversation.document_io import write_document
from p2pd.conversation.model import Message, Part
from tests.daemon.conftest import ROOT, Daemon, corpus_session, pair

_LISTENING = re.compile(r"listening on (ws://\S+)")
# seconds everything may take to settle after the last step (a cut connection is noticed within 30 s)
SETTLE = float(os.environ.get("P2PD_CHAOS_SETTLE") or 150.0)
FINAL_TRANSFER = ("done", "failed", "cancelled")
FINAL_HANDOFF = ("completed", "failed", "cancelled")


class SignalServer:
    """A real signaling server that can be killed and restarted on the same port."""

    def __init__(self) -> None:
        self.port = 0
        self.process: subprocess.Popen[str] | None = None
        self.output: list[str] = []

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> None:
        found: list[str] = []
        deadline = time.monotonic() + timeout
        while not found and time.monotonic() < deadline:  # the port may take a moment to be free again
            process = subprocess.Popen([sys.executable, "-m", "signaling", "--port", str(self.port)], cwd=ROOT,
                                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

            def read(p: subprocess.Popen[str] = process) -> None:
                assert p.stdout is not None
                for line in p.stdout:
                    self.output.append(line)
                    m = _LISTENING.search(line)
                    if m and not found:
                        found.append(m.group(1))

            threading.Thread(target=read, daemon=True).start()
            while not found and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if found:
                self.process = process
                self.port = int(found[0].rstrip("/").rsplit(":", 1)[1])
            else:
                process.kill()
                process.wait(10)
                time.sleep(0.2)
        if not found:
            raise AssertionError("the signaling server did not start:\n" + "".join(self.output[-20:]))

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None


def make_template(root: Path) -> Path:
    """Pair ``desk`` and ``laptop`` once (their homes under ``root/a`` and ``root/b``); runs copy this."""
    server = SignalServer()
    server.start()
    try:
        a = Daemon(root / "a", signal_url=server.url)
        b = Daemon(root / "b", signal_url=server.url)
        for d, name in ((a, "desk"), (b, "laptop")):
            assert d.p2pd("devices", "name", name).returncode == 0
        pair(a, b)
    finally:
        server.stop()
    return root


@dataclass
class Sent:
    kind: str  # "send" | "handoff"
    id: str  # transfer id or handoff id at the desk
    sha256: str
    cancelled: bool = False  # a cancel was accepted for it (the API answered with a cancelled row)
    asked: bool = False  # a cancel was asked and the receiver had not answered yet (the API said cancelling)


@dataclass
class Outcome:
    seed: int
    steps: list[str] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    settle_seconds: float = 0.0
    kills: int = 0
    cancels: int = 0

    @property
    def ok(self) -> bool:
        return not self.violations

    def describe(self) -> str:
        return (f"seed {self.seed}: " + "; ".join(self.steps) + "\n  " + "\n  ".join(self.violations or ["ok"]))


class World:
    """One run's processes: the signaling server and both daemons, from a copy of the paired template."""

    def __init__(self, template: Path, root: Path, rng: random.Random) -> None:
        shutil.copytree(template, root)
        self.root = root
        self.rng = rng
        self.signal = SignalServer()
        self.signal.start()
        self.desk = Daemon(root / "a", signal_url=self.signal.url, args=("-v",))
        self.laptop = Daemon(root / "b", signal_url=self.signal.url, args=("-v",))
        self.project = root / "project"  # the handoffs' folder (it exists on "both machines": one disk here)
        self.project.mkdir()
        self.docs = root / "docs"
        self.docs.mkdir()
        self.base_doc = load_file(corpus_session())
        self.cli: list[subprocess.Popen[str]] = []

    def __enter__(self) -> World:
        self.desk.start()
        self.laptop.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.cli:
            if p.poll() is None:
                p.kill()
            p.wait(10)
        self.desk.kill()
        self.laptop.kill()
        self.signal.stop(signal.SIGKILL)

    # ---- what the plan does ---------------------------------------------------------------------------------

    def document(self, n: int) -> Path:
        """A conversation of its own (its SHA-256 differs from every other), 0.2–6 MB that lz4 cannot shrink."""
        doc = self.base_doc.model_copy(deep=True)
        size = self.rng.choice((200_000, 1_000_000, 3_000_000, 6_000_000))
        filler = base64.b64encode(self.rng.randbytes(size * 3 // 4)).decode("ascii")
        doc.messages.append(Message(message_id=f"chaos-{n}", role="ROLE_USER", parts=[Part(text=filler)]))
        path = self.docs / f"doc-{n}.a2a.json"
        write_document(doc, path)
        return path

    def client(self, d: Daemon) -> httpx.Client:
        return d.client()

    def send(self, n: int, via_cli: bool) -> Sent:
        path = self.document(n)
        if via_cli:  # `p2pd send PATH --to laptop` follows the transfer; its first line is the transfer id
            p = subprocess.Popen([sys.executable, "-m", "p2pd", "send", str(path), "--to", "laptop", "--timeout",
                                  "5"], env=self.desk.env, cwd=self.desk.base, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            self.cli.append(p)
            assert p.stdout is not None
            tid = p.stdout.readline().strip()
            assert tid.startswith("tr_"), f"send --to printed {tid!r}: {p.stderr.read() if p.stderr else ''}"
            with self.client(self.desk) as c:
                row = c.get(f"/transfers/{tid}").json()
        else:
            with self.client(self.desk) as c:
                r = c.post("/send", json={"transcript_path": str(path), "to": {"device": "laptop"}})
                assert r.status_code == 202, r.text
                row = r.json()
        return Sent("send", row["id"], row["sha256"])

    def handoff(self, n: int) -> Sent:
        path = self.document(n)
        with self.client(self.desk) as c:
            r = c.post("/handoffs", json={"summary": f"chaos {n}", "goal": "survive", "target": "laptop",
                                          "transcript_path": str(path), "cwd": str(self.project)})
            assert r.status_code == 201, r.text
            row = r.json()
        return Sent("handoff", row["id"], row["source"]["sha256"])

    def cancel(self, item: Sent) -> bool:
        what = "transfers" if item.kind == "send" else "handoffs"
        with self.client(self.desk) as c:
            r = c.post(f"/{what}/{item.id}/cancel", json={"reason": "chaos cancel"})
        if r.status_code == 200 and r.json()["state"] == "cancelled":
            item.cancelled = True
            return True
        if r.status_code == 200 and r.json()["state"] == "cancelling":  # the receiver decides: cancelled or done
            item.asked = True
            return True
        # already final, or the receiver had it before the cancel reached it: the cancel came too late, and says so
        assert r.status_code == 409, r.text
        return False

    def process(self, who: str) -> Daemon | SignalServer:
        return {"desk": self.desk, "laptop": self.laptop, "signal": self.signal}[who]

    def kill(self, who: str, sig: int, down: float) -> None:
        target = self.process(who)
        if isinstance(target, Daemon):
            target.stop(sig)
        else:
            target.stop(sig)
        time.sleep(down)
        target.start()


def plan(rng: random.Random) -> Iterator[tuple[str, Any]]:
    """The seeded steps: ("send", via_cli) | ("handoff", None) | ("kill", (who, sig, down)) | ("cancel", pick)
    | ("pause", seconds); two sends or handoffs first, so a kill finds something under way."""
    yield ("send", rng.random() < 0.3)
    yield ("handoff", None) if rng.random() < 0.5 else ("send", rng.random() < 0.3)
    for _ in range(rng.randint(3, 6)):
        kind = rng.choices(("send", "handoff", "kill", "cancel", "pause"), weights=(3, 2, 4, 2, 1))[0]
        if kind == "send":
            yield ("send", rng.random() < 0.3)
        elif kind == "handoff":
            yield ("handoff", None)
        elif kind == "kill":
            who = rng.choice(("desk", "laptop", "signal"))
            sig = signal.SIGKILL if rng.random() < 0.6 else signal.SIGTERM
            yield ("kill", (who, sig, round(rng.uniform(0.0, 3.0), 2)))
        elif kind == "cancel":
            yield ("cancel", rng.random())
        else:
            yield ("pause", round(rng.uniform(0.2, 2.0), 2))
        if rng.random() < 0.7:
            yield ("pause", round(rng.uniform(0.0, 1.5), 2))


def run_once(seed: int, template: Path, root: Path, *, settle: float = SETTLE) -> Outcome:
    rng = random.Random(seed)
    out = Outcome(seed)
    with World(template, root, rng) as world:
        n = 0
        for kind, arg in plan(rng):
            if kind == "send":
                n += 1
                out.sent.append(world.send(n, via_cli=arg))
                out.steps.append(f"send {out.sent[-1].id}{' (cli)' if arg else ''}")
            elif kind == "handoff":
                n += 1
                out.sent.append(world.handoff(n))
                out.steps.append(f"handoff {out.sent[-1].id}")
            elif kind == "kill":
                who, sig, down = arg
                world.kill(who, sig, down)
                out.kills += 1
                out.steps.append(f"{signal.Signals(sig).name} {who} ({down} s down)")
            elif kind == "cancel":
                open_ = [s for s in out.sent if not s.cancelled and not s.asked]
                if open_:
                    item = open_[int(arg * len(open_))]
                    took = world.cancel(item)
                    out.cancels += took
                    out.steps.append(f"cancel {item.id}{'' if took else ' (too late)'}"
                                     f"{' (asked)' if item.asked else ''}")
            else:
                time.sleep(arg)
        started = time.monotonic()
        settled = settle_all(world, out, settle)
        out.settle_seconds = round(time.monotonic() - started, 1)
        if not settled:
            out.violations.append(f"not settled within {settle:g} s")
        check(world, out)
        if out.violations:
            out.violations.append("states:\n" + states(world, out))
            out.violations.append("desk log:\n" + "".join(world.desk.output[-40:]))
            out.violations.append("laptop log:\n" + "".join(world.laptop.output[-40:]))
    return out


def _views(world: World) -> dict[str, Any]:
    with world.client(world.desk) as c:
        transfers = c.get("/transfers", params={"limit": 1000}).json()
        handoffs = c.get("/handoffs", params={"limit": 1000}).json()
    with world.client(world.laptop) as c:
        incoming = c.get("/transfers", params={"limit": 1000}).json()
        inbox = c.get("/inbox", params={"limit": 1000}).json()
        offers = c.get("/offers", params={"limit": 1000}).json()
    return {"transfers": {t["id"]: t for t in transfers}, "handoffs": {h["id"]: h for h in handoffs},
            "incoming": incoming, "inbox": inbox, "offers": {o["id"]: o for o in offers}}


def states(world: World, out: Outcome) -> str:
    """Each item's rows at both sides, one line each."""
    v = _views(world)
    lines = []
    for item in out.sent:
        rows = [f"{r['id']} {r['state']} {r['cause']}" for r in v["incoming"] if r["sha256"] == item.sha256]
        got = [e["id"] for e in v["inbox"] if e["sha256"] == item.sha256]
        if item.kind == "send":
            t = v["transfers"][item.id]
            desk = f"{t['state']} {t['cause']} {t['error']}"
        else:
            h = v["handoffs"][item.id]
            o = v["offers"].get(item.id)
            desk = f"{h['state']} {h.get('reason')} | offer {o['state'] if o else None}"
            desk += " | " + ", ".join(f"{t['id']} {t['state']}" for t in v["transfers"].values()
                                      if t["handoff_id"] == item.id)
        mark = " (cancelled)" if item.cancelled else " (asked)" if item.asked else ""
        lines.append(f"    {item.id}{mark}: desk {desk}; laptop {rows} "
                     f"inbox {got}")
    return "\n".join(lines)


def settle_all(world: World, out: Outcome, timeout: float) -> bool:
    """Wait until nothing moves any more: every row at both sides final, or ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = _views(world)
        desk_open = [t for t in v["transfers"].values() if t["state"] not in FINAL_TRANSFER]
        desk_open += [h for h in v["handoffs"].values() if h["state"] not in FINAL_HANDOFF]
        laptop_open = [t for t in v["incoming"] if t["state"] not in FINAL_TRANSFER]
        laptop_open += [o for o in v["offers"].values() if o["state"] not in ("completed", "failed", "cancelled",
                                                                                  "taken")]
        if not desk_open and not laptop_open:
            time.sleep(1.0)  # a last report may be on its way
            return True
        time.sleep(0.5)
    return False


# the offered-handoff state at the laptop that matches each final state at the desk
_SAME_HANDOFF = {"completed": ("completed",), "failed": ("failed",), "cancelled": ("cancelled",)}


def check(world: World, out: Outcome) -> None:
    v = _views(world)
    bad = out.violations
    inbox_by_sha: dict[str, list[dict[str, Any]]] = {}
    for entry in v["inbox"]:
        inbox_by_sha.setdefault(entry["sha256"], []).append(entry)
    incoming_by_sha: dict[str, list[dict[str, Any]]] = {}
    for row in v["incoming"]:
        incoming_by_sha.setdefault(row["sha256"], []).append(row)
    for sha, entries in inbox_by_sha.items():
        if len(entries) > 1:
            bad.append(f"imported {len(entries)} times: {sha[:12]} ({[e['id'] for e in entries]})")
    for item in out.sent:
        got = inbox_by_sha.get(item.sha256, [])
        rows = incoming_by_sha.get(item.sha256, [])
        last = rows[0]["state"] if rows else None  # newest first
        if item.kind == "send":
            desk = v["transfers"][item.id]
            state = desk["state"]
            if item.cancelled and state != "cancelled":
                bad.append(f"{item.id}: cancelled (the API said so) but now {state}")
            if state == "cancelled":
                if got:
                    bad.append(f"{item.id}: cancelled at the desk, yet imported at the laptop")
                if last == "done":
                    bad.append(f"{item.id}: cancelled at the desk, done at the laptop")
            elif state == "done":
                if not got:
                    bad.append(f"{item.id}: done at the desk, nothing in the laptop's inbox")
                if last != "done":
                    bad.append(f"{item.id}: done at the desk, {last} at the laptop")
            else:  # (a cancel asked ends cancelled, or done when the receiver had it first: both checked above)
                bad.append(f"{item.id}: not cancelled, yet {state} at the desk ({desk['cause']}: {desk['error']}); "
                           f"laptop {last}")
        else:
            desk = v["handoffs"][item.id]
            state = desk["state"]
            offer = v["offers"].get(item.id)
            there = offer["state"] if offer is not None else None
            imported = [e for e in v["inbox"] if e.get("handoff_id") == item.id]
            if item.cancelled and state != "cancelled":
                bad.append(f"{item.id}: cancelled (the API said so) but now {state}")
            for t in v["transfers"].values():  # its conversation's transfers: the same end on both sides
                if t["handoff_id"] == item.id and rows and t["state"] != last and not (
                        t["state"] == "cancelled" and last is None):
                    bad.append(f"handoff {item.id}: its transfer {t['state']} at the desk, {last} at the laptop")
            if state == "cancelled":
                if [e for e in imported if e.get("imported")]:  # delivered before the cancel: kept, not imported
                    bad.append(f"handoff {item.id}: cancelled at the desk, yet imported at the laptop")
                if there not in (None, "cancelled"):
                    bad.append(f"handoff {item.id}: cancelled at the desk, {there} at the laptop")
            elif state == "completed":
                if len(imported) != 1:
                    bad.append(f"handoff {item.id}: completed at the desk, {len(imported)} inbox entries")
                if there != "completed":
                    bad.append(f"handoff {item.id}: completed at the desk, {there} at the laptop")
            else:
                bad.append(f"handoff {item.id}: not cancelled, yet {state} at the desk ({desk.get('reason')}); "
                           f"laptop {there}")


__all__ = ["Outcome", "SignalServer", "World", "check", "make_template", "plan", "run_once"]
