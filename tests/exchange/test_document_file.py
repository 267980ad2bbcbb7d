"""Sending a conversation document file (p2pd/exchange/document_file.py, through the real packing process): one
p2pd wrote goes as it is, once checked; any other is loaded whole and written again; either way the receiver
reads the same model as the whole way makes, and a document that is not one fails with a typed error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p2pd.agents.sources import load_file, named_file
from p2pd.blob.stream import iter_raw
from p2pd.conversation.document_io import write_document
from p2pd.conversation.stream_reader import read_whole
from p2pd.daemon.packer import Job, run
from p2pd.errors import Cause, InvalidInputError, TooLargeError
from p2pd.exchange.producing import Production
from tests.corpus import codex_files, gemini_files
from tests.exchange.test_handover import SESSION
from tests.exchange.test_producing import packing_failure


def sent(path: Path, work: Path) -> tuple[bytes, dict]:
    """The document the packing process sends for ``path`` (the payload, decompressed) and its offer."""
    work.mkdir()
    prod = Production.start(path, work)
    try:
        blob = prod.wait_complete()
        assert prod.head is not None
        return b"".join(iter_raw(blob)), prod.head
    finally:
        prod.close()


def documents(tmp_path: Path) -> list[Path]:
    """Documents p2pd writes: a Claude Code session exported as it is converted (the line layout, title and
    counts last; one with subagents), as a blob, and indented; a Codex and a Gemini session written whole."""
    out = []
    for name, job in (("streamed.a2a.json", Job(str(SESSION), "", kind="json")),
                      ("blob.a2a.p2pd", Job(str(SESSION), "", kind="zstd")),
                      ("pretty.a2a.json", Job(str(SESSION), "", kind="json", pretty=True))):
        job.out = str(tmp_path / name)
        run(job)
        out.append(tmp_path / name)
    for source in (codex_files()[:1] + gemini_files()[:1]):
        path = tmp_path / f"{source.stem}.a2a.json"
        write_document(load_file(source), path, pretty=False)
        out.append(path)
    return out


def test_a_document_p2pd_wrote_is_sent_as_it_is_and_reads_as_the_whole_way_reads_it(tmp_path):
    docs = documents(tmp_path)
    assert len(docs) == 5, "the corpus has a Codex and a Gemini session"
    for n, path in enumerate(docs):
        assert named_file(str(path)) == path
        payload, head = sent(path, tmp_path / f"work{n}")
        whole = load_file(path)
        as_written = b"".join(iter_raw(path)) if path.suffix == ".p2pd" else path.read_bytes()
        assert payload == as_written, path.name  # not read into models and written again
        assert read_whole([payload], source="payload") == whole, path.name
        assert head == {"title": whole.title, "contextId": whole.context_id, "origin": whole.origin.to_json_dict(),
                        "counts": {"messages": whole.counts.messages}}, path.name


def _rewritten(path: Path, change) -> Path:
    data = json.loads(path.read_bytes())
    change(data)
    out = path.with_name(f"changed-{path.name}")
    out.write_text(json.dumps(data))
    return out


@pytest.mark.parametrize("what", ["no summary", "stale counts", "A2A 0.3 messages", "bare message list",
                                  "an older format version"])
def test_any_other_document_is_loaded_whole_and_reads_as_the_whole_way_reads_it(tmp_path, what):
    plain = tmp_path / "plain.a2a.json"
    write_document(load_file(codex_files()[0]), plain, pretty=False)

    def legacy(data: dict) -> None:  # an A2A 0.3 message: "kind": "message", a role of 0.3
        m = data["messages"][0]
        m["kind"] = "message"
        m["role"] = {"ROLE_USER": "user", "ROLE_AGENT": "agent"}[m["role"]]

    changes = {
        "no summary": lambda d: d.pop("summary"),
        "stale counts": lambda d: d["counts"].update(messages=d["counts"]["messages"] + 1),
        "A2A 0.3 messages": legacy,
        "bare message list": None,
        "an older format version": lambda d: d.update(formatVersion=0),
    }
    if what == "bare message list":
        path = tmp_path / "list.json"
        path.write_text(json.dumps(json.loads(plain.read_bytes())["messages"]))
    else:
        path = _rewritten(plain, changes[what])
    whole = load_file(path)
    payload, head = sent(path, tmp_path / "work")
    assert payload != path.read_bytes()  # written again
    assert read_whole([payload], source="payload") == whole
    assert head["counts"] == {"messages": whole.counts.messages}


def test_a_file_that_is_no_document_fails_typed_and_names_where(tmp_path):
    plain = tmp_path / "plain.a2a.json"
    run(Job(str(SESSION), str(plain), kind="json"))
    lines = plain.read_bytes().split(b"\n")
    lines[3] = lines[3][: len(lines[3]) // 2]  # a message cut in half
    broken = tmp_path / "broken.a2a.json"
    broken.write_bytes(b"\n".join(lines))
    error, _ = packing_failure(broken, tmp_path / "work", InvalidInputError)
    assert error.cause is Cause.INVALID_INPUT
    assert str(broken) in str(error)


def test_a_document_over_a_receivers_limits_is_refused_before_anything_goes(tmp_path):
    """Its element over the receiver's limit is found by the checking pass: no payload byte is produced."""
    plain = tmp_path / "plain.a2a.json"
    run(Job(str(SESSION), str(plain), kind="json"))
    lines = plain.read_bytes().split(b"\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(b',{"messageId"'))
    doc = tmp_path / "huge.a2a.json"
    with doc.open("wb") as fh:  # a message of one 65 MiB text part, written in pieces
        fh.write(b"\n".join(lines[:at]) + b'\n,{"messageId":"big","role":"ROLE_USER","parts":[{"text":"')
        for _ in range(65):
            fh.write(b"x" * (1 << 20))
        fh.write(b'","mediaType":"text/plain"}]}\n' + b"\n".join(lines[at:]))
    error, produced = packing_failure(doc, tmp_path / "work", TooLargeError)
    assert produced == 0
    assert error.cause is Cause.TOO_LARGE


def test_the_daemons_packing_process_writes_a_document_p2pd_wrote_as_it_is(tmp_path):
    """``POST /send`` and ``POST /export`` of a document: a blob of its JSON as it is, and the envelope it reports
    the one the whole way reads (a masked or annotated one is written again: covered by the packer's tests)."""
    from p2pd.daemon.outbox import envelope_of

    doc = tmp_path / "plain.a2a.json"
    run(Job(str(SESSION), str(doc), kind="json"))
    result = run(Job(str(doc), str(tmp_path / "out.a2a.p2pd"), kind="zstd"))
    assert b"".join(iter_raw(tmp_path / "out.a2a.p2pd")) == doc.read_bytes()
    whole = load_file(doc)
    envelope = envelope_of(result["head"])
    assert (envelope.title, envelope.counts, envelope.origin, envelope.summary) == \
        (whole.title, whole.counts, whole.origin, whole.summary)
    masked = run(Job(str(doc), str(tmp_path / "masked.a2a.json"), kind="json", redact=True))
    assert (tmp_path / "masked.a2a.json").read_bytes() != doc.read_bytes() and "masked" in masked


def test_send_redact_masks_as_streams_and_leaves_no_work_folder(tmp_path):
    """``p2pd send --redact`` (no peer: the fallback file): the counts are said before the code would be, the
    conversation that travels is the masked one the whole way makes, and the private work folder is gone."""

    from p2pd.conversation.redact import redact_document
    from p2pd.exchange.handover import SEND_WORK_PREFIX
    from tests.agents.claude_code.helpers import Session
    from tests.cli.helpers import run as cli

    secret = "sk-ant-api03-" + "A1b2C3d4E5" * 8
    s = Session()
    s.user(f"deploy with ANTHROPIC_API_KEY={secret} please")
    s.assistant([{"type": "text", "text": "done"}])
    src = s.write(tmp_path / "proj")
    temp = tmp_path / "temp"  # the send's own temporary folder (other tests may run sends meanwhile)
    temp.mkdir()
    r = cli("send", str(src), "--redact", "--signal", "ws://127.0.0.1:9/", "--timeout", "2", "--connect-timeout",
            "2", "--fallback-dir", str(tmp_path / "out"), "--json",
            env={"P2PD_CONFIG": str(tmp_path / "none.toml"), "TMPDIR": str(temp)})
    assert r.returncode == 7, r.stderr
    masked, report = redact_document(load_file(src))
    assert f"Redaction: {report.describe()}" in r.stderr and report.total > 0
    data = json.loads(r.stdout)
    assert data["redacted"] is True
    sent = Path(data["fallback_file"]).read_bytes()
    assert secret.encode() not in sent and b"[REDACTED:" in sent
    assert read_whole([sent], source="fallback") == masked
    assert not list(temp.glob(f"{SEND_WORK_PREFIX}*"))  # the masked copy's work folder is gone


def test_a_team_document_p2pd_wrote_goes_as_it_is_unless_its_summary_is_stale(tmp_path):
    """A document with agent-team state was always loaded whole (294 MiB for a 50 MB one): the whole way
    summarizes such a document again. It now goes as it is when that summary is the one it stores (a second
    checking pass); a stale one is still made again."""
    from tests.conversation.test_teams import team_session

    session = team_session().write(tmp_path / "proj")
    exported = tmp_path / "team.a2a.json"
    run(Job(str(session), str(exported), kind="json"))
    whole = load_file(exported)
    assert whole.metadata and whole.metadata["teams"]["tasks"] and "team task(s) open" in (whole.summary or "")
    payload, head = sent(exported, tmp_path / "work")
    assert payload == exported.read_bytes()  # as it is
    assert read_whole([payload], source="payload") == whole
    assert head["title"] == whole.title

    def finished(data: dict) -> None:  # the team's open task closed in the state, the summary left as it was
        for task in data["metadata"]["teams"]["tasks"].values():
            task["status"] = "completed"

    stale = _rewritten(exported, finished)
    whole = load_file(stale)
    assert "team task(s) open" not in (whole.summary or "")
    payload, _ = sent(stale, tmp_path / "work2")
    assert payload != stale.read_bytes()  # written again, summarized again
    assert read_whole([payload], source="payload") == whole
