"""Shared settings of the property-based fuzz tests: seeded (the seed is printed; ``P2PD_FUZZ_SEED`` changes
it) and bounded in time — a few seconds each by default (``P2PD_FUZZ_SECONDS``, ``P2PD_FUZZ_EXAMPLES``); the long
run is ``tests/bench/fuzz.py``."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, seed, settings

SEED = int(os.environ.get("P2PD_FUZZ_SEED", "20261123"))
SECONDS = float(os.environ.get("P2PD_FUZZ_SECONDS", "4"))
EXAMPLES = int(os.environ.get("P2PD_FUZZ_EXAMPLES", "400"))


class Budget:
    """The time one fuzz test may take: examples after it is spent return at once (hypothesis has no time
    limit of its own)."""

    def __init__(self, seconds: float = SECONDS) -> None:
        self.seconds = seconds
        self.started: float | None = None
        self.examples = 0

    def spent(self) -> bool:
        now = time.monotonic()
        if self.started is None:
            self.started = now
        if now - self.started > self.seconds:
            return True
        self.examples += 1
        return False


def fuzz(test: Callable[..., Any]) -> Callable[..., Any]:
    """Seeded, many examples, no per-example deadline (the Budget bounds the whole)."""
    print(f"{test.__module__}.{test.__name__}: fuzz seed {SEED} (P2PD_FUZZ_SEED), {SECONDS:g} s "
          f"(P2PD_FUZZ_SECONDS)")
    configured = settings(max_examples=EXAMPLES, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.function_scoped_fixture])(test)
    return seed(SEED)(configured)  # type: ignore[no-any-return]
