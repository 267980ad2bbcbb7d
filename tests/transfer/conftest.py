from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

try:
    import uvloop
except ImportError:  # pragma: no cover
    uvloop = None


def pytest_asyncio_loop_factories(config: pytest.Config,
                                  item: pytest.Item) -> Mapping[str, Callable[[], Any]]:
    """Transfer tests run on uvloop, as the daemon does (aiortc is about twice as fast on it)."""
    import asyncio

    if uvloop is not None:
        return {"uvloop": uvloop.new_event_loop}
    return {"asyncio": asyncio.new_event_loop}
