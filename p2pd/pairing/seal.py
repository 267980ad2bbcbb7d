"""Keys derived from the CPace ISK: key confirmation, sealed (AEAD) signaling messages, and the SAS.

All keys come from ``HKDF-SHA256(ikm=ISK, salt=b"", info=lv_cat(b"p2pd-pairing-v1", room, label))``:

* ``confirm sender`` / ``confirm receiver``: ``tag = HMAC-SHA256(key, b"p2pd key confirmation")``;
* ``seal sender->receiver`` / ``seal receiver->sender``: AES-256-GCM keys, one per direction;
* ``sas``: the short authentication string both users may compare;
* ``exporter``: a secret unique to this session for protocols built on top (device proofs, pair secrets).

Sealed messages carry a sequence number; the nonce is ``4 zero bytes || seq (8 bytes, big-endian)`` and the AAD
``lv_cat(b"p2pd-seal-v1", room, direction, seq)``. The receiver accepts exactly the next sequence number, so a
replayed, dropped, reordered or reflected message fails as loudly as a modified one.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
from dataclasses import dataclass
from hashlib import sha256
from typing import Any, Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from p2pd.errors import Cause, ProtocolError, TransferFailedError
from p2pd.pairing.cpace import lv_cat

PROTOCOL_LABEL = b"p2pd-pairing-v1"
SEAL_LABEL = b"p2pd-seal-v1"
CONFIRM_MESSAGE = b"p2pd key confirmation"
TAG_BYTES = 32
MAX_SEQ = 2**63 - 1

Role = Literal["sender", "receiver"]
ROLES: tuple[Role, Role] = ("sender", "receiver")


class TamperedError(TransferFailedError):
    """A sealed message failed authentication, or came out of order, or a pairing message was malformed or
    out of place: someone (most likely the signaling server) changed the signaling."""

    cause = Cause.TAMPERED


def other_role(role: Role) -> Role:
    return "receiver" if role == "sender" else "sender"


def _hkdf(isk: bytes, room: str, label: str) -> bytes:
    info = lv_cat(PROTOCOL_LABEL, room.encode("utf-8"), label.encode("ascii"))
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(isk)


@dataclass(frozen=True, slots=True)
class SessionKeys:
    """Everything derived from one ISK for one room."""

    confirm: dict[Role, bytes]
    seal: dict[Role, bytes]  # keyed by the role that seals with it
    sas: bytes
    exporter: bytes = b""

    def __repr__(self) -> str:
        return "SessionKeys(<hidden>)"


def derive_keys(isk: bytes, room: str) -> SessionKeys:
    return SessionKeys(
        confirm={role: _hkdf(isk, room, f"confirm {role}") for role in ROLES},
        seal={role: _hkdf(isk, room, f"seal {role}->{other_role(role)}") for role in ROLES},
        sas=_hkdf(isk, room, "sas"),
        exporter=_hkdf(isk, room, "exporter"),
    )


def confirmation_tag(keys: SessionKeys, role: Role) -> bytes:
    """The tag ``role`` sends to prove it derived the same ISK."""
    return hmac.new(keys.confirm[role], CONFIRM_MESSAGE, sha256).digest()


def check_confirmation(keys: SessionKeys, peer_role: Role, tag: bytes) -> bool:
    return hmac.compare_digest(confirmation_tag(keys, peer_role), tag)


def verification_string(sas_key: bytes) -> str:
    """Six digits (``"042 917"``) both users can compare; equal on both sides only if the keys are equal."""
    number = int.from_bytes(sha256(b"p2pd-sas-v1" + sas_key).digest()[:8], "big") % 1_000_000
    text = f"{number:06d}"
    return f"{text[:3]} {text[3:]}"


def b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def b64decode(text: Any, *, what: str, max_len: int = 1 << 20) -> bytes:
    """Strict standard base64; raises :class:`TamperedError` naming ``what`` on anything else."""
    if not isinstance(text, str) or len(text) > max_len:
        raise TamperedError(f"malformed {what} from the peer")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        raise TamperedError(f"malformed {what} from the peer") from exc


def _nonce(seq: int) -> bytes:
    return bytes(4) + seq.to_bytes(8, "big")


def _aad(room: str, direction: str, seq: int) -> bytes:
    return lv_cat(SEAL_LABEL, room.encode("utf-8"), direction.encode("ascii"), seq.to_bytes(8, "big"))


class Sealer:
    """Seals JSON objects in one direction (``role`` → its peer), numbering them from 0."""

    def __init__(self, keys: SessionKeys, room: str, role: Role) -> None:
        self._aead = AESGCM(keys.seal[role])
        self._room = room
        self._direction = f"{role}->{other_role(role)}"
        self.seq = 0

    def seal(self, obj: Any) -> dict[str, Any]:
        if self.seq > MAX_SEQ:
            raise TransferFailedError("too many sealed messages in one session")
        plaintext = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        seq = self.seq
        self.seq += 1
        box = self._aead.encrypt(_nonce(seq), plaintext, _aad(self._room, self._direction, seq))
        return {"kind": "sealed", "seq": seq, "box": b64encode(box)}


class Opener:
    """Opens the peer's sealed messages, in order, exactly once each."""

    def __init__(self, keys: SessionKeys, room: str, own_role: Role) -> None:
        peer = other_role(own_role)
        self._aead = AESGCM(keys.seal[peer])
        self._room = room
        self._direction = f"{peer}->{own_role}"
        self.seq = 0

    def open(self, message: dict[str, Any]) -> Any:
        seq = message.get("seq")
        if type(seq) is not int or seq != self.seq:
            raise TamperedError(
                "a sealed message from the peer arrived out of order or twice (the signaling was tampered with)"
            )
        box = b64decode(message.get("box"), what="sealed message")
        try:
            plaintext = self._aead.decrypt(_nonce(seq), box, _aad(self._room, self._direction, seq))
        except InvalidTag as exc:
            raise TamperedError(
                "a sealed message from the peer failed its integrity check (the signaling was tampered with)"
            ) from exc
        self.seq += 1
        try:
            return json.loads(plaintext.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:  # authenticated but not JSON: a buggy peer
            raise ProtocolError("the peer sent a sealed message that is not JSON") from exc
