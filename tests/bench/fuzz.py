"""The long fuzz run: the property-based fuzz tests (document parser, transfer receiver and frame decoder,
signaling registry and the real signaling server) with a larger time budget and example count per test.

    python tests/bench/fuzz.py [--seconds 300] [--examples 100000] [--seed N]

Prints each test's seed and outcome (pytest -s); exit status is pytest's. In CI the same tests run for a few
seconds each (tests/fuzzing.py)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ["tests/conversation/test_fuzz.py", "tests/transfer/test_fuzz.py", "tests/signaling/test_fuzz.py"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=300.0, help="time budget per fuzz test")
    parser.add_argument("--examples", type=int, default=100_000, help="examples per fuzz test (at most)")
    parser.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: the tests' own)")
    args = parser.parse_args()
    env = {**os.environ, "P2PD_FUZZ_SECONDS": str(args.seconds), "P2PD_FUZZ_EXAMPLES": str(args.examples),
           "PYTHONPATH": str(ROOT)}
    if args.seed is not None:
        env["P2PD_FUZZ_SEED"] = str(args.seed)
    return subprocess.call([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", *TESTS],
                           cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
