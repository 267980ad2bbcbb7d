"""CPace on X25519 with SHA-512 (``CPACE-X25519-SHA512``, draft-irtf-cfrg-cpace), sans-I/O.

A balanced PAKE: both parties know a low-entropy password ``PRS``; each sends one 32-byte share and
both derive the same 64-byte intermediate session key (ISK) only if their passwords (and the channel
identifier ``CI`` and session id ``sid``) match. An active attacker gets one password guess per run.

The construction follows the draft's algorithm text:

* ``generator_string = lv_cat(DSI, PRS, zero_bytes(len_zpad), CI, sid)`` with ``DSI = b"CPace255"`` and
  ``len_zpad = max(0, 128 - 1 - len(prepend_len(PRS)) - len(prepend_len(DSI)))`` (128 = SHA-512's block),
* ``g = elligator2(decodeUCoordinate(SHA-512(generator_string)[:32]))`` on Curve25519 (RFC 9380's map with
  ``Z = 2``; only the u-coordinate is used),
* ``Y = X25519(y, g)`` for a random 32-byte scalar ``y`` (X25519 clamps it),
* ``K = X25519(y, Y_peer)``; an all-zero ``K`` (a low-order share) aborts,
* ``ISK = SHA-512(lv_cat(b"CPace255_ISK", sid, K) || transcript)`` with
  ``transcript_ir = lv_cat(Ya, ADa) || lv_cat(Yb, ADb)`` (initiator/responder) or
  ``transcript_oc = b"oc" || max(lv_cat(Ya, ADa), lv_cat(Yb, ADb)) || min(…)`` (symmetric).

X25519 scalar multiplication is done by ``cryptography``; only the Elligator2 map uses Python integers
(not constant-time: fine for one-shot pairing codes, see PAIRING.md).
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Literal

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

DSI = b"CPace255"
DSI_ISK = DSI + b"_ISK"
HASH_BLOCK_BYTES = 128  # SHA-512 input block size, H.s_in_bytes in the draft
FIELD_BYTES = 32
ISK_BYTES = 64

P = 2**255 - 19
MONTGOMERY_A = 486662
ELLIGATOR_Z = 2

Role = Literal["initiator", "responder", "symmetric"]


class CPaceError(ValueError):
    """The peer's share is invalid (wrong length or a low-order point): abort the run."""


def prepend_len(data: bytes) -> bytes:
    """``data`` prefixed with its length as an unsigned LEB128 integer."""
    length = len(data)
    out = bytearray()
    while True:
        byte = length & 0x7F
        length >>= 7
        if length:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out) + data


def lv_cat(*parts: bytes) -> bytes:
    """Length-value concatenation: ``prepend_len(p1) || prepend_len(p2) || …``."""
    return b"".join(prepend_len(part) for part in parts)


def o_cat(first: bytes, second: bytes) -> bytes:
    """Ordered concatenation: ``b"oc" || larger || smaller`` (lexicographic byte order)."""
    if first > second:
        return b"oc" + first + second
    return b"oc" + second + first


def generator_string(prs: bytes, ci: bytes, sid: bytes, *, dsi: bytes = DSI,
                     s_in_bytes: int = HASH_BLOCK_BYTES) -> bytes:
    """The string hashed into the generator; zero padding puts ``PRS`` in the first hash block."""
    len_zpad = max(0, s_in_bytes - 1 - len(prepend_len(prs)) - len(prepend_len(dsi)))
    return lv_cat(dsi, prs, bytes(len_zpad), ci, sid)


def decode_u_coordinate(data: bytes) -> int:
    """RFC 7748 ``decodeUCoordinate`` for Curve25519: little-endian, top bit masked, reduced mod p."""
    if len(data) != FIELD_BYTES:
        raise ValueError("a u-coordinate is 32 bytes")
    value = int.from_bytes(data, "little") & ((1 << 255) - 1)
    return value % P


def encode_u_coordinate(u: int) -> bytes:
    return (u % P).to_bytes(FIELD_BYTES, "little")


def _is_square(x: int) -> bool:
    return x % P == 0 or pow(x, (P - 1) // 2, P) == 1


def elligator2_curve25519(r: int) -> int:
    """RFC 9380 ``map_to_curve_elligator2`` for Curve25519 (``Z = 2``), returning the u-coordinate.

    ``x1 = -A / (1 + Z·r²)`` (``1 + 2r²`` is never 0 mod p since -1/2 is not a square); if ``x1³ + A·x1² + x1``
    is a square the result is ``x1``, else ``x2 = -x1 - A``.
    """
    r %= P
    denominator = (1 + ELLIGATOR_Z * r * r) % P
    x1 = (-MONTGOMERY_A * pow(denominator, P - 2, P)) % P
    if x1 == 0:  # unreachable for Curve25519, kept for the RFC's inv0 convention
        x1 = (-MONTGOMERY_A) % P
    gx1 = (x1 * x1 * x1 + MONTGOMERY_A * x1 * x1 + x1) % P
    if _is_square(gx1):
        return x1
    return (-x1 - MONTGOMERY_A) % P


def calculate_generator(prs: bytes, ci: bytes, sid: bytes) -> bytes:
    """The password-dependent generator ``g`` (32-byte u-coordinate)."""
    digest = hashlib.sha512(generator_string(prs, ci, sid)).digest()
    return encode_u_coordinate(elligator2_curve25519(decode_u_coordinate(digest[:FIELD_BYTES])))


def sample_scalar() -> bytes:
    return secrets.token_bytes(FIELD_BYTES)


def scalar_mult(scalar: bytes, point: bytes) -> bytes:
    """X25519(scalar, point); raises :class:`CPaceError` when the result is the neutral element (all zero)."""
    if len(scalar) != FIELD_BYTES or len(point) != FIELD_BYTES:
        raise CPaceError("CPace scalars and shares are 32 bytes")
    try:
        return X25519PrivateKey.from_private_bytes(scalar).exchange(X25519PublicKey.from_public_bytes(point))
    except ValueError as exc:  # cryptography refuses an all-zero shared secret
        raise CPaceError("invalid CPace share (low-order point)") from exc


def transcript_ir(ya: bytes, ada: bytes, yb: bytes, adb: bytes) -> bytes:
    return lv_cat(ya, ada) + lv_cat(yb, adb)


def transcript_oc(ya: bytes, ada: bytes, yb: bytes, adb: bytes) -> bytes:
    return o_cat(lv_cat(ya, ada), lv_cat(yb, adb))


def derive_isk(sid: bytes, k: bytes, transcript: bytes) -> bytes:
    return hashlib.sha512(lv_cat(DSI_ISK, sid, k) + transcript).digest()


class CPace:
    """One party of a CPace run.

    ``share`` is the message to send (``Ya`` or ``Yb``) together with ``ad``; ``finish(peer_share, peer_ad)``
    returns the ISK (64 bytes) or raises :class:`CPaceError`. A party finishes at most once.
    ``scalar`` is for test vectors only; leave it ``None`` to draw a fresh random scalar.
    """

    def __init__(self, prs: bytes, *, role: Role, ci: bytes = b"", sid: bytes = b"", ad: bytes = b"",
                 scalar: bytes | None = None) -> None:
        if role not in ("initiator", "responder", "symmetric"):
            raise ValueError(f"unknown CPace role {role!r}")
        self.role: Role = role
        self.sid = sid
        self.ad = ad
        self._scalar: bytes | None = sample_scalar() if scalar is None else scalar
        self.generator = calculate_generator(prs, ci, sid)
        self.share = scalar_mult(self._scalar, self.generator)

    def finish(self, peer_share: bytes, peer_ad: bytes = b"") -> bytes:
        scalar = self._scalar
        if scalar is None:
            raise RuntimeError("this CPace party has already finished")
        self._scalar = None
        if len(peer_share) != FIELD_BYTES:
            raise CPaceError("a CPace share is 32 bytes")
        k = scalar_mult(scalar, peer_share)
        if self.role == "initiator":
            transcript = transcript_ir(self.share, self.ad, peer_share, peer_ad)
        elif self.role == "responder":
            transcript = transcript_ir(peer_share, peer_ad, self.share, self.ad)
        else:
            transcript = transcript_oc(self.share, self.ad, peer_share, peer_ad)
        return derive_isk(self.sid, k, transcript)
