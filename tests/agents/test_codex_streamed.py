"""A Codex rollout converted as it is written (p2pd/agents/codex/streamed.py): the same bytes as the whole way's
document in the line layout, for every corpus rollout, a generated one, .zst ones and rollouts of every odd line;
the same errors (through the real packing process: tests/exchange/test_producing.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zstandard

from p2pd.agents.codex.export import export_rollout
from p2pd.agents.codex.rollout import iter_rollout, read_bytes, read_rollout
from p2pd.agents.codex.streamed import write_rollout
from p2pd.errors import CodecError, InvalidInputError, TooLargeError
from tests.agents.helpers import line_layout, offer_of, refused_alike, written_as_stream
from tests.corpus import codex_files, file_id
from tests.transfer.gen import generate_rollout


def whole(path: Path) -> bytes:
    return line_layout(export_rollout(path))


def streamed(path: Path, spool: Path) -> tuple[bytes, dict]:
    return written_as_stream(write_rollout, path, spool)


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
    assert head == offer_of(export_rollout(path))


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
        (tmp_path / name).write_bytes(data)
        refused = refused_alike(export_rollout, write_rollout, tmp_path / name, tmp_path)
    assert isinstance(refused, CodecError)
    big = tmp_path / "big.jsonl.zst"
    big.write_bytes(zstandard.ZstdCompressor().compress(generate_rollout(300_000)))
    with pytest.raises(TooLargeError) as expected:
        read_bytes(big, max_size=100_000)
    with pytest.raises(TooLargeError) as got:
        list(iter_rollout(big, max_size=100_000))
    assert str(got.value) == str(expected.value)
    with pytest.raises(InvalidInputError):
        list(iter_rollout(tmp_path))
