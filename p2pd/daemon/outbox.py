"""The outbox: conversations packed as wire blobs, named by their payload's SHA-256, kept for resume.

Each blob has its offer description (title, platform, session, message count) beside it, so a transfer sent again
after a restart offers the same thing without parsing the conversation again.
"""

from __future__ import annotations

import os
from pathlib import Path

from p2pd.blob import container as blob
from p2pd.conversation.document_io import dumps
from p2pd.conversation.model import ConversationDocument
from p2pd.support.atomic import atomic_write_bytes
from p2pd.transfer.frames import OfferInfo


def pack_outbox(doc: ConversationDocument, outbox: Path) -> tuple[Path, OfferInfo, str]:
    """Write ``doc`` as a blob named by its payload's SHA-256 in ``outbox`` (kept for resume), with its offer
    description beside it. Returns (blob path, offer info, sha256 hex). Call in a thread."""
    data = blob.encode(dumps(doc, pretty=False))
    sha = blob.BlobHeader.unpack(data).sha256.hex()
    outbox.mkdir(parents=True, exist_ok=True)
    path = outbox / f"{sha}.a2a.p2pd"
    info = offer_info(doc)
    # Written atomically: a send of the same conversation may be reading these files right now.
    if not path.exists():
        atomic_write_bytes(path, data)
    else:
        os.utime(path)  # in use again: housekeeping goes by age

    atomic_write_bytes(_info_path(path), info.to_json())
    return path, info, sha


def offer_info(doc: ConversationDocument) -> OfferInfo:
    return OfferInfo.normalized(doc.title or doc.context_id, doc.origin.platform,
                                doc.origin.session_id or doc.context_id, doc.counts.messages)


def outbox_info(blob_path: Path) -> OfferInfo:
    """The offer description kept beside an outbox blob (made again from the blob when it is missing)."""
    try:
        return OfferInfo.from_json(_info_path(blob_path).read_bytes())
    except (OSError, ValueError):
        from p2pd.conversation.document_io import parse_document

        return offer_info(parse_document(blob.read(blob_path), source=str(blob_path)))


def _info_path(blob_path: Path) -> Path:
    return blob_path.with_name(blob_path.name.split(".")[0] + ".offer.json")


__all__ = ["offer_info", "outbox_info", "pack_outbox"]
