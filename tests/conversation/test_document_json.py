"""The fast JSON path (orjson, no garbage collection during bulk work) writes and reads exactly what the
``json`` writer did: the compact bytes are identical on every corpus session, and what orjson refuses (a lone
surrogate, a huge integer, NaN) still goes through ``json`` with the same result."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

from p2pd.agents.sources import load_file
from p2pd.conversation import json_text
from p2pd.conversation.document_io import compact_json, dumps, escape_lone_surrogates, parse_document
from p2pd.support.gcpause import bulk_work
from tests.corpus import claude_code_files, codex_files, file_id, gemini_files


def reference(data: object) -> bytes:
    """The writer before orjson: ``json`` compact, lone surrogates escaped."""
    return escape_lone_surrogates(json.dumps(data, ensure_ascii=False, separators=(",", ":"))).encode("utf-8")


SESSIONS = [*claude_code_files(include_subagents=False), *codex_files(), *gemini_files()]


@pytest.mark.skipif(not SESSIONS, reason="no transcript corpus")
@pytest.mark.parametrize("path", SESSIONS, ids=[file_id(p) for p in SESSIONS])
def test_compact_bytes_equal_json_writer(path: Path) -> None:
    doc = load_file(path)
    data = doc.to_json_dict()
    assert compact_json(data) == reference(data)
    assert dumps(doc, pretty=False) == reference(data)
    back = parse_document(dumps(doc, pretty=False))
    assert back.to_json_dict() == data
    pretty = dumps(doc, pretty=True)  # the pretty form is still json's indent=1, unchanged
    assert pretty == escape_lone_surrogates(json.dumps(data, ensure_ascii=False, indent=1)).encode() + b"\n"


@pytest.mark.parametrize("value", ["cut emoji \ud83d", 2**70, {"1": [1.5, -0.0, 1e16, 5e-324, "é\u2028\x1f\""]}])
def test_values_orjson_refuses_or_formats_fall_back_to_json(value: object) -> None:
    data = {"k": value}
    assert compact_json(data) == reference(data)


def test_small_exponents_differ_only_in_formatting() -> None:
    """The one formatting difference: orjson writes ``1e-7`` where json wrote ``1e-07`` (the same number)."""
    data = {"k": [1e-7, 2.5e-10]}
    assert json.loads(compact_json(data)) == json.loads(reference(data)) == data


def test_parse_reads_what_only_json_reads() -> None:
    text = ('{"format":"p2pd.conversation","formatVersion":1,"contextId":"c","createdAt":"","origin":'
            '{"platform":"claude-code"},"messages":[{"messageId":"m","role":"ROLE_USER","parts":[{"text":"\\ud83d"}]}]}')
    doc = parse_document(text.encode())
    assert doc.messages[0].parts[0].text == "\ud83d"
    assert dumps(doc, pretty=False) == reference(doc.to_json_dict())


def test_orjson_is_used_when_installed() -> None:
    pytest.importorskip("orjson")
    assert json_text.orjson is not None


def test_bulk_work_pauses_collection_and_nests() -> None:
    assert gc.isenabled()
    with bulk_work():
        assert not gc.isenabled()
        with bulk_work():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()
    gc.disable()
    try:
        with bulk_work():
            pass
        assert not gc.isenabled()  # off before: stays off
    finally:
        gc.enable()


def test_freeze_after_pauses_hides_the_bulk_objects_from_the_collector() -> None:
    """In a short-lived process (the CLI) the objects made during a pause are frozen when it ends; without the
    switch (the daemon) nothing is frozen. Run in subprocesses: freezing is process-wide."""
    probe = ("import gc, sys\nfrom p2pd.support import gcpause\n"
             "if sys.argv[1] == 'on': gcpause.freeze_after_pauses()\n"
             "with gcpause.bulk_work():\n    made = [[i] for i in range(50_000)]\n"
             "print(gc.get_freeze_count())\n")
    counts = {}
    for switch in ("on", "off"):
        r = subprocess.run([sys.executable, "-c", probe, switch], capture_output=True, text=True, timeout=60)
        counts[switch] = int(r.stdout)
    assert counts["on"] >= 50_000 and counts["off"] == 0
