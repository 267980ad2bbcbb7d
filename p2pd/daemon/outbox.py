"""The outbox: conversations packed as wire blobs, named by their payload's SHA-256, kept for resume.

Each blob has its offer description (title, platform, session, message count) beside it, so a transfer sent again
after a restart offers the same thing without reading the conversation again.

A conversation is packed by a child process (:mod:`p2pd.daemon.packer`) straight into a file: the daemon never
holds a whole document, only its envelope (title, origin, counts). Exports are written the same way
(:func:`pack_file`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from p2pd.conversation.model import ConversationDocument
from p2pd.daemon.children import run_child
from p2pd.daemon.packer import Job
from p2pd.errors import from_wire, writing
from p2pd.support import staging
from p2pd.support.atomic import atomic_write_bytes
from p2pd.transfer.frames import OfferInfo

PACKING_PREFIX = ".packing-"  # a packing's work folder in the outbox (a killed one's is swept by age)


@dataclass
class Source:
    """Which conversation to pack: a session file, or a session id / prefix / ``latest``; masked if ``redact``;
    ``metadata``: fields added to the document's metadata (a handoff's package)."""

    ref: str
    redact: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Packed:
    """A packed conversation: its file, its payload's SHA-256 (blobs) and its envelope (the document without its
    messages, records, subagents and tool results)."""

    path: Path
    sha256: str
    envelope: ConversationDocument

    @property
    def title(self) -> str:
        return self.envelope.title or self.envelope.context_id

    @property
    def info(self) -> OfferInfo:
        return offer_info(self.envelope)

    @property
    def size(self) -> int:
        return self.path.stat().st_size


async def run_packer(job: Job) -> dict[str, Any]:
    """Run :mod:`p2pd.daemon.packer` on ``job`` (:func:`~p2pd.daemon.children.run_child`)."""
    result = await run_child("p2pd.daemon.packer", job.to_arg())
    if "head" not in result:
        raise from_wire({"error": "the packing process gave no result", "cause": "unexpected"})
    return result


def envelope_of(head: dict[str, Any]) -> ConversationDocument:
    """The document's envelope from its head (the fields before its messages)."""
    from p2pd.conversation.document_json import document_from_json

    return document_from_json({**head, "messages": []}, source="the packed conversation")


async def pack_outbox(source: Source, outbox: Path, *, codec: str = "zstd") -> Packed:
    """Pack ``source`` as a blob named by its payload's SHA-256 in ``outbox`` (kept for resume), with its offer
    description beside it. zstd: what every daemon and the CLI speak (2.7× smaller than lz4 on sessions); a
    receiver without it gets an lz4 copy made at send time (:func:`p2pd.daemon.ready_blob.opened_for_send`)."""
    with writing(f"into the outbox {outbox}"):  # (whichever step refused: the packer names its staging file)
        work = await asyncio.to_thread(_work_folder, outbox)
        held = staging.hold(work)
        try:
            out = work / "conversation.a2a.p2pd"
            result = await run_packer(Job(source.ref, str(out), kind=codec, redact=source.redact,
                                          metadata=source.metadata))
            envelope = envelope_of(result["head"])
            sha = str(result["sha256"])
            path = await asyncio.to_thread(_keep, out, outbox / f"{sha}.a2a.p2pd", offer_info(envelope))
            return Packed(path, sha, envelope)
        finally:
            os.close(held)
            await asyncio.to_thread(shutil.rmtree, work, True)


async def pack_file(source: Source, target: Path, *, compressed: bool = False, codec: str = "lz4",
                    pretty: bool = False) -> Packed:
    """Write ``source`` to ``target`` (atomically, replacing it): a blob (``compressed``) or its JSON."""
    result = await run_packer(Job(source.ref, str(target), kind=codec if compressed else "json",
                                  redact=source.redact, metadata=source.metadata, pretty=pretty))
    return Packed(target, str(result.get("sha256", "")), envelope_of(result["head"]))


async def export_file(source: Source, exports: Path, output: str | None, *, compressed: bool = False) -> Packed:
    """An export: to ``output`` (an absolute path), else into ``exports`` named by the conversation's id."""
    from p2pd.agents.sources import document_file_name
    from p2pd.errors import InvalidInputError

    suffix = ".a2a.p2pd" if compressed else ".a2a.json"
    if output and not Path(output).expanduser().is_absolute():
        raise InvalidInputError("the output path must be absolute (the daemon's working folder is not yours)")
    exports.mkdir(parents=True, exist_ok=True)
    await asyncio.to_thread(staging.sweep_files, exports, "*.export-*.part")  # killed exports' (by age)
    staged = exports / f".export-{os.urandom(6).hex()}{suffix}.part"
    with writing(Path(output).expanduser() if output else f"into {exports}"):
        packed = await pack_file(source, Path(output).expanduser() if output else staged, compressed=compressed)
    if not output:  # named by the conversation, once it is known
        named = exports / document_file_name(packed.envelope, suffix)
        await asyncio.to_thread(staged.replace, named)
        packed.path = named
    return packed


def _work_folder(outbox: Path) -> Path:
    outbox.mkdir(parents=True, exist_ok=True)
    staging.sweep(outbox, f"{PACKING_PREFIX}*")  # killed packings' folders
    return Path(tempfile.mkdtemp(prefix=PACKING_PREFIX, dir=outbox))


def _keep(packed: Path, path: Path, info: OfferInfo) -> Path:
    # Moved in atomically: a send of the same conversation may be reading these files right now.
    if not path.exists():
        os.replace(packed, path)
    else:
        os.utime(path)  # in use again: housekeeping goes by age
    atomic_write_bytes(_info_path(path), info.to_json())
    return path


def offer_info(doc: ConversationDocument) -> OfferInfo:
    return OfferInfo.normalized(doc.title or doc.context_id, doc.origin.platform,
                                doc.origin.session_id or doc.context_id, doc.counts.messages)


def outbox_info(blob_path: Path) -> OfferInfo:
    """The offer description kept beside an outbox blob (made again from the blob, read as a stream, when it is
    missing)."""
    try:
        return OfferInfo.from_json(_info_path(blob_path).read_bytes())
    except (OSError, ValueError):
        from p2pd.agents.file_source import document_envelope

        return offer_info(document_envelope(blob_path))


def _info_path(blob_path: Path) -> Path:
    return blob_path.with_name(blob_path.name.split(".")[0] + ".offer.json")


__all__ = ["PACKING_PREFIX", "Packed", "Source", "envelope_of", "export_file", "offer_info", "outbox_info", "pack_file",
           "pack_outbox", "run_packer"]
