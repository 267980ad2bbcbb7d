"""Paired devices: who this machine trusts, with the key pinned when they paired and the secret they share.

Kept in ``devices.json`` (mode 0600) in the daemon's folder, rewritten atomically. The running daemon notices
changes (``p2pd pair``, ``p2pd devices rename/remove`` from another process) by the file's modification time.

Each pair shares a 32-byte secret made during ``p2pd pair`` (from the PAKE session's exporter). It names the
pair's meeting room on the signaling server and is the password of the CPace run on every connection; the pinned
Ed25519 key is then proved with a signature bound to that run (see DEVICES.md).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from p2pd.daemon.identity import clean_name, device_id_of, fingerprint_of
from p2pd.errors import InvalidInputError, NotFoundError
from p2pd.support.atomic import atomic_write_bytes

DEVICES_FILE = "devices.json"
BOOK_VERSION = 1


@dataclass(frozen=True)
class Device:
    device_id: str
    name: str
    public_key: str  # base64 of the raw Ed25519 key pinned at pairing
    secret: str  # base64 of the pair secret
    paired_at: float

    @property
    def key_bytes(self) -> bytes:
        return base64.b64decode(self.public_key)

    @property
    def secret_bytes(self) -> bytes:
        return base64.b64decode(self.secret)

    @property
    def fingerprint(self) -> str:
        return fingerprint_of(self.key_bytes)

    @property
    def room(self) -> str:
        """The pair's meeting room on the signaling server (reveals nothing about the secret)."""
        return "pair-" + hashlib.sha256(b"p2pd-pair-room-v1" + self.secret_bytes).hexdigest()[:32]

    def public_view(self) -> dict[str, Any]:
        """What lists and the API show (never the secret)."""
        return {"id": self.device_id, "name": self.name, "fingerprint": self.fingerprint,
                "paired_at": self.paired_at}


class DeviceBook:
    """The paired devices in ``folder / devices.json``. Every change is written through at once."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / DEVICES_FILE
        self.devices: dict[str, Device] = {}
        self.mtime_ns = 0
        self.reload()

    def reload(self) -> bool:
        """Read the file again when it changed; returns whether it did."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            changed = bool(self.devices)
            self.devices, self.mtime_ns = {}, 0
            return changed
        if stat.st_mtime_ns == self.mtime_ns:
            return False
        self.devices = _parse(self.path)
        self.mtime_ns = stat.st_mtime_ns
        return True

    def get(self, ref: str) -> Device:
        """A device by id, id prefix (4+ characters) or exact name."""
        ref = ref.strip()
        if ref in self.devices:
            return self.devices[ref]
        by_name = [d for d in self.devices.values() if d.name == ref]
        by_prefix = [d for d in self.devices.values() if len(ref) >= 4 and d.device_id.startswith(ref.lower())]
        found = by_name or by_prefix
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise InvalidInputError(f"{ref!r} names {len(found)} devices; use the device id "
                                    f"({', '.join(d.device_id for d in found)})")
        known = ", ".join(f"{d.name} ({d.device_id})" for d in self.devices.values()) or "none paired yet"
        raise NotFoundError(f"no paired device {ref!r} (paired: {known}); pair one with `p2pd pair`")

    def add(self, *, public_key: bytes, name: str, secret: bytes) -> Device:
        device = Device(device_id=device_id_of(public_key), name=clean_name(name),
                        public_key=base64.b64encode(public_key).decode("ascii"),
                        secret=base64.b64encode(secret).decode("ascii"), paired_at=time.time())
        self.reload()
        self.devices[device.device_id] = device
        self._save()
        return device

    def rename(self, ref: str, name: str) -> Device:
        self.reload()
        device = replace(self.get(ref), name=clean_name(name))
        self.devices[device.device_id] = device
        self._save()
        return device

    def remove(self, ref: str) -> Device:
        self.reload()
        device = self.get(ref)
        del self.devices[device.device_id]
        self._save()
        return device

    def _save(self) -> None:
        body = {"version": BOOK_VERSION, "devices": [asdict(d) for d in self.devices.values()]}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.path, json.dumps(body, indent=2).encode("utf-8"))
        os.chmod(self.path, 0o600)
        self.mtime_ns = self.path.stat().st_mtime_ns


def _parse(path: Path) -> dict[str, Device]:
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        if body.get("version") != BOOK_VERSION:
            raise ValueError(f"unknown version {body.get('version')!r}")
        devices = {}
        for entry in body["devices"]:
            device = Device(**{k: entry[k] for k in Device.__dataclass_fields__})
            if device_id_of(device.key_bytes) != device.device_id or len(device.secret_bytes) != 32:
                raise ValueError(f"entry {device.device_id!r} is inconsistent")
            devices[device.device_id] = device
        return devices
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidInputError(f"{path} is damaged ({exc}); fix or remove it and pair the devices again") \
            from None
