"""p2pd/cli/daemon.py: the daemon's list/show commands print the records it returns (peer text shown safely),
``send --to`` maps the transfer's state to an exit code, and without a daemon the commands say how to start it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from p2pd.cli.main import main
from p2pd.errors import ExitCode

EVIL = "t [/] \u202eevil"
EVIL_SHOWN = "t [/] \\u202eevil"


class FakeClient:
    """Answers like the daemon's HTTP API for the paths these tests use; records what was asked."""

    def __init__(self, answers: dict[tuple[str, str], Any]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, str, Any]] = []

    def __enter__(self) -> FakeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def _answer(self, method: str, path: str, body: Any = None) -> Any:
        self.asked.append((method, path, body))
        return self.answers[(method, path)]

    def get(self, path: str, **params: Any) -> Any:
        return self._answer("GET", path, params or None)

    def post(self, path: str, body: Any = None, *, timeout: float | None = None) -> Any:
        return self._answer("POST", path, body)

    def delete(self, path: str) -> Any:
        return self._answer("DELETE", path)

    def request(self, method: str, path: str, **_: Any) -> Any:
        return self._answer(method, path)


@pytest.fixture
def daemon(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[tuple[str, str], Any]]:
    answers: dict[tuple[str, str], Any] = {}
    client = FakeClient(answers)
    monkeypatch.setattr("p2pd.daemon.client.DaemonClient.connect", lambda why="": client)
    monkeypatch.setenv("COLUMNS", "250")
    yield answers


TRANSFER = {"id": "tr-0001", "direction": "out", "peer": "dev \u202e1", "state": "running", "title": EVIL,
            "bytes_done": 1500, "size": 3000, "updated_at": "2026-11-23T10:00:00+00:00", "error": None}


def test_transfers_table_and_record(daemon: dict[tuple[str, str], Any], capsys: pytest.CaptureFixture[str]) -> None:
    daemon[("GET", "/transfers")] = [TRANSFER]
    daemon[("GET", "/transfers/tr-0001")] = TRANSFER
    assert main(["transfers"]) == ExitCode.OK
    table = capsys.readouterr().out
    assert EVIL_SHOWN in table and "dev \\u202e1" in table and "1.5 KB/3.0 KB" in table and "\u202e" not in table
    assert main(["transfers", "tr-0001"]) == ExitCode.OK
    record = capsys.readouterr().out.splitlines()
    assert f"title: {EVIL_SHOWN}" in record and "state: running" in record


def test_inbox_and_handoffs(daemon: dict[tuple[str, str], Any], capsys: pytest.CaptureFixture[str]) -> None:
    daemon[("GET", "/inbox")] = []
    daemon[("GET", "/inbox/pending")] = []
    daemon[("GET", "/transfers")] = []  # (state=verified: none waits to be filed)
    assert main(["inbox"]) == ExitCode.OK
    assert capsys.readouterr().err.startswith("The inbox is empty.")
    daemon[("DELETE", "/inbox/in-1")] = {"title": EVIL}
    assert main(["inbox", "rm", "in-1"]) == ExitCode.OK
    assert capsys.readouterr().err == f"Removed in-1 ({EVIL_SHOWN}) and its file.\n"
    with pytest.raises(SystemExit) as usage:  # a usage error, as argparse reports them: exit 2
        main(["inbox", "show"])
    assert usage.value.code == ExitCode.USAGE
    assert "inbox show needs an id" in capsys.readouterr().err
    daemon[("GET", "/handoffs")] = [{"id": "h-1", "state": "pending", "target": "any", "claimed_by": None,
                                     "title": EVIL, "created_at": "2026-11-23T10:00:00"}]
    assert main(["handoffs"]) == ExitCode.OK
    assert EVIL_SHOWN in capsys.readouterr().out


def test_pending_transfers_are_listed_and_answered(daemon: dict[tuple[str, str], Any],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    daemon[("GET", "/inbox")] = []
    daemon[("GET", "/transfers")] = []
    daemon[("GET", "/inbox/pending")] = [{**TRANSFER, "direction": "in", "state": "queued",
                                          "created_at": "2026-11-23T10:00:00+00:00",
                                          "detail": {"pending": True, "raw_size": 4096, "device": "lap\u202etop"}}]
    assert main(["inbox"]) == ExitCode.OK
    captured = capsys.readouterr()
    assert "Waiting for your decision" in captured.err and "p2pd inbox accept ID" in captured.err
    assert "tr-0001" in captured.out and EVIL_SHOWN in captured.out and "4.1 KB" in captured.out
    assert "lap\\u202etop" in captured.out and "\u202e" not in captured.out
    daemon[("POST", "/transfers/tr-0001/accept")] = {**TRANSFER, "state": "running"}
    daemon[("POST", "/transfers/tr-0001/decline")] = {**TRANSFER, "state": "failed"}
    assert main(["inbox", "accept", "tr-0001"]) == ExitCode.OK
    assert capsys.readouterr().err == f"Accepted tr-0001 ({EVIL_SHOWN}): running.\n"
    assert main(["inbox", "decline", "tr-0001"]) == ExitCode.OK
    assert capsys.readouterr().err == f"Declined tr-0001 ({EVIL_SHOWN}): failed.\n"


@pytest.mark.parametrize(("state", "code"), [("done", ExitCode.OK), ("failed", ExitCode.TRANSFER_FAILED),
                                             ("cancelled", ExitCode.TRANSFER_FAILED), ("running", ExitCode.OK)])
def test_send_to_a_device_exit_code_follows_the_state(daemon: dict[tuple[str, str], Any],
                                                      capsys: pytest.CaptureFixture[str], state: str,
                                                      code: ExitCode) -> None:
    row = {**TRANSFER, "state": state, "detail": {}, "error": "peer said: \u202eno" if state == "failed" else None}
    daemon[("POST", "/send")] = row
    daemon[("GET", "/transfers/tr-0001")] = row  # send --to follows the transfer (device_send.follow)
    daemon[("GET", "/devices")] = [{"id": "dev \u202e1", "name": "laptop", "state": "online"}]
    assert main(["send", "latest", "--to", "laptop", "--timeout", "0.3"]) == code
    captured = capsys.readouterr()
    assert captured.out == "tr-0001\n"
    assert ("Sent to laptop" in captured.err) == (state == "done")
    assert (f"Not sent to laptop: {state}" in captured.err) == (state in ("failed", "cancelled"))
    assert ("— peer said: \\u202eno" in captured.err) == (state == "failed")
    assert ("Still under way" in captured.err) == (state == "running")


def test_send_to_a_device_whose_disk_refused_it_says_so_not_that_the_device_is_away(
        daemon: dict[tuple[str, str], Any], capsys: pytest.CaptureFixture[str]) -> None:
    row = {**TRANSFER, "state": "interrupted", "cause": "peer_storage", "detail": {"storage_refusals": 1},
           "error": "the receiver could not store the conversation (is its disk full?); it is sent again in 10 s"}
    daemon[("POST", "/send")] = row
    daemon[("GET", "/transfers/tr-0001")] = row
    daemon[("GET", "/devices")] = [{"id": "dev \u202e1", "name": "laptop", "state": "online"}]
    assert main(["send", "latest", "--to", "laptop", "--timeout", "0.3"]) == ExitCode.OK  # (it stays queued)
    err = capsys.readouterr().err
    assert "laptop (online): interrupted, the receiver could not store the conversation" in err, err
    assert "The daemon sends it again by itself: `p2pd transfers tr-0001` shows it." in err, err
    assert "sent when the device is online" not in err and "Still under way" not in err, err


def test_without_a_daemon_the_commands_say_how_to_start_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("P2PD_HOME", str(tmp_path / "home"))
    for args in (["transfers"], ["inbox"], ["handoffs", "stats"], ["send", "latest", "--to", "laptop"]):
        assert main(args) == ExitCode.ERROR
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1 and "daemon is not running" in lines[0] and "p2pd serve" in lines[0], lines
