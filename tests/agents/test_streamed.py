"""A Claude Code session converted as it is written: the same document load_file builds, value for value and key
for key, byte for byte where the transcript is compact JSON as Claude Code writes it (modulo the line layout's
newlines and its key order: records before messages, ``title``, ``summary`` and ``counts`` last; a record is its
line's own bytes, so a line spelled otherwise keeps its spelling), offered under its final title and message count
before its last message is read."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from p2pd.agents.claude_code import streamed
from p2pd.agents.claude_code.streamed import OFFER_KEYS, write_session
from p2pd.agents.sources import load_file, stream_writer, streamable_session
from p2pd.agents.spec import NotStreamable
from p2pd.conversation.document_io import compact_json, parse_document
from p2pd.conversation.model import ConversationDocument
from p2pd.conversation.stream_reader import DocumentReader
from tests.agents.helpers import LEFT_WHOLE_GEMINI_JSON
from tests.corpus import claude_code_files, codex_files, file_id, gemini_files

# The streamed writer's key order: records before messages; title, summary and counts last.
STREAMED_ORDER = ("format", "formatVersion", "a2aVersion", "contextId", "createdAt", "origin", "records", "messages",
                  "issues", "lineCount", "subagents", "toolResults", "metadata", *OFFER_KEYS)


def counts_last(doc: ConversationDocument) -> bytes:
    """The compact document (the in-memory writer's values) with its keys in the streamed writer's order."""
    data = doc.to_json_dict()
    assert set(data) <= set(STREAMED_ORDER)
    return compact_json({k: data[k] for k in STREAMED_ORDER if k in data})


def compact_lines(path: Path) -> bool:
    """Whether every record line (an object of a string ``type`` other than user/assistant) is spelled as orjson
    writes it (as Claude Code writes its lines): records are their lines' bytes, so the documents are then the
    same bytes."""
    for raw in path.read_bytes().splitlines():
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict) and isinstance(value.get("type"), str) and value["type"] not in (
                "user", "assistant") and orjson.dumps(value) != raw.rstrip():
            return False
    return True


def _pairs(data: bytes) -> Any:
    return json.loads(data, object_pairs_hook=list)  # (every object as its members in order: order counts)


def assert_same_document(data: bytes, doc: ConversationDocument, path: Path) -> None:
    """The streamed bytes are the loaded document: the same bytes when the transcript is compact JSON, else the
    same values with their keys in the same order (a record line's own spelling — ``1.50e2``, ``\\u00e9``,
    spaces — is kept)."""
    expected = counts_last(doc)
    if compact_lines(path):
        assert data.replace(b"\n", b"") == expected
    else:
        assert _pairs(data) == _pairs(expected)


def stream(path: Path, spool: Path) -> tuple[bytes, list[dict[str, Any]], Any]:
    out = io.BytesIO()
    heads: list[dict[str, Any]] = []
    info = write_session(path, out.write, spool_dir=spool, on_head=heads.append)
    return out.getvalue(), heads, info


@pytest.mark.parametrize("path", claude_code_files(include_subagents=False), ids=file_id)
def test_streamed_session_is_the_loaded_document(path, tmp_path):
    data, heads, info = stream(path, tmp_path)
    doc = load_file(path)
    assert_same_document(data, doc, path)
    assert list(json.loads(data))[-3:] == list(OFFER_KEYS)
    assert (info.title, info.summary, info.counts.to_json_dict()) == (doc.title, doc.summary, doc.counts.to_json_dict())
    # offered once, under the document's own title and message count
    assert heads == [{"title": doc.title, "contextId": doc.context_id, "origin": doc.origin.to_json_dict(),
                      "counts": {"messages": doc.counts.messages}}]
    # read back, whole and as a stream, to the same model
    assert parse_document(data, source="test") == doc
    reader = DocumentReader()
    for i in range(0, len(data), 4093):
        reader.feed(data[i:i + 4093])
    summary = reader.finish()
    assert (summary.counts, summary.title, summary.document.summary) == (doc.counts, doc.title, doc.summary)
    assert list(tmp_path.iterdir()) == []  # the spools are gone


def test_generated_session_with_odd_lines_streams_the_same(tmp_path):
    from tests.transfer.gen import generate_conversation

    path = tmp_path / "s.jsonl"
    path.write_bytes(generate_conversation(2_000_000, seed=7) + b'{"type":"user","message":{"content":"cut')
    spool = tmp_path / "spool"
    spool.mkdir()
    data, heads, _ = stream(path, spool)
    doc = load_file(path)
    assert_same_document(data, doc, path)
    assert [(h["title"], h["counts"]) for h in heads] == [(doc.title, {"messages": doc.counts.messages})]


def _line(uuid: str, parent: str | None, role: str, content: Any) -> bytes:
    return json.dumps({"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
                       "timestamp": "2026-01-01T00:00:00Z",
                       "message": {"role": role, "content": content}}).encode() + b"\n"


@pytest.mark.parametrize("first", ["[Request interrupted by user]", "<command-name>/clear</command-name>", None])
def test_the_offer_and_the_first_messages_come_before_the_last_line_is_read(first, tmp_path, monkeypatch):
    """The title is settled at the first real request even when the first prompt is not one; the offer comes
    before the records and messages are written, and the first messages are written while the writing pass has
    read only part of the transcript."""
    lines = [_line("u0", None, "user", first)] if first else []
    parent = "u0" if first else None
    for i in range(1, 40):
        text = "Fix the parser, please" if i == 1 else f"step {i}"
        lines.append(_line(f"u{i}", parent, "user" if i % 2 else "assistant",
                           text if i % 2 else [{"type": "text", "text": text}]))
        parent = f"u{i}"
        if i % 5 == 0:
            lines.append(json.dumps({"type": "progress", "uuid": f"p{i}", "n": i}).encode() + b"\n")
    path = tmp_path / "s1.jsonl"
    path.write_bytes(b"".join(lines))
    events: list[tuple[str, int]] = []
    passes = [0]
    real_iter_lines = streamed.iter_lines

    def counted(p: Path, **kw):  # the lines each pass over the file has read, heard in order with the writes
        passes[0] += 1
        this = passes[0]
        for line in real_iter_lines(p, **kw):
            events.append((f"read{this}", line.n))
            yield line

    monkeypatch.setattr(streamed, "iter_lines", counted)
    spool = tmp_path / "spool"
    spool.mkdir()
    write_session(path, lambda b: events.append(("write", b.count(b'"messageId"'))), spool_dir=spool,
                  on_head=lambda h: events.append(("head", len(h["title"]))))
    doc = load_file(path)
    assert doc.title == "Fix the parser, please" and len(doc.records) == 7
    messages_pass = f"read{passes[0]}"  # the last pass: the messages, written as they are converted
    assert sum(1 for kind, _ in events if kind == messages_pass) == len(doc.messages)
    last_read = max(i for i, (kind, _) in enumerate(events) if kind == messages_pass)
    first_message = next(i for i, (kind, n) in enumerate(events) if kind == "write" and n)
    first_write = next(i for i, (kind, _) in enumerate(events) if kind == "write")
    head = next(i for i, (kind, _) in enumerate(events) if kind == "head")
    assert head < first_write < first_message < last_read
    assert [e for e in events if e[0] == "head"] == [("head", len(doc.title))]


def test_a_title_settled_late_is_offered_by_the_writing_pass(tmp_path, monkeypatch):
    """When the first PEEK messages do not settle the title, the offer comes from the writing pass, once."""
    monkeypatch.setattr(streamed, "PEEK", 1)
    path = tmp_path / "s2.jsonl"
    path.write_bytes(_line("a", None, "user", "[Request interrupted by user]") + _line("b", "a", "user", "Do it")
                     + _line("c", "b", "assistant", [{"type": "text", "text": "done"}]))
    spool = tmp_path / "spool"
    spool.mkdir()
    events: list[str] = []
    write_session(path, lambda b: events.append("message" if b'"messageId"' in b else "write"), spool_dir=spool,
                  on_head=lambda h: events.append(f"head {h['title']}"))
    assert load_file(path).title == "Do it"
    assert [e for e in events if e != "write"] == ["message", "message", "head Do it", "message"]


def test_agent_sessions_are_streamable_documents_are_not(tmp_path):
    assert streamable_session(str(claude_code_files(include_subagents=False)[0])) is not None
    assert streamable_session(str(codex_files()[0])) == codex_files()[0]  # (p2pd/agents/codex/streamed.py)
    gemini_json = next(p for p in gemini_files() if p.suffix == ".json")
    assert streamable_session(str(gemini_json)) == gemini_json  # (p2pd/agents/gemini/json_session.py)
    left = tmp_path / "session-left.json"  # one only the whole reading takes: offered, and declined
    left.write_bytes(LEFT_WHOLE_GEMINI_JSON)  # (NotStreamable) by the writer before it writes anything
    assert streamable_session(str(left)) == left
    spool = tmp_path / "spool"
    spool.mkdir()
    with pytest.raises(NotStreamable):
        stream_writer(left)(left, lambda data: pytest.fail("wrote"), spool_dir=spool)
    doc = tmp_path / "c.a2a.json"
    doc.write_text('{"messages": []}')  # a document: no agent's session
    assert streamable_session(str(doc)) is None


@pytest.mark.parametrize("content", [b"", b"\n\n \n", b"\x8f\x00random bytes\xff\n", b'{"type":"user"',
                                     b'[{"a":1}]\n', b"1\n2\n"], ids=["empty", "blank", "binary", "truncated",
                                                                      "array", "numbers"])
def test_a_file_that_is_no_transcript_is_refused_in_the_loaded_reading_s_words(content, tmp_path):
    """The streamed reading (export, send) used to call every such file "empty"; it now says what the loaded
    reading says (not JSON, truncated, one array, empty)."""
    from p2pd.errors import InvalidInputError

    path = tmp_path / "s.jsonl"
    path.write_bytes(content)
    spool = tmp_path / "spool"
    spool.mkdir()
    with pytest.raises(InvalidInputError) as loaded:
        load_file(path)
    with pytest.raises(InvalidInputError) as streaming:
        stream(path, spool)
    assert str(streaming.value) == str(loaded.value)


def test_odd_lines_stream_the_same(tmp_path):
    """Records made straight from their bytes (and the exact way for what orjson refuses) are the loaded ones:
    lines of every odd shape, untyped objects, user/assistant lines that are no messages, between real ones."""
    from tests.agents.claude_code.test_line_index import ODD_LINES
    from tests.transfer.gen import generate_conversation

    # Not the line with a null block (the in-memory writer cannot dump a JSON-null data part; the streamed one
    # can), nor NaN/infinity (written null by orjson, but NaN by json, which writes the whole in-memory document
    # when a number past 64 bits is in it).
    odd = [line for line in ODD_LINES if b'"uuid":"blocks"' not in line
           and b"NaN" not in line and b"1e999" not in line]
    extra = [b'{"no":"type"}', b'{"type":7,"uuid":"t7"}', b'{"type":"system","content":"\\u00e9 \\/ 1.50e2"}',
             b'{"type":"progress","data":{"a":[1,2.5,-0.0,true,null]}} ']
    path = tmp_path / "s.jsonl"
    path.write_bytes(generate_conversation(300_000, seed=3) + b"\n".join(odd[:-1] + extra) + b"\n" + odd[-1])
    spool = tmp_path / "spool"
    spool.mkdir()
    data, _, _ = stream(path, spool)
    doc = load_file(path)
    assert doc.issues and doc.records
    assert_same_document(data, doc, path)


def test_integers_past_64_bits_travel_exactly(tmp_path):
    """A transcript's integers past 64 bits (a tool's output, an id) are kept exactly, streamed or loaded: not
    rounded through a float (which orjson reads them as)."""
    big = 123456789012345678901234567890
    path = tmp_path / "s1.jsonl"
    path.write_bytes(_line("u1", None, "user", "Fix the parser")[:-2] + f',"big":{big}}}\n'.encode()
                     + f'{{"type":"progress","uuid":"p1","n":{-big}}}\n'.encode())
    spool = tmp_path / "spool"
    spool.mkdir()
    data, _, _ = stream(path, spool)
    doc = load_file(path)
    assert_same_document(data, doc, path)
    streamed_doc = json.loads(data)
    assert streamed_doc["records"][0]["value"]["n"] == -big
    assert streamed_doc["messages"][0]["metadata"]["claudeCode"]["lines"][0]["source"]["big"] == big


# Lines of odd shapes, spliced into real sessions by the randomized test below: each must come out as the loaded
# document has it (a record is its line's own bytes only when the index read the line as one well-formed object).
# Not here: a number past a double (``1e999``: kept as written, where the loaded document writes null) and a
# duplicate key (kept as written; every reader takes the last, as the loaded document does).
SPLICED_ODD_LINES = [
    b'{"type":"progress","n":NaN}', b'{"type":"x","s":"\\ud800"}', b'{"type":"x"} ', b'{"type":"x"}\r',
    b'  {"type":"x"}', b'{"type":1}', b'[]', b'', b'{"type":"x","big":123456789012345678901234567890}',
    b'{"type":"user"}', b'{"type":"assistant","message":{"content":5}}', b'\xff\xfe', b'{"type":"x","s":"\xc3\xa9"}',
    b'{"type":"x","s":"\\u00e9"}', b'{"type": "summary", "summary": "a"}', b'{"type":"x","d":{"a":[1,2.50,-0.0]}}',
    b'{"type":"system","content":"\\/"}', b'{"no":"type"}', b'{"type":"x"', b'{"type":"x","t":"\t"}',
]


def test_odd_lines_spliced_into_real_sessions_stream_as_they_load(tmp_path):
    from tests.seeds import seeded

    _, rng = seeded()
    files = claude_code_files(include_subagents=False)
    for i in range(25):
        lines = rng.choice(files).read_bytes().splitlines()
        for _ in range(rng.randint(1, 8)):
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(SPLICED_ODD_LINES))
        path = tmp_path / f"s{i}.jsonl"
        path.write_bytes(b"\n".join(lines) + (b"\n" if rng.random() < 0.8 else b""))
        spool = tmp_path / f"spool{i}"
        spool.mkdir()
        data, _, _ = stream(path, spool)
        assert _pairs(data) == _pairs(counts_last(load_file(path))), path.name
