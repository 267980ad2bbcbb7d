"""The receiver's checking child alone: CPU seconds (user+sys) of ``python -m p2pd.exchange.consumer`` per MB.

For each size it generates a real-shaped session (``tests/bench/handover.py --generate``), packs it with the
sending packing child (``python -m p2pd.exchange.producer``, zstd records as on the wire), then starts the
checking child the way a receive does and feeds it the payload in CHUNK frames of the data channel's size
(64 KiB less the frame's 26 bytes), ``S`` … ``D`` … ``E``. Its CPU comes from ``wait4`` (four helpers may share
the cores: wall time says little). Prints min/median/max over the runs and the child's peak RSS.

    PYTHONPATH=$PWD python tests/bench/consumer.py [--runs 3] [--chunk 65510] [--work DIR] [50 200 ...]

Sizes are in MB (default 50 200); inputs are kept in the work dir (default /tmp/p2pd-bench-consumer) and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.bench.producer_records import records as producer_records  # noqa: E402

MB = 1_000_000


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def payload(work: Path, size_mb: float, seed: int) -> tuple[list[bytes], int]:
    """The zstd payload of a generated session of ``size_mb`` (made once) and its raw size."""
    session = work / f"g{size_mb:g}.jsonl"
    records = work / f"p{size_mb:g}.bin"
    if not records.exists():
        if not session.exists():
            subprocess.run([sys.executable, str(HERE / "handover.py"), "--generate", str(session),
                            str(int(size_mb * MB)), str(seed)], check=True, env=_env())
        pack = work / f"pack{size_mb:g}"
        pack.mkdir(exist_ok=True)
        with records.open("wb") as out:
            subprocess.run([sys.executable, "-m", "p2pd.exchange.producer", str(session), str(pack)], check=True,
                           stdout=out, env=_env())
    raw_size, parts = -1, []
    for tag, body in producer_records(records.read_bytes()):
        if tag == b"D":
            parts.append(body)
        elif tag == b"E":
            raw_size = int(json.loads(body)["raw_size"])
    return parts, raw_size


def run_once(parts: list[bytes], raw_size: int, chunk: int, work: Path) -> tuple[float, int]:
    """(user+sys CPU seconds, peak RSS KiB) of one checking child fed the payload in ``chunk``-byte pieces."""
    blob = b"".join(parts)
    fd, staged = tempfile.mkstemp(prefix=".p2pd-receiving-", suffix=".a2a.json.part", dir=work)
    os.close(fd)
    proc = subprocess.Popen([sys.executable, "-m", "p2pd.exchange.consumer"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    def record(tag: bytes, data: bytes) -> None:
        assert proc.stdin is not None
        proc.stdin.write(tag + len(data).to_bytes(4, "big") + data)

    try:
        record(b"S", json.dumps({"codec": "zstd", "staged": staged, "max_raw_size": 4 << 30}).encode())
        for i in range(0, len(blob), chunk):
            record(b"D", blob[i:i + chunk])
        record(b"E", raw_size.to_bytes(8, "big"))
        proc.stdin.close()
        out = proc.stdout.read()
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"the checking child failed ({proc.returncode}): {err.decode(errors='replace')}")
        json.loads(out)
        if os.path.getsize(staged) != raw_size:
            raise SystemExit("the staged document is not the payload")
        return usage.ru_utime + usage.ru_stime, usage.ru_maxrss
    finally:
        os.unlink(staged)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sizes", nargs="*", type=float, default=[50.0, 200.0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=65536 - 26)
    ap.add_argument("--seed", type=int, default=2000)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "p2pd-bench-consumer")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    print(f"checking child CPU (user+sys), {args.runs} runs, chunk {args.chunk} B, seed {args.seed}")
    for size in args.sizes:
        parts, raw_size = payload(args.work, size, args.seed)
        got = [run_once(parts, raw_size, args.chunk, args.work) for _ in range(args.runs)]
        cpu = sorted(c for c, _ in got)
        rss = max(r for _, r in got) / 1024
        print(f"{size:g} MB ({raw_size / MB:.1f} MB document, {sum(map(len, parts)) / MB:.1f} MB zstd): "
              f"CPU min {cpu[0]:.2f} s / median {statistics.median(cpu):.2f} s / max {cpu[-1]:.2f} s, "
              f"{statistics.median(cpu) / (raw_size / MB) * 1000:.1f} ms per document MB, peak RSS {rss:.0f} MiB",
              flush=True)


if __name__ == "__main__":
    main()
