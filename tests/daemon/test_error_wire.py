"""Errors keep their kind across the HTTP API and MCP: the daemon's app (in process, through real ASGI requests)
answers with the error's cause, party and exit code, and the client rebuilds the same class — a 409 is not always
a ConflictError, a changed key is not a 500."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from p2pd.daemon.api import HTTP_STATUS, create_app
from p2pd.daemon.client import DaemonClient, error_of
from p2pd.daemon.home import Home
from p2pd.daemon.mcp_tools import tool_error
from p2pd.daemon.service import DaemonService, NoNetworkError
from p2pd.daemon.store import Store
from p2pd.errors import (
    CLASS_BY_CAUSE,
    BusyError,
    Cause,
    ConflictError,
    DeclinedError,
    DeviceKeyChangedError,
    DeviceOfflineError,
    ExitCode,
    NotFoundError,
    P2pdError,
    Party,
    PeerGoneError,
    PeerTimeoutError,
    SignalingError,
    TransferCancelledError,
)

TOKEN = "t0ken"
pytestmark = pytest.mark.filterwarnings("ignore:You should not use the 'timeout' argument")

# (error raised inside the daemon, the status it must answer with)
CASES: list[tuple[P2pdError, int]] = [
    (NotFoundError("no transfer tr_x"), 404),
    (ConflictError("handoff ho_x is already claimed"), 409),
    (BusyError("this blob is being received by another transfer right now"), 409),
    (DeclinedError("the receiver declined the offer (declined): not now", peer_text="not now"), 409),
    (DeviceKeyChangedError("device 'laptop' presented a DIFFERENT KEY", details={"pinned": "ab12"}), 409),
    (NoNetworkError(), 409),
    (PeerGoneError("transfer failed (peer_gone): the data channel was closed"), 502),
    (PeerTimeoutError("no data from the peer for 30 s"), 504),
    (SignalingError("signaling server unreachable", cause=Cause.SIGNALING_UNREACHABLE), 502),
    (DeviceOfflineError("device 'laptop' is not connected"), 503),
    (TransferCancelledError("transfer cancelled by the peer: stop", party=Party.PEER), 409),
    (P2pdError("something broke"), 500),
]


def test_every_cause_has_an_http_status_and_a_changed_key_is_not_a_server_error() -> None:
    assert set(HTTP_STATUS) == set(Cause)
    assert all(400 <= status < 600 for status in HTTP_STATUS.values())
    assert HTTP_STATUS[Cause.KEY_CHANGED] == 409
    assert [c for c, s in HTTP_STATUS.items() if s == 500] == [Cause.UNEXPECTED]


@pytest.fixture
def app_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    service = DaemonService(Home(tmp_path / "home"), Store(tmp_path / "state.sqlite3"))
    raised: list[P2pdError] = []

    async def get_transfer(transfer_id: str) -> Any:
        raise raised[0]

    monkeypatch.setattr(service, "get_transfer", get_transfer)
    http = TestClient(create_app(service, TOKEN), base_url="http://127.0.0.1",
                      headers={"Authorization": f"Bearer {TOKEN}"})
    return raised, http


@pytest.mark.parametrize(("error", "status"), CASES, ids=[type(e).__name__ + ":" + e.cause for e, _ in CASES])
def test_an_error_crosses_the_http_api_with_its_kind(app_client: Any, error: P2pdError, status: int) -> None:
    raised, http = app_client
    raised[:] = [error]
    r = http.get("/transfers/tr_x")
    assert r.status_code == status, r.text
    body = r.json()
    assert body["cause"] == error.cause.value and body["party"] == error.party.value
    assert body["exit_code"] == int(error.exit_code) and body["error"] == error.message
    with DaemonClient("http://127.0.0.1", TOKEN, http=http) as client, pytest.raises(P2pdError) as caught:
        client.get("/transfers/tr_x")
    got = caught.value
    assert type(got) is CLASS_BY_CAUSE[error.cause]
    assert (got.cause, got.party, got.exit_code, got.message) == (error.cause, error.party, error.exit_code,
                                                                  error.message)
    assert got.peer_text == error.peer_text and got.details == error.details


def test_a_409_is_told_apart_by_its_cause(app_client: Any) -> None:
    raised, http = app_client
    kinds = []
    for error in (ConflictError("taken"), BusyError("busy"), DeviceKeyChangedError("key"), NoNetworkError()):
        raised[:] = [error]
        assert http.get("/transfers/tr_x").status_code == 409
        kinds.append(error_of(409, http.get("/transfers/tr_x").json()))
    assert [type(k) for k in kinds] == [ConflictError, BusyError, DeviceKeyChangedError, ConflictError]
    assert [k.cause for k in kinds] == [Cause.CONFLICT, Cause.BUSY, Cause.KEY_CHANGED, Cause.NO_NETWORK]
    assert kinds[2].exit_code == ExitCode.KEY_CHANGED


def test_framework_errors_carry_a_cause_too(app_client: Any) -> None:
    _, http = app_client
    wrong = TestClient(http.app, base_url="http://127.0.0.1", headers={"Authorization": "Bearer nope"})
    r = wrong.get("/stats")
    assert r.status_code == 401 and r.json()["cause"] == "unauthorized"
    assert error_of(401, r.json()).cause is Cause.UNAUTHORIZED
    r = http.post("/handoffs", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["cause"] == "usage"
    assert error_of(422, r.json()).exit_code == ExitCode.INVALID_INPUT
    r = http.get("/no/such/path")
    assert r.status_code == 404 and error_of(404, r.json()).cause is Cause.NOT_FOUND


def test_a_body_without_a_cause_falls_back_to_the_status() -> None:
    assert type(error_of(404, {"error": "gone"})) is NotFoundError
    assert type(error_of(409, {"error": "x"})) is ConflictError
    assert error_of(500, "not json").message == "the daemon answered HTTP 500"


@pytest.mark.parametrize(("error", "status"), CASES[:6])
def test_mcp_tool_errors_carry_the_cause(error: P2pdError, status: int) -> None:
    text = str(tool_error(error))
    assert text == f"[{error.cause.value}] {error.message}"
