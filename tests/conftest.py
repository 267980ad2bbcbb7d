from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.corpus import CORPUS
from tests.machine import machine
from tests.seeds import RUN_SEED


def pytest_configure(config: pytest.Config) -> None:
    """A run started as a background job of a non-interactive shell (a CI script's ``cmd &``) inherits SIGINT
    ignored, and so would every program the tests start: the tests that press Ctrl-C at a p2pd (tests/cli/
    test_terminal.py, tests/exchange/test_streamed.py) would see nothing happen. A terminal's programs have SIGINT
    at its default: the run gets it back, and a handled signal is reset to the default in the programs it execs."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # One fresh seed for the run, drawn before the workers start (pytest-xdist: they inherit the environment), so
    # that a test parametrized by a fresh seed (tests/daemon/test_chaos.py) is collected the same by every worker.
    if RUN_SEED not in os.environ:
        os.environ[RUN_SEED] = str(int.from_bytes(os.urandom(4), "big"))
    if LOCKS not in os.environ:  # (the workers inherit it: one pair of lock files for the run)
        os.environ[LOCKS] = tempfile.mkdtemp(prefix="p2pd-test-locks-")


LOCKS = "P2PD_TEST_LOCKS"


@pytest.fixture(autouse=True)
def _machine(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked ``alone`` runs while no other test does (its assertions time the machine: frame gaps in the
    page, how fast a cancel is heard); every other test may run beside any other (pytest-xdist)."""
    folder = Path(os.environ.get(LOCKS) or tempfile.gettempdir())
    with machine(folder, alone=request.node.get_closest_marker("alone") is not None):
        yield


@pytest.fixture(scope="session")
def corpus_dir():  # type: ignore[no-untyped-def]
    if CORPUS is None:
        pytest.fail("the shared transcript corpus was not found; set P2PD_CORPUS")
    return CORPUS
