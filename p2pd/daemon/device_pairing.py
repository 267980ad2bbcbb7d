"""``p2pd pair``: pair this device with another once, with a code; afterwards they need none.

Both sides run the code's PAKE (as ``send``/``receive`` do), prove their Ed25519 keys with signatures bound to
that session, derive the pair secret from the session's exporter, store each other in ``devices.json`` and tell
each other they did. A wrong code or a tampered exchange stores nothing.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from p2pd.daemon.devices import Device, DeviceBook
from p2pd.daemon.identity import Identity
from p2pd.daemon.peer_protocol import make_proof, pair_secret, read_proof
from p2pd.errors import TransferFailedError
from p2pd.exchange.handover import UI
from p2pd.pairing.client import Rendezvous
from p2pd.pairing.seal import Role, other_role


@dataclass(frozen=True)
class PairResult:
    device: Device
    verification: str
    replaced: bool  # the device was paired before (same key): its secret is new now


async def pair_device(*, signal_url: str, code: str | None, identity: Identity, book: DeviceBook, ui: UI,
                      timeout: float = 300.0, connect_timeout: float = 10.0) -> PairResult:
    """Run one pairing. ``code=None`` makes a code for the other device to type."""
    role: Role = "sender" if code is None else "receiver"
    rv = await Rendezvous.open(signal_url, role=role, code=code, connect_timeout=connect_timeout)
    try:
        ui.code_ready(str(rv.code), peer_present=rv.peer is not None)
        verification = await rv.pair(timeout=timeout)
        ui.paired(verification)
        await rv.send_sealed(make_proof(identity, rv.exporter, role, with_name=True))
        key, proof = read_proof(await rv.recv_sealed(timeout=connect_timeout), rv.exporter, other_role(role))
        if proof.device == identity.device_id:
            raise TransferFailedError("this device cannot pair with itself (both sides use the same identity)")
        await rv.send_sealed({"kind": "pair-stored", "device": identity.device_id})
        done = await rv.recv_sealed(timeout=connect_timeout)
        if not isinstance(done, dict) or done.get("kind") != "pair-stored":
            raise TransferFailedError("the other device did not confirm the pairing; nothing was stored")
        book.reload()
        replaced = proof.device in book.devices
        device = await asyncio.to_thread(book.add, public_key=key, name=proof.name or proof.device,
                                         secret=pair_secret(rv.exporter))
        return PairResult(device=device, verification=verification, replaced=replaced)
    finally:
        await rv.close()
