from __future__ import annotations

import pytest

from tests.corpus import CORPUS


def pytest_report_header(config: pytest.Config) -> str:
    return f"p2pd corpus: {CORPUS if CORPUS else 'NOT FOUND (set P2PD_CORPUS)'}"


@pytest.fixture(scope="session")
def corpus_dir():  # type: ignore[no-untyped-def]
    if CORPUS is None:
        pytest.fail("the shared transcript corpus was not found; set P2PD_CORPUS")
    return CORPUS
