"""Fixtures for tests on a simulated internet (internet.py). Skipped, with the reason, where namespaces cannot
be made (not root, no ``ip netns``, no iptables/conntrack) or coturn's ``turnserver`` is missing (``.ci/setup``
installs them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.net import internet as net


@pytest.fixture(scope="session")
def internet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[net.Internet]:
    why = net.why_unavailable()
    if why is not None:
        pytest.skip(f"network-namespace tests skipped: {why}")
    with net.internet(tmp_path_factory.mktemp("internet")) as world:
        yield world
