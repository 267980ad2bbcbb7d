from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.signal_process import SignalProcess, signal_server


@pytest.fixture(scope="session")
def shared_server() -> Iterator[SignalProcess]:
    """One real server for tests that do not exhaust a limit."""
    with signal_server("--joins-per-minute", "100000", "--messages-per-second", "1000", "--message-burst", "1000",
                       "--room-capacity", "2", "--max-room-capacity", "4") as server:
        yield server
