"""Reading conversation files: each kind of bad input gives its clear error, and nothing is written."""

from __future__ import annotations

import json
import struct

import pytest

from p2pd.blob import container as blob
from p2pd.conversation.document_io import parse_document, read_document, write_document
from p2pd.conversation.model import ConversationDocument, Message, Origin, Part, Role
from p2pd.errors import ChecksumMismatchError, CodecError, InvalidInputError, NotFoundError, TooLargeError


def small_doc() -> ConversationDocument:
    return ConversationDocument(
        context_id="ctx-1", created_at="2026-11-21T00:00:00Z", origin=Origin(platform="claude-code"),
        messages=[Message(message_id="m1", context_id="ctx-1", role=Role.USER, parts=[Part(text="hi")]),
                  Message(message_id="m2", role=Role.AGENT, parts=[Part(data={"n": 1, "f": 0.5})])])


def test_write_read_json_and_blob(tmp_path):
    doc = small_doc()
    write_document(doc, tmp_path / "a.a2a.json")
    write_document(doc, tmp_path / "a.a2a.p2pd", compressed=True)
    for name in ("a.a2a.json", "a.a2a.p2pd"):
        back = read_document(tmp_path / name)
        assert back.to_json_dict() == doc.to_json_dict()
        assert back.messages[1].parts[0].data == {"n": 1, "f": 0.5}
        assert isinstance(back.messages[1].parts[0].data["n"], int)


def test_not_found(tmp_path):
    with pytest.raises(NotFoundError, match="not found"):
        read_document(tmp_path / "missing.a2a.json")


def test_not_json(tmp_path):
    p = tmp_path / "bad.a2a.json"
    p.write_text('{"format": "p2pd.conversation",\n "messages": [}')
    with pytest.raises(InvalidInputError, match=r"not JSON: .* line 2 column"):
        read_document(p)


def test_wrong_schema_names_the_json_path(tmp_path):
    data = small_doc().to_json_dict()
    data["messages"][1]["parts"][0] = {"text": "a", "url": "https://x"}
    p = tmp_path / "s.a2a.json"
    p.write_text(json.dumps(data))
    with pytest.raises(InvalidInputError, match=r"at \$\.messages\[1\]\.parts\[0\]: .*exactly one of"):
        read_document(p)
    data["messages"][1]["parts"][0] = {"text": "ok"}
    data["messages"][0]["role"] = "ROLE_BOSS"
    p.write_text(json.dumps(data))
    with pytest.raises(InvalidInputError, match=r"\$\.messages\[0\]\.role"):
        read_document(p)


def test_flipped_byte_in_blob_file(tmp_path):
    p = tmp_path / "c.a2a.p2pd"
    write_document(small_doc(), p, compressed=True)
    data = bytearray(p.read_bytes())
    data[-3] ^= 0x40
    p.write_bytes(bytes(data))
    with pytest.raises(ChecksumMismatchError, match="checksum mismatch"):
        read_document(p)


def test_lz4_failure_with_a_matching_checksum(tmp_path):
    payload = b"\x04\x22\x4d\x18garbage-not-a-frame"
    import hashlib

    header = blob.BlobHeader(codec="lz4", raw_size=100, compressed_size=len(payload),
                             sha256=hashlib.sha256(payload).digest())
    p = tmp_path / "c.a2a.p2pd"
    p.write_bytes(header.pack() + payload)
    with pytest.raises(CodecError, match="lz4"):
        read_document(p)


def test_blob_claiming_100_gb(tmp_path):
    p = tmp_path / "huge.a2a.p2pd"
    p.write_bytes(struct.pack(">8sBBHQQ32s", b"P2PDBLOB", 1, 1, 0, 100 * 10**9, 64, b"\0" * 32) + b"\0" * 64)
    with pytest.raises(TooLargeError, match="over the"):
        read_document(p)


def test_json_over_the_cap(tmp_path):
    p = tmp_path / "big.a2a.json"
    write_document(small_doc(), p)
    with pytest.raises(TooLargeError):
        read_document(p, max_size=100)


def test_reads_a2a_v03_and_type_tagged_messages():
    v03 = {"messages": [
        {"kind": "message", "messageId": "a", "role": "user", "contextId": "c",
         "parts": [{"kind": "text", "text": "hello"},
                   {"kind": "file", "file": {"bytes": "aGk=", "mimeType": "image/png", "name": "x.png"}},
                   {"kind": "file", "file": {"uri": "https://e.x/f.pdf", "mimeType": "application/pdf"}}]},
        {"kind": "message", "messageId": "b", "role": "agent", "parts": [{"kind": "data", "data": {"k": 1}}]},
    ]}
    doc = parse_document(json.dumps(v03).encode())
    assert [m.role for m in doc.messages] == [Role.USER, Role.AGENT]
    p = doc.messages[0].parts
    assert (p[0].text, p[1].raw, p[1].media_type, p[1].filename, p[2].url) == \
        ("hello", "aGk=", "image/png", "x.png", "https://e.x/f.pdf")
    assert doc.messages[1].parts[0].data == {"k": 1}
    assert doc.context_id == "c" and doc.origin.platform == "a2a"
    tagged = [{"messageId": "x", "role": "agent", "parts": [{"type": "text", "text": "old style"}]}]
    doc2 = parse_document(json.dumps(tagged).encode())
    assert doc2.messages[0].parts[0].text == "old style"


def test_newer_format_version_is_refused():
    data = small_doc().to_json_dict()
    data["formatVersion"] = 99
    with pytest.raises(InvalidInputError, match="version 99"):
        parse_document(json.dumps(data).encode())


@pytest.mark.parametrize("depth", [300, 5_000, 100_000])
def test_deeply_nested_json_is_one_clear_invalid_input_error(depth: int) -> None:
    """Red-team finding: deep nesting raised an uncaught RecursionError (exit 1)."""
    from p2pd.conversation.document_io import MAX_DEPTH, parse_document
    from p2pd.errors import InvalidInputError

    raw = b'{"messages":' + b"[" * depth + b"]" * depth + b"}"
    with pytest.raises(InvalidInputError) as info:
        parse_document(raw, source="the test document")
    assert info.value.exit_code == 4 and str(MAX_DEPTH) in str(info.value) and "\n" not in str(info.value)
    # nesting within the limit is not refused for its depth
    ok = b'{"messages":[{"role":"user","parts":[{"kind":"data","data":' + b'{"a":' * 50 + b"1" + b"}" * 50 \
        + b"}]}]}"
    try:
        parse_document(ok, source="x")
    except InvalidInputError as exc:
        assert str(MAX_DEPTH) not in str(exc)


def test_deeply_nested_json_exits_4_on_the_command_line(tmp_path) -> None:
    import subprocess
    import sys

    path = tmp_path / "deep.a2a.json"
    path.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    proc = subprocess.run([sys.executable, "-m", "p2pd", "show", str(path)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 4, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
