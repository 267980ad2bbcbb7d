"""Fuzz of the document parser through its public entry points (``parse_document``, ``read_document``): random
bytes, random JSON, near-valid documents, deep nesting, huge strings, mutated real documents and blobs. Each input
ends as a ConversationDocument or as InvalidInputError / TooLargeError (P2pdError subclasses, one clear line) —
never another exception. Seeded and time-bounded (tests/fuzzing.py)."""

from __future__ import annotations

import json
import resource
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p2pd.agents.sources import load_file
from p2pd.blob import container as blob
from p2pd.conversation.document_io import dumps, parse_document, read_document
from p2pd.conversation.model import ConversationDocument
from p2pd.errors import InvalidInputError, P2pdError, TooLargeError
from tests.corpus import claude_code_files
from tests.fuzzing import Budget, fuzz

SMALL = next(f for f in claude_code_files(include_subagents=False) if f.name == "short.jsonl")
VALID = dumps(load_file(SMALL), pretty=False)
MESSAGE = json.loads(VALID)["messages"][0]

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=20)
FIELDS = ["format", "formatVersion", "contextId", "createdAt", "origin", "title", "messages", "subagents",
          "metadata", "summary", "role", "parts", "messageId", "text", "data", "kind", "mediaType", "raw"]


@st.composite
def near_documents(draw: st.DrawFn) -> bytes:
    """A real document with fields replaced, removed or added, messages mangled."""
    doc = json.loads(VALID)
    for _ in range(draw(st.integers(1, 4))):
        target = doc if draw(st.booleans()) or not doc.get("messages") else \
            draw(st.sampled_from(doc["messages"])) if isinstance(doc.get("messages"), list) and doc["messages"] \
            else doc
        if not isinstance(target, dict):
            continue
        action = draw(st.sampled_from(["set", "drop", "message"]))
        key = draw(st.sampled_from(FIELDS))
        if action == "set":
            target[key] = draw(values)
        elif action == "drop":
            target.pop(key, None)
        elif isinstance(doc.get("messages"), list):
            mangled = dict(MESSAGE)
            mangled[draw(st.sampled_from(FIELDS))] = draw(values)
            doc["messages"].append(mangled)
    return json.dumps(doc, allow_nan=True).encode()


@st.composite
def mutated_bytes(draw: st.DrawFn) -> bytes:
    """The valid document's bytes (or its blob) flipped, cut or spliced."""
    base = bytearray(blob.encode(VALID) if draw(st.booleans()) else VALID)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "cut", "insert"]))
        at = draw(st.integers(0, len(base)))
        if op == "flip" and at < len(base):
            base[at] ^= draw(st.integers(1, 255))
        elif op == "cut":
            del base[at: at + draw(st.integers(1, 4000))]
        else:
            base[at:at] = draw(st.binary(min_size=1, max_size=16))
    return bytes(base)


hostile = st.sampled_from([
    b"[" * 100_000 + b"]" * 100_000,  # 10^5-deep nesting
    b'{"messages":' + b"[" * 5000 + b"]" * 5000 + b"}",
    b'{"messages":[' + b",".join([b'{"role":"user","parts":[{"text":"x"}]}'] * 20_000) + b"]}",
    b'{"title":"' + b"x" * 5_000_000 + b'","messages":[]}',  # a huge string
    b'{"messages":[{"role":"ROLE_USER","parts":[{"text":"\\ud800"}]}]}',
    b'{"formatVersion": 99999, "format": "p2pd.conversation"}',
    b"\xef\xbb\xbf{}", b"", b"null", b"1e999", b"NaN", b'"\\u0000"',
])
inputs = st.one_of(st.binary(max_size=300), st.text(max_size=200).map(str.encode), values.map(
    lambda v: json.dumps(v, allow_nan=True).encode()), near_documents(), mutated_bytes(), hostile)

_PARSE = Budget()


def _outcome(work) -> str:  # type: ignore[no-untyped-def]
    try:
        result = work()
    except (InvalidInputError, TooLargeError) as exc:
        assert isinstance(exc, P2pdError) and str(exc) and "\n" not in str(exc)
        return "refused"
    assert isinstance(result, ConversationDocument)
    return "parsed"


_WINDOW: dict[str, int] = {}


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            return next((int(line.split()[1]) for line in fh if line.startswith(field + ":")), None)
    except OSError:
        return None


@pytest.fixture(scope="module")
def peak_window() -> None:
    """The process's peak RSS is measured from here on: Linux resets it (``/proc/self/clear_refs``) to the RSS
    now, which is the base (this process may have run other tests first: a pytest-xdist worker does)."""
    _WINDOW["base"] = (_status_kib("VmRSS") or 0) * 1024
    try:
        Path("/proc/self/clear_refs").write_text("5")
        _WINDOW["reset"] = 1
    except OSError:
        _WINDOW["base"] = 0  # (no reset: the peak is the process's whole life's, held to the bound as it is)


@fuzz
@given(raw=inputs)
def test_parse_document_returns_a_document_or_a_typed_refusal(peak_window: None, raw: bytes) -> None:
    if _PARSE.spent():
        return
    if raw.startswith(blob.MAGIC):
        _outcome(lambda: parse_document(blob.decode(raw), source="fuzz"))  # blob errors are typed too
    else:
        _outcome(lambda: parse_document(raw, source="fuzz"))


_READ = Budget()


@fuzz
@given(raw=inputs, cap=st.sampled_from([None, 100, 10_000]))
def test_read_document_returns_a_document_or_a_typed_refusal(peak_window: None, tmp_path: Path, raw: bytes,
                                                             cap: int | None) -> None:
    if _READ.spent():
        return
    path = tmp_path / "in.a2a"
    path.write_bytes(raw)
    _outcome(lambda: read_document(path) if cap is None else read_document(path, max_size=cap))


def test_the_fuzz_ran_in_bounded_memory(peak_window: None) -> None:
    """After the two fuzz tests above (same process): they ran examples, and the peak RSS while they ran grew at
    most 512 MiB over the process's RSS before them."""
    hwm = _status_kib("VmHWM") if _WINDOW.get("reset") else None
    peak = hwm * 1024 if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    grew = peak - _WINDOW["base"]
    print(f"parse fuzz: {_PARSE.examples} + {_READ.examples} examples, peak RSS {peak / 2**20:.0f} MiB "
          f"({grew / 2**20:+.0f} MiB over the RSS before them)")
    assert _PARSE.examples > 0 and _READ.examples > 0
    assert grew < 512 * 2**20
