"""This machine's device identity: an Ed25519 key made on first use, kept 0600 in the daemon's folder.

The device id is the first 16 hex digits of SHA-256 over the raw public key; the fingerprint people compare is
the first 20 hex digits in groups of four. Both are derived from the key, so a device cannot keep its id and
change its key.
"""

from __future__ import annotations

import base64
import hashlib
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from p2pd.errors import InvalidInputError
from p2pd.support.atomic import atomic_write_bytes

KEY_FILE = "identity.key"
NAME_FILE = "device-name"


def device_id_of(public_key: bytes) -> str:
    return hashlib.sha256(public_key).hexdigest()[:16]


def fingerprint_of(public_key: bytes) -> str:
    digest = hashlib.sha256(public_key).hexdigest()[:20]
    return " ".join(digest[i:i + 4] for i in range(0, 20, 4))


def verify(public_key: bytes, signature: bytes, message: bytes) -> bool:
    """Whether ``signature`` is ``public_key``'s Ed25519 signature over ``message``."""
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


@dataclass(frozen=True)
class Identity:
    """A device's key pair and name."""

    private_key: Ed25519PrivateKey
    name: str

    @property
    def public_key(self) -> bytes:
        return self.private_key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

    @property
    def device_id(self) -> str:
        return device_id_of(self.public_key)

    @property
    def fingerprint(self) -> str:
        return fingerprint_of(self.public_key)

    def sign(self, message: bytes) -> bytes:
        return self.private_key.sign(message)

    def public_b64(self) -> str:
        return base64.b64encode(self.public_key).decode("ascii")

    def __repr__(self) -> str:
        return f"Identity(device_id={self.device_id!r}, name={self.name!r})"


def load_identity(folder: Path, *, create: bool = True) -> Identity:
    """The identity kept in ``folder`` (made there on first use when ``create``)."""
    key_path = folder / KEY_FILE
    name_path = folder / NAME_FILE
    try:
        raw = key_path.read_bytes()
    except FileNotFoundError:
        if not create:
            raise
        folder.mkdir(parents=True, exist_ok=True)
        key = Ed25519PrivateKey.generate()
        raw = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                serialization.NoEncryption())
        atomic_write_bytes(key_path, raw, overwrite=False)
        os.chmod(key_path, 0o600)
        raw = key_path.read_bytes()  # another process may have won the race: use what is on disk
    if len(raw) != 32:
        raise InvalidInputError(f"{key_path} is not an Ed25519 key (expected 32 raw bytes, found {len(raw)}); "
                                "move it away to make a new identity — paired devices must then pair again")
    try:
        name = name_path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        name = ""
    return Identity(Ed25519PrivateKey.from_private_bytes(raw), name or default_name())


def set_device_name(folder: Path, name: str) -> None:
    name = clean_name(name)
    atomic_write_bytes(folder / NAME_FILE, (name + "\n").encode("utf-8"))


def default_name() -> str:
    host = socket.gethostname()
    return clean_name(host) if host.strip() else "device"


def clean_name(name: str) -> str:
    """A device name as shown in lists: printable, one line, at most 64 characters."""
    text = "".join(ch for ch in str(name) if ch.isprintable()).strip()
    if not text:
        raise InvalidInputError("a device name cannot be empty")
    return text[:64]
