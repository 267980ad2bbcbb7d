"""A Codex rollout converted as it is written (p2pd/agents/codex/streamed.py): the same bytes as the whole way's
document in the line layout, for every corpus rollout, a generated one, .zst ones and rollouts of every odd line;
the same errors; and through the real packing process."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import zstandard

from p2pd.agents.codex.export import export_rollout
from p2pd.agents.codex.rollout import iter_rollout, read_bytes, read_rollout
from p2pd.agents.codex.streamed import write_rollout
from p2pd.agents.sources import load_file, streamable_session
from p2pd.blob.stream import iter_raw
from p2pd.conversation.layout import document_lines
from p2pd.errors import CodecError, InvalidInputError, P2pdError, TooLargeError
from p2pd.exchange.producing import Production
from tests.corpus import codex_files, file_id
from tests.transfer.gen import generate_rollout


def whole(path: Path) -> bytes:
    out = io.BytesIO()
    document_lines(export_rollout(path).to_json_dict(), out.write)
    return out.getvalue()


def streamed(path: Path, spool: Path) -> tuple[bytes, dict]:
    spool.mkdir(exist_ok=True)
    out = io.BytesIO()
    heads: list[dict] = []
    write_rollout(path, out.write, spool_dir=spool, on_head=heads.append)
    assert len(heads) == 1 and list(spool.iterdir()) == []  # said once; the spools are gone
    return out.getvalue(), heads[0]


META = {"timestamp": "2026-07-10T08:00:00.000Z", "type": "session_meta",
        "payload": {"meta": {"id": "nested-meta", "cwd": "/w"}, "git": {"branch": "dev"}}}
ITEM = {"timestamp": "2026-07-10T08:00:01.000Z", "type": "response_item",
        "payload": {"type": "message", "id": "same", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}}


def odd_rollout() -> bytes:
    """Every kind of line the conversion treats apart: blank, not JSON, not an object, not UTF-8, no type, an item
    without a typed payload, a compaction, a turn context (the model), ids used twice, the meta not first, CRLF,
    and a last line cut off."""
    lines = [json.dumps(ITEM), "", "{not json", "[1, 2]", json.dumps(META),
             json.dumps({"type": "turn_context", "payload": {"model": "gpt-x"}}),
             json.dumps({**ITEM, "payload": {**ITEM["payload"], "role": "assistant"}}),
             json.dumps(ITEM) + "\r", json.dumps({"payload": {}}), json.dumps({"type": "response_item", "payload": 3}),
             json.dumps({"type": "compacted", "payload": {"message": "summary so far"}}),
             json.dumps({"type": "event_msg", "payload": {"type": "token_count"}})]
    not_utf8 = b'{"type": "response_item", "payload": {"type": "message", "text": "\xff\xfe"}}'
    return "\n".join(lines).encode() + b"\n" + not_utf8 + b'\n{"type": "response_item", "payl'


@pytest.mark.parametrize("path", codex_files(), ids=file_id)
def test_every_corpus_rollout_streams_to_the_whole_ways_bytes(tmp_path: Path, path: Path) -> None:
    data, head = streamed(path, tmp_path / "spool")
    assert data == whole(path)
    doc = export_rollout(path)
    assert head == {"title": doc.title, "contextId": doc.context_id, "origin": doc.origin.to_json_dict(),
                    "counts": {"messages": doc.counts.messages}}


@pytest.mark.parametrize("kind", ["odd", "generated", "odd.zst", "generated.zst"])
def test_odd_generated_and_zst_rollouts_stream_to_the_whole_ways_bytes(tmp_path: Path, kind: str) -> None:
    data = odd_rollout() if kind.startswith("odd") else generate_rollout(3_000_000, seed=3)
    path = tmp_path / ("rollout.jsonl.zst" if kind.endswith(".zst") else "rollout.jsonl")
    path.write_bytes(zstandard.ZstdCompressor().compress(data) if kind.endswith(".zst") else data)
    assert [(ln.n, ln.value, ln.error) for ln in iter_rollout(path)] == \
        [(ln.n, ln.value, ln.error) for ln in read_rollout(path)]
    got, _ = streamed(path, tmp_path / "spool")
    assert got == whole(path)
    if kind.startswith("odd"):
        doc = export_rollout(path)
        assert doc.counts.malformed_lines >= 6 and doc.context_id == "nested-meta" and doc.title


def test_the_same_errors_and_nothing_written(tmp_path: Path) -> None:
    corrupt = bytearray(zstandard.ZstdCompressor().compress(b'{"a":1}\n' * 10_000))
    for i in range(12, len(corrupt) - 4):
        corrupt[i] ^= 0x55
    cases = {"garbage.jsonl": b"not json\n[1]\n", "empty.jsonl": b"\n\n", "broken.jsonl.zst": bytes(corrupt)}
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(P2pdError) as expected:
            export_rollout(path)
        out = io.BytesIO()
        with pytest.raises(type(expected.value)) as got:
            write_rollout(path, out.write, spool_dir=tmp_path)
        assert str(got.value) == str(expected.value) and out.getvalue() == b"", name
    assert isinstance(expected.value, CodecError)
    big = tmp_path / "big.jsonl.zst"
    big.write_bytes(zstandard.ZstdCompressor().compress(generate_rollout(300_000)))
    with pytest.raises(TooLargeError) as expected:
        read_bytes(big, max_size=100_000)
    with pytest.raises(TooLargeError) as got:
        list(iter_rollout(big, max_size=100_000))
    assert str(got.value) == str(expected.value)
    with pytest.raises(InvalidInputError):
        list(iter_rollout(tmp_path))


def test_the_packing_process_sends_a_rollout_converted_as_a_stream(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(generate_rollout(2_000_000, seed=5))
    assert streamable_session(str(path)) == path
    (tmp_path / "work").mkdir()
    prod = Production.start(path, tmp_path / "work")
    try:
        payload = b"".join(iter_raw(prod.wait_complete()))
        head = prod.head
    finally:
        prod.close()
    assert payload == whole(path)
    doc = load_file(path)
    assert head == {"title": doc.title, "contextId": doc.context_id, "origin": doc.origin.to_json_dict(),
                    "counts": {"messages": doc.counts.messages}}
