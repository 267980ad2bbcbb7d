"""What two paired daemons say to each other over their sealed control channel (sans-I/O: models and checks).

Every message is a JSON object sealed with the session's keys (``p2pd.pairing.seal``), so the signaling server
relays them without being able to read or change them. This module only builds and checks them; the asyncio
side is ``network.py``. The exchange is described in DEVICES.md.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from p2pd.daemon.devices import Device
from p2pd.daemon.identity import Identity, device_id_of, fingerprint_of, verify
from p2pd.errors import DeviceKeyChangedError
from p2pd.pairing.cpace import lv_cat
from p2pd.pairing.seal import TamperedError, b64decode, b64encode

PROTOCOL_VERSION = 1
PROOF_LABEL = b"p2pd-device-proof-v1"
SECRET_LABEL = b"p2pd-pair-secret-v1"

Id = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")]
Text = Annotated[str, Field(max_length=4000)]


class _Msg(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DeviceProof(_Msg):
    """Sent first by both sides on every connection (and, with ``name``, when pairing)."""

    kind: Literal["device-proof"] = "device-proof"
    v: int = PROTOCOL_VERSION
    device: Id
    key: Annotated[str, Field(max_length=64)]
    sig: Annotated[str, Field(max_length=128)]
    name: Annotated[str, Field(max_length=64)] | None = None


class Rtc(_Msg):
    """An SDP offer or answer for the peer connection of transfer ``tid``."""

    kind: Literal["rtc"] = "rtc"
    tid: Id
    m: dict[str, Any]


class TransferStart(_Msg):
    """The sender is about to offer transfer ``tid`` (tagged with a handoff or a link)."""

    kind: Literal["transfer"] = "transfer"
    tid: Id
    handoff: Id | None = None
    link: Id | None = None


class TransferClosed(_Msg):
    """The sender ended transfer ``tid`` while it was not under way (cancelled, or failed for good): the
    receiver's row of an earlier, cut-off attempt ends the same way. Sent at once and again on each contact."""

    kind: Literal["transfer-closed"] = "transfer-closed"
    tid: Id
    state: Literal["cancelled", "failed"]
    reason: Text = ""


class TransferCancel(_Msg):
    """The sender asks the receiver to cancel transfer ``tid`` (feature ``cancel-ask``). The receiver decides
    from its store and answers with :class:`TransferOutcome`; asked again on every contact until answered."""

    kind: Literal["transfer-cancel"] = "transfer-cancel"
    tid: Id
    reason: Text = ""


class TransferOutcome(_Msg):
    """The receiver's answer to :class:`TransferCancel`: ``cancelled`` (it had not committed the transfer, and
    never will) or ``done`` (it had: the cancel came too late). Idempotent; answered again to every ask."""

    kind: Literal["transfer-outcome"] = "transfer-outcome"
    tid: Id
    state: Literal["cancelled", "done"]


# What this daemon speaks beyond device protocol 1, told first on every contact in an ``rtc`` message with the
# reserved ``tid`` FEATURES_TID: a daemon that does not know it drops an ``rtc`` for a transfer it does not run,
# so older peers keep working (they are never sent the new messages; DEVICES.md, "Features").
FEATURES_TID = "p2pd-features"
CANCEL_ASK = "cancel-ask"  # transfer-cancel / transfer-outcome: the receiver decides a cancel
FEATURES: tuple[str, ...] = (CANCEL_ASK,)


def features_message() -> Rtc:
    return Rtc(tid=FEATURES_TID, m={"features": list(FEATURES)})


def features_of(message: Rtc) -> frozenset[str]:
    """The features a peer announced (unknown ones are kept: only names this side knows are ever looked up)."""
    listed = message.m.get("features")
    if not isinstance(listed, list):
        return frozenset()
    return frozenset(f for f in listed[:64] if isinstance(f, str) and len(f) <= 64)


class Hello(_Msg):
    """Sent first on every contact: the name this device gives itself (a rename reaches its peers this way)."""

    kind: Literal["hello"] = "hello"
    name: Annotated[str, Field(min_length=1, max_length=64)]


class HandoffOffer(_Msg):
    kind: Literal["handoff-offer"] = "handoff-offer"
    hid: Id
    title: Text = ""
    summary: Text = ""
    messages: int = 0


class HandoffClaim(_Msg):
    kind: Literal["handoff-claim"] = "handoff-claim"
    hid: Id


class HandoffClaimResult(_Msg):
    kind: Literal["handoff-claim-result"] = "handoff-claim-result"
    hid: Id
    granted: bool
    reason: Text = ""


class HandoffState(_Msg):
    """The claimer reports its work on the handoff: started, then completed (``output``: the resume command when it
    was imported, ``result``: what the worker reports having done) or failed (``reason``)."""

    kind: Literal["handoff-state"] = "handoff-state"
    hid: Id
    # "cancelled" (feature cancel-ask only): the answer to the sender's cancel when the claimer had not imported it
    state: Literal["started", "completed", "failed", "cancelled"]
    output: Text = ""
    reason: Text = ""
    result: Text = ""


class HandoffClosed(_Msg):
    """The sender tells a device it offered a handoff to that it is no longer to be had: another device took it,
    or the sender cancelled it (then a claimer stops receiving it and imports nothing)."""

    kind: Literal["handoff-closed"] = "handoff-closed"
    hid: Id
    state: Literal["taken", "cancelled"]
    reason: Text = ""


class LinkMember(_Msg):
    id: Id
    name: Annotated[str, Field(max_length=64)] = ""


class LinkView(_Msg):
    id: Id
    name: Annotated[str, Field(max_length=64)] = ""
    created_by: Id
    members: Annotated[list[LinkMember], Field(max_length=64)]
    left: Annotated[list[Id], Field(max_length=64)] = []
    closed: bool = False
    closed_by: Id | None = None


class LinkUpdate(_Msg):
    kind: Literal["link"] = "link"
    link: LinkView


class SessionRef(_Msg):
    """An agent session on a device (a member of a session link)."""

    device: Id
    session: Id


class SessionLinkView(_Msg):
    """A link between agent sessions (seed 003; rules in :mod:`p2pd.daemon.session_links`)."""

    id: Id
    name: Annotated[str, Field(max_length=64)] = ""
    created_by: SessionRef
    members: Annotated[list[SessionRef], Field(min_length=2, max_length=16)]
    left: Annotated[list[SessionRef], Field(max_length=16)] = []
    closed: bool = False


class SessionLinkUpdate(_Msg):
    kind: Literal["session-link"] = "session-link"
    link: SessionLinkView


TURN_MAX = 12_000  # characters of a linked session's turn output that travel (the sender's cap)
TURN_WIRE_MAX = 4 * TURN_MAX  # what parses at all; between the two, the receiver refuses it (too_large) and says so


class SessionTurn(_Msg):
    """A linked session's last turn output, for the receiving device's members of the link (never the sender)."""

    kind: Literal["session-turn"] = "session-turn"
    id: Id
    link: Id
    sender: SessionRef
    text: Annotated[str, Field(max_length=TURN_WIRE_MAX)]


RefusalCause = Literal["too_large", "rate_limited", "not_found", "limit_reached"]  # p2pd.errors.Cause values


class SessionRefusal(_Msg):
    """The receiver refused session-link messages of this device (checked before anything was stored,
    :mod:`p2pd.daemon.session_guard`): ``cause`` says why, ``ref`` names the last one refused (a turn or a link
    id), ``link`` its link, ``refused`` how many were refused since the previous refusal was sent. Never answered."""

    kind: Literal["session-refused"] = "session-refused"
    cause: RefusalCause
    ref: Id | None = None
    link: Id | None = None
    refused: Annotated[int, Field(ge=0)] = 1


Control = Annotated[Hello | Rtc | TransferStart | TransferClosed | TransferCancel | TransferOutcome | HandoffOffer
                    | HandoffClaim | HandoffClaimResult | HandoffState | HandoffClosed | LinkUpdate | SessionLinkUpdate
                    | SessionTurn | SessionRefusal,
                    Field(discriminator="kind")]
_CONTROL: TypeAdapter[Control] = TypeAdapter(Control)


def parse_control(obj: Any) -> Control:
    """A control message from the peer, checked field by field; anything else is refused."""
    try:
        return _CONTROL.validate_python(obj)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "message"
        raise TamperedError(f"the paired device sent a malformed control message ({where}: {first['msg']})") \
            from None


# ---- proofs ----------------------------------------------------------------------------------------------


def _proof_message(exporter: bytes, role: str, device_id: str) -> bytes:
    return lv_cat(PROOF_LABEL, exporter, role.encode("ascii"), device_id.encode("ascii"))


def make_proof(identity: Identity, exporter: bytes, role: str, *, with_name: bool = False) -> dict[str, Any]:
    """Our proof for this session: a signature over the session's exporter, our role and our id."""
    sig = identity.sign(_proof_message(exporter, role, identity.device_id))
    proof = DeviceProof(device=identity.device_id, key=identity.public_b64(), sig=b64encode(sig),
                        name=identity.name if with_name else None)
    return proof.model_dump(exclude_none=True)


def read_proof(obj: Any, exporter: bytes, peer_role: str) -> tuple[bytes, DeviceProof]:
    """Check a proof's form and signature (for a first pairing, where no key is pinned yet)."""
    if not isinstance(obj, dict) or obj.get("kind") != "device-proof":
        raise TamperedError("the other device did not prove its identity")
    try:
        proof = DeviceProof.model_validate(obj)
    except ValidationError:
        raise TamperedError("the other device sent a malformed identity proof") from None
    if proof.v != PROTOCOL_VERSION:
        raise TamperedError(f"the other device speaks device protocol {proof.v}, this one {PROTOCOL_VERSION}; "
                            "update both")
    key = b64decode(proof.key, what="device key", max_len=64)
    sig = b64decode(proof.sig, what="device signature", max_len=128)
    if len(key) != 32 or device_id_of(key) != proof.device:
        raise TamperedError("the other device's id does not match its key")
    if not verify(key, sig, _proof_message(exporter, peer_role, proof.device)):
        raise TamperedError("the other device's identity proof has a bad signature")
    return key, proof


def check_pinned_proof(obj: Any, exporter: bytes, peer_role: str, device: Device) -> None:
    """Check a paired device's proof against the key pinned when it paired; a different key is refused."""
    try:
        key, _ = read_proof(obj, exporter, peer_role)
    except TamperedError as exc:
        raise DeviceKeyChangedError(
            f"device {device.name!r} ({device.device_id}) could not prove the key pinned when you paired "
            f"({exc}); refused") from None
    if not hmac.compare_digest(key, device.key_bytes):
        raise DeviceKeyChangedError(
            f"device {device.name!r} ({device.device_id}) presented a DIFFERENT KEY than the one pinned when you "
            f"paired (pinned {device.fingerprint}, presented {fingerprint_of(key)}): refused. If that machine was "
            f"reinstalled, run `p2pd devices remove {device.device_id}` and pair again; otherwise someone may be "
            "impersonating it")


def pair_secret(exporter: bytes) -> bytes:
    """The 32-byte secret two devices keep after pairing."""
    return hmac.new(exporter, SECRET_LABEL, hashlib.sha256).digest()
