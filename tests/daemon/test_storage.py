"""A daemon whose disk refuses a write on the sending side: ``POST /send`` (the outbox) and ``POST /export`` answer
507 with cause ``storage``, naming the folder or file the person knows (not a staging file); they used to answer
500 "OSError: [Errno 28] …" as an unexpected failure. A real full disk (tests/full_disk.py)."""

from __future__ import annotations

import errno
from collections.abc import Iterator

import pytest

from tests.daemon.conftest import SESSION_ID, Daemon
from tests.full_disk import FullDisk

pytestmark = pytest.mark.slow


@pytest.fixture
def full_outbox(daemon: Daemon) -> Iterator[tuple[Daemon, FullDisk]]:
    disk = FullDisk(daemon.home / "outbox")
    try:
        yield daemon, disk
    finally:
        daemon.kill()
        disk.unmount()


def test_a_full_disk_is_a_storage_error_naming_the_outbox_or_the_export(
        full_outbox: tuple[Daemon, FullDisk]) -> None:
    d, disk = full_outbox
    with d.client() as c:
        r = c.post("/send", json={"session": SESSION_ID, "to": {"code": ""}})
        assert r.status_code == 507, r.text
        body = r.json()
        assert (body["cause"], body["kind"], body["details"]) == ("storage", "StorageError", {"errno": errno.ENOSPC})
        assert body["error"] == f"cannot write into the outbox {disk.folder}: No space left on device"
        target = disk.folder / "mine.a2a.json"
        r = c.post("/export", json={"session": SESSION_ID, "output": str(target)})
        assert r.status_code == 507 and r.json()["error"] == f"cannot write {target}: No space left on device", r.text
        assert [t["state"] for t in c.get("/transfers").json()] == []  # nothing queued that cannot be sent
    assert disk.files() == []
