"""The seed of a randomized test: ``P2PD_TEST_SEED`` when it is set (to replay a failure), else a fresh one —
printed either way, so a failing run says how to replay it."""

from __future__ import annotations

import os
import random

RUN_SEED = "P2PD_RUN_SEED"  # one fresh seed for a whole run, set by tests/conftest.py before any worker starts


def run_seed() -> int:
    """The run's fresh seed (the same in every pytest-xdist worker; set it to replay a run)."""
    return int(os.environ.get(RUN_SEED) or int.from_bytes(os.urandom(4), "big"))


def seeded() -> tuple[int, random.Random]:
    seed = int(os.environ.get("P2PD_TEST_SEED") or int.from_bytes(os.urandom(4), "big"))
    print("seed", seed)
    return seed, random.Random(seed)
