"""The packing process (p2pd/exchange/producer.py, producing.py): a spare started ahead packs what a process
started for the job packs, and one left without a job ends with its parent's pipe; an agent's session goes
converted as a stream."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import pytest

from p2pd.errors import Cause, P2pdError, TooLargeError
from p2pd.exchange import spare as spare_process
from p2pd.exchange.producing import Production
from tests.exchange.test_handover import SESSION, over_an_element


def pack(session: Path, work: Path) -> tuple[bytes, dict]:
    work.mkdir()
    prod = Production.start(session, work)
    try:
        blob = prod.wait_complete().read_bytes()
        head = prod.head
        assert head is not None
        return blob, head
    finally:
        prod.close()


def test_a_spare_packs_the_same_blob_as_a_process_started_for_the_job(tmp_path):
    plain_blob, plain_head = pack(SESSION, tmp_path / "plain")
    spare_process.prespawn()
    spare = spare_process.spare()
    assert spare is not None
    blob, head = pack(SESSION, tmp_path / "spare")
    assert spare_process.spare() is None  # taken
    assert (blob, head) == (plain_blob, plain_head)
    spare.wait(30)  # it had its job (a spare without one would wait on its input)


def test_a_spare_closed_without_a_job_ends_and_is_forgotten():
    spare_process.prespawn()
    spare = spare_process.spare()
    assert spare is not None and spare.poll() is None  # waiting for its job
    spare_process.close()
    assert spare.returncode == 0 and spare_process.spare() is None
    assert spare.stdout is not None and spare.stdout.read() == b""  # nothing packed
    spare_process.close()  # (none: nothing to do)


def test_a_spare_without_a_job_ends_when_its_input_closes_and_is_replaced(tmp_path):
    spare_process.prespawn()
    spare = spare_process.spare()
    assert spare is not None and spare.stdin is not None
    spare.stdin.close()
    assert spare.wait(30) == 0
    assert spare.stdout is not None and spare.stdout.read() == b""  # nothing packed
    # the next packing takes the spare, finds it gone, and starts a process for the job
    blob, head = pack(SESSION, tmp_path / "after")
    assert spare_process.spare() is None
    assert head["contextId"] == SESSION.stem and len(blob) > 0


E = TypeVar("E", bound=P2pdError)


def packing_failure(source: Path, work: Path, kind: type[E]) -> tuple[E, int]:
    """The error the packing process of ``source`` ends with (it must be a ``kind``), and how many payload bytes
    it had produced."""
    work.mkdir()
    prod = Production.start(source, work)
    try:
        with pytest.raises(kind) as caught:
            prod.wait_complete()
        return caught.value, prod.size
    finally:
        prod.close()


def test_the_packing_processs_own_error_reaches_the_sender_typed(tmp_path):
    """Its class, cause and details cross the process boundary (an ``X`` record), not only its text."""
    error, _ = packing_failure(over_an_element(tmp_path / "huge.jsonl"), tmp_path / "work", TooLargeError)
    assert error.cause is Cause.TOO_LARGE
    assert error.details is not None and error.details["element"] == "message"
    assert error.details["bytes"] > error.details["limit"] == 64 << 20


@pytest.mark.parametrize("kind", ["codex", "gemini"])
def test_the_packing_process_sends_an_agents_session_converted_as_a_stream(tmp_path: Path, kind: str) -> None:
    """A Codex rollout and a Gemini CLI JSONL recording (p2pd/agents/codex/streamed.py, gemini/streamed.py): the
    streamed writer's bytes, which are the whole way's, offered as the whole way offers them."""
    from p2pd.agents.codex.export import export_rollout
    from p2pd.agents.gemini.export import export_gemini
    from p2pd.agents.sources import streamable_session
    from tests.agents.helpers import line_layout, offer_of, packed_in_process
    from tests.transfer.gen import generate_recording, generate_rollout

    name, generate, export = {"codex": ("rollout.jsonl", generate_rollout, export_rollout),
                              "gemini": ("session-2026-03-24T15-43-gen.jsonl", generate_recording, export_gemini)}[kind]
    path = tmp_path / name
    path.write_bytes(generate(1_500_000, seed=5))
    assert streamable_session(str(path)) == path
    payload, head = packed_in_process(path, tmp_path / "work")
    doc = export(path)
    assert payload == line_layout(doc)
    assert head == offer_of(doc)
