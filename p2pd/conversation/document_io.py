"""Reading and writing conversation documents: ``.a2a.json`` (readable JSON) and the compressed wire blob.

Reading checks the size cap before reading, detects a blob by its magic bytes, and turns every failure into one
clear error that names what is wrong: not found, not JSON (with line and column), wrong schema (with the JSON path),
checksum mismatch, decompression failure, too large. Nothing is written by a read.

Speed: the compact form is encoded and every document decoded with orjson (10x / 2x faster than ``json`` here,
byte-for-byte the same compact output); anything orjson refuses (a lone surrogate, an integer over 64 bits, NaN)
goes through ``json`` as before, which also words the errors. No garbage collection runs during the bulk work
(:mod:`p2pd.support.gcpause`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from p2pd.blob import container as blob
from p2pd.conversation.document_json import (
    MAX_DEPTH,
    check_depth,
    describe_validation_error,
    document_from_json,
    json_path,
    load_json,
    message_from_json,
    too_deep,
)
from p2pd.conversation.json_text import compact_json, escape_lone_surrogates
from p2pd.conversation.model import ConversationDocument
from p2pd.errors import InvalidInputError, NotFoundError, TooLargeError
from p2pd.support.atomic import atomic_write_bytes
from p2pd.support.gcpause import bulk_work

DEFAULT_MAX_SIZE = blob.DEFAULT_MAX_RAW_SIZE
__all__ = ["DEFAULT_MAX_SIZE", "MAX_DEPTH", "check_depth", "compact_json", "describe_validation_error",
           "document_from_json", "dumps", "escape_lone_surrogates", "json_path", "load_json", "message_from_json",
           "parse_document", "read_document", "to_blob", "too_deep", "write_document"]
def dumps(doc: ConversationDocument, *, pretty: bool = True) -> bytes:
    """Serialize a document. ``pretty`` (the .a2a.json default) indents; the wire form is compact."""
    with bulk_work():
        data = doc.to_json_dict()
        if pretty:
            return escape_lone_surrogates(json.dumps(data, ensure_ascii=False, indent=1)).encode("utf-8") + b"\n"
        return compact_json(data)


def write_document(doc: ConversationDocument, path: str | os.PathLike[str], *, compressed: bool = False,
                   codec: str = "lz4", overwrite: bool = True, pretty: bool = True) -> int:
    """Write atomically; returns the number of bytes written. ``pretty=False`` writes compact JSON."""
    data = blob.encode(dumps(doc, pretty=False), codec) if compressed else dumps(doc, pretty=pretty)
    atomic_write_bytes(path, data, overwrite=overwrite)
    return len(data)


def to_blob(doc: ConversationDocument, codec: str = "lz4") -> bytes:
    return blob.encode(dumps(doc, pretty=False), codec)


def read_document(path: str | os.PathLike[str], *, max_size: int = DEFAULT_MAX_SIZE) -> ConversationDocument:
    p = Path(path)
    try:
        size = p.stat().st_size
    except FileNotFoundError:
        raise NotFoundError(f"file not found: {p}") from None
    if p.is_dir():
        raise InvalidInputError(f"{p} is a directory, not a conversation file")
    with p.open("rb") as fh:
        head = fh.read(len(blob.MAGIC))
    from p2pd.blob.stream import check_file, iter_raw
    from p2pd.conversation.stream_reader import read_whole

    if blob.is_blob(head):
        check_file(p, max_raw_size=max_size)
        pieces = iter_raw(p, max_raw_size=max_size)
    else:
        if size > max_size:
            raise TooLargeError(f"{p} is {size} bytes, over the {max_size}-byte limit")
        pieces = _file_pieces(p)
    with bulk_work():  # read as a stream: each element checked within the reader's limits, then kept
        return read_whole(pieces, source=str(p))


def _file_pieces(p: Path) -> Iterator[bytes]:
    with p.open("rb") as fh:
        while piece := fh.read(1 << 20):
            yield piece


def parse_document(raw: bytes, *, source: str = "input") -> ConversationDocument:
    with bulk_work():
        data = load_json(raw, source)
        try:
            return document_from_json(data, source=source)
        except RecursionError:  # pragma: no cover - check_depth keeps validation well inside the stack
            raise too_deep(source) from None
