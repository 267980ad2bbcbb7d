"""Kill/restart chaos benchmark: many seeded runs of ``tests/daemon/chaos.py`` (real ``p2pd-signal`` and two
paired ``p2pd serve`` daemons; sends and handoffs while either daemon or the server is SIGKILLed or SIGTERMed and
restarted, and cancels), then a summary table.

    .venv/bin/python tests/bench/chaos.py [--runs 50] [--seed N] [--settle 150]

Each run prints its seed, steps and verdict; a failing seed is reproduced alone with
``P2PD_CHAOS_SEED=N P2PD_CHAOS_RUNS=1 pytest tests/daemon/test_chaos.py``. The table: runs, items (sends and
handoffs), kills, cancels accepted, runs that failed (with their seeds) and the time to settle after the last step
(min / median / max). Exit 1 when any run broke a property.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.daemon import chaos  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: a fresh random one)")
    ap.add_argument("--settle", type=float, default=chaos.SETTLE, help="seconds to wait for everything to settle")
    args = ap.parse_args()
    first = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    print(f"chaos benchmark: {args.runs} runs from seed {first}", flush=True)
    outcomes: list[chaos.Outcome] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="p2pd-chaos-") as tmp:
        template = chaos.make_template(Path(tmp) / "template")
        for i in range(args.runs):
            seed = first + i
            try:
                out = chaos.run_once(seed, template, Path(tmp) / f"run-{seed}", settle=args.settle)
            except AssertionError as exc:  # the driver itself could not act (a process did not start)
                out = chaos.Outcome(seed, violations=[f"driver: {exc}"])
            outcomes.append(out)
            print(out.describe().split("\n  desk log")[0][:3000], flush=True)
    failed = [o for o in outcomes if not o.ok]
    settle = [o.settle_seconds for o in outcomes]
    print()
    print("| runs | items (sends+handoffs) | kills | cancels | failed runs | settle s min/median/max | wall s |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {len(outcomes)} | {sum(len(o.sent) for o in outcomes)} "
          f"({sum(s.kind == 'send' for o in outcomes for s in o.sent)}+"
          f"{sum(s.kind == 'handoff' for o in outcomes for s in o.sent)}) | {sum(o.kills for o in outcomes)} | "
          f"{sum(o.cancels for o in outcomes)} | {len(failed)}"
          f"{' (seeds ' + ', '.join(str(o.seed) for o in failed) + ')' if failed else ''} | "
          f"{min(settle):.1f} / {statistics.median(settle):.1f} / {max(settle):.1f} | "
          f"{time.monotonic() - started:.0f} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
