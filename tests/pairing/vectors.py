"""Behaviour vectors of the pairing machine (``p2pd/pairing/machine.py``'s ``Pairing``), shared with the browser.

Each trace wires named machines (code, role, room and fixed randomness: the sender's ``sid`` and each side's
CPace scalar, so every message is deterministic) and lists steps: an input to one machine and what must come
out. Inputs are ``start``, ``receive`` (a relayed ``data`` object) and ``seal`` (an object); outputs are the
messages to send, the opened objects, ``paired``, the failure's ``cause`` (``p2pd.errors.Cause`` values, or
null), the state after the step and the verification string (null until paired); ``seal`` gives the sealed
message; ``raises`` marks a programming error (start twice, seal before pairing).

Written to ``tests/vectors/pairing_machine.json``; regenerate (only when the behaviour is meant to change) with
``python -m tests.pairing.vectors``. The generator asserts the cause each step is meant to have, so a change
of behaviour stops it rather than being written down silently.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from p2pd.pairing.codes import parse_code
from p2pd.pairing.machine import Pairing

PATH = Path(__file__).resolve().parents[1] / "vectors" / "pairing_machine.json"
CODE = "7-guitar-meadow"
OFFER = {"type": "offer", "sdp": "v=0\r\na=fingerprint:sha-256 AB:CD\r\n"}
ANSWER = {"type": "answer", "sdp": "v=0\r\na=fingerprint:sha-256 EF:01\r\n"}
CANDIDATE = {"type": "ice", "candidate": "candidate:1 1 udp 2130706431 127.0.0.1 5000 typ host", "note": "é ü 日本 😀",
             "n": [0, -1, 12345678901234], "ok": True, "none": None}
LOW_ORDER_SHARE = "A" * 43 + "="  # u = 0
SID = "A" * 22 + "=="


def fixed(label: str, n: int = 32) -> bytes:
    return hashlib.sha256(f"p2pd pairing vector: {label}".encode()).digest()[:n]


def flip(text: str) -> str:
    """One base64 character changed (a modified field that still decodes)."""
    return ("B" if text[0] == "A" else "A") + text[1:]


class Trace:
    """Runs the Python machines and records each step with what came out."""

    def __init__(self, name: str, **machines: dict[str, Any]) -> None:
        self.name = name
        self.specs: dict[str, dict[str, Any]] = {}
        self.machines: dict[str, Pairing] = {}
        self.steps: list[dict[str, Any]] = []
        for key, spec in machines.items():
            role = spec["role"]
            full = {"code": spec.get("code", CODE), "role": role, "room": spec.get("room", "7"),
                    "sid": fixed(f"{name} {key} sid", 16).hex() if role == "sender" else None,
                    "scalar": fixed(f"{name} {key} scalar").hex()}
            self.specs[key] = full
            self.machines[key] = Pairing(parse_code(full["code"]), role, room=full["room"],
                                         sid=bytes.fromhex(full["sid"]) if full["sid"] else None,
                                         scalar=bytes.fromhex(full["scalar"]))

    def _record(self, key: str, op: dict[str, Any], output: dict[str, Any]) -> None:
        self.steps.append({"machine": key, "input": op, "output": output})

    def start(self, key: str) -> list[dict[str, Any]]:
        machine = self.machines[key]
        sent = machine.start()
        self._record(key, {"op": "start"}, {"send": sent, "state": str(machine.state)})
        return sent

    def receive(self, key: str, data: Any, *, cause: str | None = None, paired: bool = False) -> list[dict[str, Any]]:
        machine = self.machines[key]
        step = machine.receive(data)
        got = step.error.cause.value if step.error is not None else None
        assert got == cause, f"{self.name}: {key} got {got}, meant {cause} ({step.error})"
        assert step.paired == paired, f"{self.name}: {key} paired={step.paired}"
        self._record(key, {"op": "receive", "data": data},
                     {"send": step.send, "delivered": step.delivered, "paired": step.paired, "error": got,
                      "state": str(machine.state), "verification": machine.verification})
        return step.send

    def seal(self, key: str, obj: Any) -> dict[str, Any]:
        sealed = self.machines[key].seal(obj)
        self._record(key, {"op": "seal", "obj": obj}, {"sealed": sealed})
        return sealed

    def raises(self, key: str, op: dict[str, Any]) -> None:
        machine = self.machines[key]
        try:
            if op["op"] == "start":
                machine.start()
            else:
                machine.seal(op["obj"])
        except RuntimeError:
            self._record(key, op, {"raises": True})
            return
        raise AssertionError(f"{self.name}: {op} did not raise")

    def pake(self, sender: str = "sender", receiver: str = "receiver") -> tuple[list[dict[str, Any]], ...]:
        """The three PAKE messages between two machines that share a code (all expected to succeed)."""
        pake1 = self.start(sender)
        pake2 = self.receive(receiver, pake1[0])
        confirm = self.receive(sender, pake2[0], paired=True)
        self.receive(receiver, confirm[0], paired=True)
        return pake1, pake2, confirm

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "machines": self.specs, "steps": self.steps}


def traces() -> list[Trace]:
    out: list[Trace] = []

    t = Trace("matching codes pair and exchange sealed messages both ways", sender={"role": "sender"},
              receiver={"role": "receiver", "code": "7 Guitar  MEADOW"})
    t.raises("receiver", {"op": "start"})
    t.raises("sender", {"op": "seal", "obj": OFFER})
    t.pake()
    t.raises("sender", {"op": "start"})
    t.receive("receiver", t.seal("sender", OFFER))
    t.receive("sender", t.seal("receiver", ANSWER))
    t.receive("receiver", t.seal("sender", CANDIDATE))
    t.receive("receiver", t.seal("sender", [1, "two", None]))
    out.append(t)

    for name, receiver in [("a wrong code fails on both sides, the sender still confirms",
                             {"role": "receiver", "code": "7-guitar-meadows"}),
                            ("the room is part of the key", {"role": "receiver", "room": "8"})]:
        t = Trace(name, sender={"role": "sender"}, receiver=receiver)
        pake1 = t.start("sender")
        confirm = t.receive("sender", t.receive("receiver", pake1[0])[0], cause="wrong_code")
        t.receive("receiver", confirm[0], cause="wrong_code")
        t.receive("receiver", confirm[0], cause="wrong_code")  # a failed machine repeats its failure
        t.raises("sender", {"op": "seal", "obj": OFFER})
        out.append(t)

    for field in ("share", "sid"):
        t = Trace(f"a modified {field} in the first message looks like a wrong code", sender={"role": "sender"},
                  receiver={"role": "receiver"})
        pake1 = t.start("sender")[0]
        confirm = t.receive("sender", t.receive("receiver", {**pake1, field: flip(pake1[field])})[0],
                            cause="wrong_code")
        t.receive("receiver", confirm[0], cause="wrong_code")
        out.append(t)

    t = Trace("a modified confirmation fails as a wrong code", sender={"role": "sender"}, receiver={"role": "receiver"})
    pake1 = t.start("sender")
    confirm = t.receive("sender", t.receive("receiver", pake1[0])[0], paired=True)[0]
    t.receive("receiver", {**confirm, "confirm": flip(confirm["confirm"])}, cause="wrong_code")
    out.append(t)

    t = Trace("a modified share in the answer fails the sender as a wrong code and it still confirms",
              sender={"role": "sender"}, receiver={"role": "receiver"})
    pake2 = t.receive("receiver", t.start("sender")[0])[0]
    confirm = t.receive("sender", {**pake2, "share": flip(pake2["share"])}, cause="wrong_code")
    t.receive("receiver", confirm[0], cause="wrong_code")
    out.append(t)

    t = Trace("both peers as sender, or both as receiver, is a role clash", a={"role": "sender"}, b={"role": "sender"},
              c={"role": "receiver"}, d={"role": "receiver"})
    pake_b = t.start("b")
    t.receive("a", pake_b[0], cause="role_clash")  # idle sender
    t.raises("a", {"op": "start"})  # a failed machine does not start
    pake_c = t.receive("c", pake_b[0])  # c answers b, as a receiver does
    t.receive("d", pake_c[0], cause="role_clash")
    out.append(t)

    t = Trace("a sender in waiting-share refuses another sender's share as a role clash", a={"role": "sender"},
              b={"role": "sender"})
    t.start("a")
    t.receive("a", t.start("b")[0], cause="role_clash")
    out.append(t)

    t = Trace("sealed messages are opened once, in order, in their direction only", sender={"role": "sender"},
              receiver={"role": "receiver"})
    t.pake()
    first = t.seal("sender", OFFER)
    second = t.seal("sender", CANDIDATE)
    t.receive("sender", first, cause="tampered")  # reflected back to its sealer
    t.receive("receiver", first)
    t.receive("receiver", first, cause="tampered")  # replayed
    t.receive("receiver", second, cause="tampered")  # the failure is final
    out.append(t)

    for name, change in [("a sealed message out of order is tampering", lambda m: {**m, "seq": 1}),
                         ("a sealed message with a changed box is tampering", lambda m: {**m, "box": flip(m["box"])}),
                         ("a sealed message whose seq is text is tampering", lambda m: {**m, "seq": "0"}),
                         ("a sealed message whose box is not base64 is tampering", lambda m: {**m, "box": "*"})]:
        t = Trace(name, sender={"role": "sender"}, receiver={"role": "receiver"})
        t.pake()
        t.receive("receiver", change(t.seal("sender", OFFER)), cause="tampered")
        out.append(t)

    t = Trace("a sealed message before the confirmation is refused as tampering", sender={"role": "sender"},
              receiver={"role": "receiver"})
    confirm = t.receive("sender", t.receive("receiver", t.start("sender")[0])[0], paired=True)
    t.receive("receiver", t.seal("sender", OFFER), cause="tampered")  # the server dropped the confirm
    t.receive("receiver", confirm[0], cause="tampered")
    out.append(t)

    t = Trace("a confirmation sent to the sender is out of place", sender={"role": "sender"})
    t.start("sender")
    t.receive("sender", {"kind": "confirm", "v": 1, "confirm": "AAAA"}, cause="tampered")
    out.append(t)

    bad_first_messages: list[tuple[Any, str]] = [
        (None, "tampered"), ("pake", "tampered"), ([1, 2], "tampered"), ({}, "tampered"),
        ({"kind": "confirm", "v": 1, "confirm": "AAAA"}, "tampered"),
        ({"kind": "sealed", "seq": 0, "box": "AAAA"}, "tampered"),
        ({"kind": "pake", "v": 2, "role": "sender", "sid": SID, "share": LOW_ORDER_SHARE}, "protocol"),
        ({"kind": "pake", "v": True, "role": "sender", "sid": SID, "share": LOW_ORDER_SHARE}, "protocol"),
        ({"kind": "pake", "v": "1", "role": "sender", "sid": SID, "share": LOW_ORDER_SHARE}, "protocol"),
        ({"kind": "pake", "role": "sender", "sid": SID, "share": LOW_ORDER_SHARE}, "protocol"),
        ({"kind": "pake", "v": 1, "role": "sender", "sid": "AAAA", "share": LOW_ORDER_SHARE}, "tampered"),
        ({"kind": "pake", "v": 1, "role": "sender", "sid": SID, "share": 12}, "tampered"),
        ({"kind": "pake", "v": 1, "role": "sender", "sid": SID, "share": "AAAA"}, "tampered"),
        ({"kind": "pake", "v": 1, "role": "sender", "sid": SID, "share": "A" * 44}, "tampered"),
        ({"kind": "pake", "v": 1, "role": "sender", "sid": SID, "share": "A" * 43 + "=="}, "tampered"),
        ({"kind": "pake", "v": 1, "role": "sender", "sid": SID, "share": LOW_ORDER_SHARE}, "tampered"),
        ({"kind": "pake", "v": 1, "role": "umpire", "sid": SID, "share": LOW_ORDER_SHARE}, "tampered"),
        ({"kind": "pake", "v": 1, "role": "receiver", "share": LOW_ORDER_SHARE, "confirm": "AAAA"}, "role_clash"),
    ]
    t = Trace("malformed or out-of-place first messages fail the receiver, and it stays failed",
              **{f"r{i}": {"role": "receiver"} for i in range(len(bad_first_messages))})
    for i, (data, cause) in enumerate(bad_first_messages):
        t.receive(f"r{i}", data, cause=cause)
        t.receive(f"r{i}", data, cause=cause)
    out.append(t)
    return out


def build() -> dict[str, Any]:
    return {
        "description": "Traces of p2pd's pairing machine (PAIRING.md): named machines with fixed randomness, and "
                       "steps {machine, input, output}. See tests/pairing/vectors.py for the format.",
        "provenance": "Generated by tests/pairing/vectors.py from p2pd/pairing/machine.py; the CPace and sealing "
                      "underneath are pinned by cpace_x25519.json. Checked by tests/pairing/test_vectors.py and "
                      "web/tests/pairing.test.mjs.",
        "traces": [trace.as_json() for trace in traces()],
    }


def render() -> str:
    return json.dumps(build(), indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    PATH.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {PATH}\n")
