"""The quick check of the line layout's elements (element_check.py) says yes only where the usual way (a JSON
parse, then the pydantic model) says yes, and reads the same message: on the corpus, on random documents, on
mutated bytes (seeded; the seed is printed) and on the shapes it must leave to the model."""

from __future__ import annotations

import json

import msgspec
import pytest

from p2pd.agents.sources import load_file
from p2pd.conversation.element_check import QuickMessage, QuickPart, QuickRecord, quick_check
from p2pd.conversation.layout import document_lines
from p2pd.conversation.legacy import normalize_message
from p2pd.conversation.model import Counts, Message, Part, Record
from p2pd.conversation.stream_reader import DocumentReader, read_stream
from p2pd.errors import P2pdError
from tests.conversation.test_stream_reader import random_document
from tests.corpus import claude_code_files
from tests.seeds import seeded

_MODEL = {"messages": Message, "records": Record}


def _usual(key: str, line: bytes) -> object:
    """What the usual way makes of an element's bytes (raises when it refuses them): the values the standard
    library reads, integers past 64 bits included."""
    value = json.loads(line.decode("utf-8"))
    return _MODEL[key].model_validate(normalize_message(value) if key == "messages" else value)


def _agrees(key: str, line: bytes) -> None:
    quick = quick_check(key, line)
    if quick is None:
        return
    model = _usual(key, line)  # it must accept what the quick check accepted
    if isinstance(quick, QuickMessage):
        assert isinstance(model, Message)
        assert (quick.message_id, quick.role, quick.context_id, bool(quick.p2pd.get("active", True))) == \
            (model.message_id, model.role, model.context_id, bool(model.p2pd.get("active", True))), line
        assert [(p.text, p.raw, p.url, p.media_type, p.filename) for p in quick.parts] == \
            [(p.text, p.raw, p.url, p.media_type, p.filename) for p in model.parts], line
        assert quick.p2pd == model.p2pd and [p.data_value for p in quick.parts] == \
            [p.data_value for p in model.parts], line
        a, b = Counts(), Counts()
        a.add(quick)
        b.add(model)
        assert a == b
    else:
        assert isinstance(model, Record) and (quick.line, quick.text, quick.raw) == (model.line, model.text, model.raw)


def _elements(doc: dict) -> list[tuple[str, bytes]]:
    out: list[bytes] = []
    document_lines(doc, out.append)
    lines = b"".join(out).split(b"\n")
    found = []
    for line in lines:
        line = line[1:] if line.startswith(b",{") else line.rstrip(b",")
        if line.startswith(b"{") and line.endswith(b"}") and not line.startswith(b'{"format"'):
            found.append(("messages" if b'"messageId"' in line[:20] or b'"parts"' in line else "records", line))
    return found


@pytest.mark.parametrize("key, model, quick", [("messages", Message, QuickMessage), ("messages", Part, QuickPart),
                                               ("records", Record, QuickRecord)])
def test_the_structs_have_the_models_fields_and_names(key, model, quick):
    names = {f.encode_name for f in msgspec.structs.fields(quick)}
    assert names == {f.alias or name for name, f in model.model_fields.items()}


def test_corpus_elements_read_the_same_quick_and_the_usual_way():
    files = claude_code_files()[:6]
    if not files:
        pytest.skip("no corpus")
    for path in files:
        for key, line in _elements(load_file(path).to_json_dict()):
            _agrees(key, line)


def test_random_documents_count_the_same_quick_and_the_usual_way():
    seed, rng = seeded()
    for _ in range(200):
        doc = random_document(rng)
        if not isinstance(doc, dict):  # (a bare list of messages has no line layout)
            continue
        out: list[bytes] = []
        document_lines(doc, out.append)
        data = b"".join(out)
        try:
            usual = read_stream([data], on_item=lambda item: None)
        except P2pdError as exc:
            with pytest.raises(type(exc)):
                read_stream([data])
            continue
        quick = read_stream([data])
        assert (quick.counts, quick.document) == (usual.counts, usual.document), seed


_BYTES = [b'"', b"\\", b"\xff", b"\xc3", b"\x01", b"\t", b"0", b"-", b"1e", b".", b",", b":", b"{", b"}", b"[", b"]",
          b"\\u", b"\\ud800", b"null", b"true", b"NaN", b"99999999999999999999999", b'"kind":"text",', b'"type":1,',
          b'"data":null,', b'"text":"x",', b'"media_type":"a",', b"ROLE_AGENT", b"user", b" "]


def test_mutated_elements_are_never_let_through_by_the_quick_check_alone():
    _, rng = seeded()
    docs = [random_document(rng) for _ in range(30)]
    bases = [e for doc in docs if isinstance(doc, dict) for e in _elements(doc)]
    tried = accepted = 0
    for _ in range(6000):
        key, line = rng.choice(bases)
        data = bytearray(line)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(1, len(data))
            cut = rng.choice([0, 0, 1, 2])
            data[at:at + cut] = rng.choice(_BYTES)
        tried += 1
        if quick_check(key, bytes(data)) is not None:
            accepted += 1
            _agrees(key, bytes(data))
    print(f"{accepted} of {tried} mutations accepted by the quick check")


@pytest.mark.parametrize("key, line", [
    ("messages", b'{"messageId":"m","role":"user","parts":[{"text":"a"}]}'),  # a legacy role
    ("messages", b'{"kind":"message","messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}]}'),
    ("messages", b'{"messageId":"m","role":"ROLE_USER","parts":[{"kind":"text","text":"a"}]}'),
    ("messages", b'{"message_id":"m","role":"ROLE_USER","parts":[{"text":"a"}]}'),  # snake_case: the model's
    ("messages", b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a","data":1}]}'),  # two contents
    ("messages", b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":null}]}'),  # none
    ("messages", b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}],"metadata":{"x":"\\ud800"}}'),
    ("messages", b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}],"metadata":{"x":"\xff"}}'),
    ("messages", b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}],"metadata":{"x":NaN}}'),
    ("messages", b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}],"metadata":{"x":"\x01"}}'),
    ("messages", b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a","text":null}]}'),  # the last counts
    ("records", b'{"line":1.0}'), ("records", b'{"line":true}'), ("records", b'{"line":"1"}'),
    ("records", b'{"line":123456789012345678901234567890}'), ("records", b'{"line":100000000000000000000}'),
    ("records", b'{"line":1,"extra":2}'),
    ("records", b'{"line":1,"value":[1,]}'), ("records", b'{"line":1,"value":01}'),
])
def test_what_the_quick_check_leaves_to_the_model(key, line):
    assert quick_check(key, line) is None


@pytest.mark.parametrize("key, line", [
    ("messages", b'{"messageId":"m","role":"ROLE_AGENT","parts":[{"data":null}],"metadata":{"p2pd":{"active":false}}}'),
    ("messages", b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":null,"text":"a"}],"contextId":"c"}'),
    ("records", b'{"line":7,"value":{"big":123456789012345678901234567890,"s":"\\ud83d\\ude00 \xc3\xa9"}}'),
])
def test_what_the_quick_check_reads_as_the_model_does(key, line):
    assert quick_check(key, line) is not None
    _agrees(key, line)


def test_the_reader_refuses_the_same_with_and_without_the_quick_check():
    bad = (b'{"format":"p2pd.conversation","formatVersion":1,"a2aVersion":"1.0","contextId":"c","messages":[\n'
           b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a","raw":"b"}]}\n]}')
    errors = []
    for on_item in (None, lambda item: None):
        reader = DocumentReader(on_item=on_item)
        with pytest.raises(P2pdError) as got:
            reader.feed(bad)
            reader.finish()
        errors.append(str(got.value))
    assert errors[0] == errors[1] and "exactly one" in errors[0]
