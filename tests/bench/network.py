"""Across-the-internet benchmark on the simulated internet of tests/net/ (needs root and coturn):

    .venv/bin/python tests/bench/network.py [--size-mb 50] [--repeat 1]

For the 3.5 MB corpus session and a generated conversation of ``--size-mb`` MB, across: the same LAN (direct),
two cone NATs with STUN (direct through NAT), two symmetric NATs (relayed, TURN over UDP), no UDP at all
(relayed, TURN over TCP), it prints
  * time to verified: from starting ``p2pd receive`` until both commands exited with the SHA-256 verified
    (includes process start-up, pairing, relay probes, ICE, the transfer and the receiver's decompression);
  * the transfer alone: the sender's own figure (HELLO to DONE) and the wire rate it implies.
No delay or loss is simulated (``tc netem`` is not in this kernel).
"""

from __future__ import annotations

import argparse
import re
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
    "symmetric NATs (TURN/UDP)": dict(modes=("symmetric", "symmetric")),
    "no UDP (TURN/TCP)": dict(modes=("noudp", "noudp")),
}
_SENT = re.compile(r"Sent .*: ([0-9.]+) (KB|MB|GB|B) in ([0-9.]+)s")


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
                    if not ok:
                        print(f"  {name:34s} FAILED: {runs[-1].sender_err.strip().splitlines()[-1:]}")
                        continue
                    best = min(ok, key=lambda r: r.seconds)
                    m = _SENT.search(best.sender_err)
                    wire = ""
                    if m:
                        scale = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9}[m.group(2)]
                        size, secs = float(m.group(1)) * scale, float(m.group(3))
                        wire = f"; transfer {secs:.1f} s for {size / MB:.2f} MB lz4 = {size / MB / secs:.2f} MB/s"
                    print(f"  {name:34s} verified in {best.seconds:5.1f} s = {raw / MB / best.seconds:5.2f} MB/s "
                          f"raw end to end{wire}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
