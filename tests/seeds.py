"""The seed of a randomized test: ``P2PD_TEST_SEED`` when it is set (to replay a failure), else a fresh one —
printed either way, so a failing run says how to replay it."""

from __future__ import annotations

import os
import random


def seeded() -> tuple[int, random.Random]:
    seed = int(os.environ.get("P2PD_TEST_SEED") or int.from_bytes(os.urandom(4), "big"))
    print("seed", seed)
    return seed, random.Random(seed)
