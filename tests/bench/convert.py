"""Conversion benchmark: Claude Code JSONL → A2A document → wire blob, for every corpus file.

Prints, per file: its size, conversion throughput (MB/s of JSONL in, best of N runs: parse + convert +
serialize), the document size, and the wire blob size as a percentage of the raw transcript for lz4 (the
default codec) and zstd. Run: ``.venv/bin/python tests/bench/convert.py``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from p2pd.agents.claude_code.export import export_session
from p2pd.conversation.document_io import dumps, to_blob
from tests.corpus import claude_code_files, file_id

RUNS = 3


def main() -> None:
    print(f"{'file':62} {'raw KB':>8} {'MB/s':>7} {'doc KB':>8} {'lz4 %':>6} {'zstd %':>7}")
    tot_raw = tot_time = tot_lz4 = tot_zstd = 0.0
    for path in claude_code_files(include_subagents=False):
        raw = path.stat().st_size
        best = float("inf")
        doc_json = b""
        for _ in range(RUNS):
            t0 = time.perf_counter()
            doc = export_session(path)
            doc_json = dumps(doc, pretty=False)
            best = min(best, time.perf_counter() - t0)
        # the document also carries the session's subagent files: count them as input too
        sub_raw = sum(p.stat().st_size for p in (path.with_suffix("") / "subagents").rglob("*.jsonl")) \
            if path.with_suffix("").is_dir() else 0
        total_in = raw + sub_raw
        lz4_size = len(to_blob(doc, "lz4"))
        zstd_size = len(to_blob(doc, "zstd"))
        tot_raw += total_in
        tot_time += best
        tot_lz4 += lz4_size
        tot_zstd += zstd_size
        print(f"{file_id(path):62} {total_in / 1e3:8.0f} {total_in / 1e6 / best:7.1f} {len(doc_json) / 1e3:8.0f} "
              f"{100 * lz4_size / total_in:6.1f} {100 * zstd_size / total_in:7.1f}")
    print(f"{'TOTAL':62} {tot_raw / 1e3:8.0f} {tot_raw / 1e6 / tot_time:7.1f} {'':>8} "
          f"{100 * tot_lz4 / tot_raw:6.1f} {100 * tot_zstd / tot_raw:7.1f}")


if __name__ == "__main__":
    main()
