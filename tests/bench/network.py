"""Across-the-internet benchmark on the simulated internet of tests/net/ (needs root and coturn):

    .venv/bin/python tests/bench/network.py [--size-mb 50] [--repeat 1]

For the 3.5 MB corpus session and a generated conversation of ``--size-mb`` MB, across: the same LAN (direct),
two cone NATs with STUN (direct through NAT), the same with a TURN relay on offer too (as p2pd-signal is
deployed: still direct, directfirst.py), two symmetric NATs (relayed, TURN over UDP), no UDP at all
(relayed, TURN over TCP), it prints
  * time to verified, min / median / max over ``--repeat`` runs: from starting ``p2pd receive`` until both
    commands exited with the SHA-256 verified (includes process start-up, the wait for the code, pairing, relay
    probes, ICE, the transfer and the receiver's checks);
  * the transfer: the sender's own figure, HELLO to DONE, and the compressed bytes sent. The payload streams while
    it is packed, so this is bound by the packing as much as by the wire.
No delay or loss is simulated (``tc netem`` is not in this kernel).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.net.internet import (  # noqa: E402
    CORPUS_SESSION,
    STUN_SIGNAL_PORT,
    internet,
    transfer,
    why_unavailable,
)
from tests.transfer.gen import generate_conversation  # noqa: E402

MB = 1_000_000
TOPOLOGIES = {
    "same LAN (direct)": dict(modes=("cone", "cone"), sender_ns="hb2"),
    "cone NATs + STUN (through NAT)": dict(modes=("cone", "cone"), signal_port=STUN_SIGNAL_PORT),
    "cone NATs, STUN + TURN on offer": dict(modes=("cone", "cone")),
    "symmetric NATs (TURN/UDP)": dict(modes=("symmetric", "symmetric")),
    "no UDP (TURN/TCP)": dict(modes=("noudp", "noudp")),
}
_SENT = re.compile(r"Sent .*: ([0-9.]+) (KB|MB|GB|B) in ([0-9.]+)s")


def _sent(err: str) -> tuple[float, float] | None:
    """The sender's own figure: (compressed bytes, seconds from HELLO to DONE)."""
    m = _SENT.search(err)
    if m is None:
        return None
    return float(m.group(1)) * {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9}[m.group(2)], float(m.group(3))


def spread(values: list[float]) -> str:
    """min / median / max."""
    return f"{min(values):.1f} / {statistics.median(values):.1f} / {max(values):.1f}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size-mb", type=float, default=50)
    p.add_argument("--repeat", type=int, default=1)
    args = p.parse_args()
    why = why_unavailable()
    if why is not None:
        print(f"cannot run: {why}")
        return 2
    with tempfile.TemporaryDirectory(prefix="p2pd-netbench-") as tmp:
        big = Path(tmp) / "generated.jsonl"
        big.write_bytes(generate_conversation(int(args.size_mb * MB)))
        with internet(Path(tmp)) as world:
            for session in (CORPUS_SESSION, big):
                raw = session.stat().st_size
                print(f"{session.name}: {raw / MB:.1f} MB raw")
                for name, kw in TOPOLOGIES.items():
                    runs = [transfer(world, session=session, timeout=300, **kw)  # type: ignore[arg-type]
                            for _ in range(args.repeat)]
                    ok = [r for r in runs if r.sender_rc == 0 and r.receiver_rc == 0]
                    failed = "" if len(ok) == len(runs) else f" ({len(runs) - len(ok)} of {len(runs)} FAILED)"
                    if not ok:
                        print(f"  {name:34s} FAILED: {runs[-1].sender_err.strip().splitlines()[-1:]}")
                        continue
                    sent = [_sent(r.sender_err) for r in ok]
                    wire = ""
                    if all(x is not None for x in sent):
                        size = statistics.median(x[0] for x in sent if x is not None)
                        secs = [x[1] for x in sent if x is not None]
                        wire = f"; sent {size / MB:.2f} MB compressed in {spread(secs)} s (HELLO to DONE)"
                    print(f"  {name:34s} verified in {spread([r.seconds for r in ok])} s{wire}{failed}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
