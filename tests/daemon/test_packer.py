"""The daemon's packing process (p2pd/daemon/packer.py) and the outbox built on it (p2pd/daemon/outbox.py): what it
writes is the document the whole-document path makes (handoff package and redaction included), and the daemon
itself never builds a whole document to send, export or hand off a conversation."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from p2pd.agents.sources import load_file
from p2pd.blob.codecs import CODECS
from p2pd.blob.stream import check_file, iter_raw
from p2pd.conversation.redact import redact_document
from p2pd.daemon.handoffs import HandoffPackage, attach_package, package_metadata
from p2pd.daemon.home import Home
from p2pd.daemon.outbox import Source, outbox_info, pack_outbox
from p2pd.daemon.packer import Job, run
from p2pd.daemon.ready_blob import ReadyBlob
from p2pd.daemon.service import DaemonService
from p2pd.daemon.store import Store
from p2pd.errors import NotFoundError
from tests.agents.claude_code.helpers import Session
from tests.corpus import claude_code_files
from tests.daemon.conftest import corpus_session

SECRET = "sk-ant-api03-" + "A1b2C3d4E5" * 8


def with_subagents() -> Path:
    """A corpus session that has subagents (their files beside it), else the daemon tests' session."""
    for p in claude_code_files(include_subagents=False):
        if (p.parent / p.stem / "subagents").is_dir() and p.stat().st_size < 2_000_000:
            return p
    return corpus_session()


def written(path: Path) -> Any:
    return json.loads(b"".join(iter_raw(path)) if path.name.endswith(".p2pd") else path.read_bytes())


@pytest.mark.parametrize("session", [corpus_session(), with_subagents()], ids=["plain", "subagents"])
def test_a_streamed_session_with_a_package_packs_to_what_the_whole_document_path_makes(tmp_path: Path,
                                                                                        session: Path) -> None:
    package = HandoffPackage(summary="carry on", goal="ship it", cwd=str(tmp_path))
    out = tmp_path / "out.a2a.p2pd"
    result = run(Job(str(session), str(out), metadata=package_metadata(package, handoff_id="ho_1")))
    whole = load_file(session)
    attach_package(whole, package, handoff_id="ho_1")
    expected = whole.to_json_dict()
    assert written(out) == expected
    assert result["sha256"] == check_file(out).sha256.hex()
    assert result["head"] == {k: v for k, v in expected.items() if k in result["head"]}
    assert result["head"]["counts"] == expected["counts"] and "messages" not in result["head"]


def test_redaction_and_other_documents_go_through_the_whole_path_in_the_child(tmp_path: Path) -> None:
    s = Session()
    s.user(f"deploy with ANTHROPIC_API_KEY={SECRET} please")
    s.assistant([{"type": "text", "text": "done"}])
    src = s.write(tmp_path / "proj")
    out = tmp_path / "red.a2a.json"
    run(Job(str(src), str(out), kind="json", redact=True))
    data = out.read_text()
    assert SECRET not in data and "[REDACTED:" in data
    assert json.loads(data) == redact_document(load_file(src))[0].to_json_dict()
    # a document (not a session) is read whole, its own metadata kept beside an added package
    doc = load_file(src)
    doc.metadata = {"mine": 1}
    (tmp_path / "doc.a2a.json").write_text(json.dumps(doc.to_json_dict()))
    run(Job(str(tmp_path / "doc.a2a.json"), str(tmp_path / "again.a2a.json"), kind="json",
            metadata={"p2pd_handoff": {"id": "ho_2"}}))
    assert written(tmp_path / "again.a2a.json")["metadata"] == {"mine": 1, "p2pd_handoff": {"id": "ho_2"}}


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the daemon built a whole document in its own memory")


@pytest.fixture
def no_whole_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process, every way of building, writing or reading a whole document (or converting a session)
    fails: whatever name a module imported it under (its code is replaced)."""
    from p2pd.agents.claude_code import streamed
    from p2pd.agents.sources import load_conversation
    from p2pd.conversation import document_io, layout

    for fn in (load_file, load_conversation, document_io.dumps, document_io.read_document,
               document_io.parse_document, layout.document_lines, streamed.write_session, redact_document):
        monkeypatch.setattr(fn, "__code__", _refuse.__code__)


def test_the_outbox_packs_in_a_child_process_and_keeps_the_offer_beside(tmp_path: Path,
                                                                        no_whole_documents: None) -> None:
    packed = asyncio.run(pack_outbox(Source(str(corpus_session())), tmp_path / "outbox"))
    assert packed.path == tmp_path / "outbox" / f"{packed.sha256}.a2a.p2pd"
    assert check_file(packed.path).sha256.hex() == packed.sha256
    assert outbox_info(packed.path) == packed.info and packed.info.message_count > 0
    assert len(list((tmp_path / "outbox").iterdir())) == 2  # the blob and its offer, no staging left
    again = asyncio.run(pack_outbox(Source(str(corpus_session())), tmp_path / "outbox"))
    assert again.path == packed.path


def test_the_service_exports_hands_off_and_forks_without_a_whole_document(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         no_whole_documents: None) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))  # (inherited by the packing process)
    session = corpus_session()
    service = DaemonService(Home(tmp_path / "home"), Store(tmp_path / "state.sqlite3"))

    async def work() -> None:
        exported = await service.export(transcript_path=str(session), redact=False)
        assert Path(exported["path"]).parent == tmp_path / "home" / "exports" and exported["messages"] > 0
        assert written(Path(exported["path"]))["origin"]["transcriptPath"] == str(session.resolve())
        blob = await service.export(transcript_path=str(session), redact=True, compressed=True,
                                    output=str(tmp_path / "x.a2a.p2pd"))
        assert check_file(blob["path"]).sha256 and blob["messages"] == exported["messages"]
        row = await service.create_handoff(HandoffPackage(summary="go on"), transcript_path=str(session),
                                           redact=False)
        assert row.source["messages"] == exported["messages"]
        assert row.document_path and written(Path(row.document_path))["metadata"]["p2pd_handoff"]["id"] == row.id
        with pytest.raises(NotFoundError):
            await service.export("no-such-session")
        folder = tmp_path / "fork"
        folder.mkdir()
        forked = await service.agent_sessions.delegate(transcript_path=str(session), directory=str(folder))
        assert Path(forked["transcript_path"]).is_file() and forked["session_id"] != exported["session_id"]
        assert not list((tmp_path / "home").glob(".p2pd-fork-*"))  # its work folder is gone

    asyncio.run(work())


def test_a_ready_blob_streams_its_payload_and_makes_lz4_for_a_peer_without_zstd(tmp_path: Path) -> None:
    packed = asyncio.run(pack_outbox(Source(str(corpus_session())), tmp_path / "outbox", codec="zstd"))
    ready = ReadyBlob(packed.path, packed.info).production(tmp_path)
    try:
        header = check_file(packed.path)
        payload = b""
        while chunk := ready.read(len(payload), 10_000, 1):
            payload += chunk
        assert len(payload) == header.compressed_size and ready.totals()[2] == header.sha256
        assert ready.summary().codec == "zstd" and ready.summary().raw_estimate == header.raw_size
        assert ready.blobs((CODECS["zstd"].wire_id,)) == [packed.path]
        (lz4,) = ready.blobs((CODECS["lz4"].wire_id,))
        assert check_file(lz4).codec == "lz4" and b"".join(iter_raw(lz4)) == b"".join(iter_raw(packed.path))
    finally:
        ready.close()


@pytest.mark.parametrize("kind", ["lz4", "json"])
def test_a_handoffs_package_is_read_from_the_envelope_as_from_the_whole_document(tmp_path: Path, kind: str) -> None:
    """A daemon restarted after it filed a granted handoff finishes its import from the package in the document's
    metadata (handoff_work.resume): read from the envelope as a stream, never the whole document in the daemon."""
    from p2pd.agents.file_source import document_envelope
    from p2pd.daemon.handoffs import METADATA_KEY, package_of

    package = {"folder": str(tmp_path), "note": "carry on"}
    out = tmp_path / f"handoff.{kind}"
    run(Job(str(claude_code_files()[0]), str(out), kind=kind, metadata={METADATA_KEY: package}))
    assert package_of(document_envelope(out)) == package_of(load_file(out)) == package
