"""The packing process (p2pd/exchange/producer.py, producing.py): a spare started ahead packs what a process
started for the job packs, and one left without a job ends with its parent's pipe."""

from __future__ import annotations

from pathlib import Path

import pytest

from p2pd.errors import Cause, TooLargeError
from p2pd.exchange import producing
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
    producing.prespawn()
    spare = producing.spare()
    assert spare is not None
    blob, head = pack(SESSION, tmp_path / "spare")
    assert producing.spare() is None  # taken
    assert (blob, head) == (plain_blob, plain_head)
    spare.wait(30)  # it had its job (a spare without one would wait on its input)


def test_a_spare_without_a_job_ends_when_its_input_closes_and_is_replaced(tmp_path):
    producing.prespawn()
    spare = producing.spare()
    assert spare is not None and spare.stdin is not None
    spare.stdin.close()
    assert spare.wait(30) == 0
    assert spare.stdout is not None and spare.stdout.read() == b""  # nothing packed
    # the next packing takes the spare, finds it gone, and starts a process for the job
    blob, head = pack(SESSION, tmp_path / "after")
    assert producing.spare() is None
    assert head["contextId"] == SESSION.stem and len(blob) > 0


def test_the_packing_processs_own_error_reaches_the_sender_typed(tmp_path):
    """Its class, cause and details cross the process boundary (an ``X`` record), not only its text."""
    session = over_an_element(tmp_path / "huge.jsonl")
    (tmp_path / "work").mkdir()
    prod = Production.start(session, tmp_path / "work")
    try:
        with pytest.raises(TooLargeError) as caught:
            prod.wait_complete()
    finally:
        prod.close()
    assert caught.value.cause is Cause.TOO_LARGE
    assert caught.value.details is not None and caught.value.details["element"] == "message"
    assert caught.value.details["bytes"] > caught.value.details["limit"] == 64 << 20
