"""The sender's packing process alone: CPU seconds and what it produces, per session.

Runs ``python -m p2pd.exchange.producer SESSION WORK`` (what ``p2pd send`` starts) on every session asked for,
``--repeat`` times each, and prints its CPU time (user + system, from ``wait4``: the machine's cores are shared,
wall time would measure the neighbours) as min / median / max, its peak RSS, and a digest of what it produced —
the decompressed document and the offer (``S`` record). ``--save FILE`` keeps the digests; ``--compare FILE``
checks them against a saved run, so a change to the conversion can be shown to give the same bytes::

    PYTHONPATH=/old/tree python tests/bench/packing.py --repeat 1 --save /tmp/before.json
    PYTHONPATH=$PWD python tests/bench/packing.py --repeat 1 --compare /tmp/before.json

The code under test is the one ``PYTHONPATH`` names (the child inherits it). Sessions: every corpus transcript
(Claude Code, subagent files included as sessions of their own; Codex; Gemini), a session of odd lines, and
generated real-shaped sessions of ``--sizes`` MB (default 50,200; the same generator and seeds as
``tests/bench/handover.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import zstandard

from tests.bench.producer_records import records
from tests.corpus import claude_code_files, codex_files, file_id, gemini_files

MB = 1_000_000


def odd_session() -> bytes:
    """A real-shaped session with every odd line the index tests know, and odd numbers, escapes and spacing."""
    from tests.agents.claude_code.test_line_index import ODD_LINES
    from tests.transfer.gen import generate_conversation

    extra = [b'{"no":"type"}', b'{"type":7,"uuid":"t7"}', b'{"type":"system","content":"\\u00e9 \\/ 1.50e2"}',
             b'{"type":"progress","data":{"a":[1,2.5,-0.0,1E2,1e-7,12345678901234567890,true,null]}} ',
             b'{"type":"progress", "data":{"b":"\\ud83d\\ude00\\u2028\\t\\u001f\\u007f"}}',
             b'{"type":"progress","k":1,"k":2}', b'{"type":"system","x":"\\ud800"}', b"{}", b"[]",
             b'{"type":"queue-operation","content":"caf\xc3\xa9 \xe2\x80\xa8"}']
    return (generate_conversation(300_000, seed=3) + b"\n".join(ODD_LINES[:-1] + extra) + b"\n"
            + generate_conversation(200_000, seed=4) + ODD_LINES[-1])


def run(session: Path, work: Path) -> tuple[float, int, str, str]:
    """One run, through a wrapper process that reaps the packing process itself (for its ``wait4`` figures): CPU
    seconds, peak RSS (KiB), the document's digest and the offer."""
    proc = subprocess.Popen([sys.executable, __file__, "--one", str(session), str(work)], stdout=subprocess.PIPE)
    out, _ = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"{session}: the packing process failed")
    cpu, rss, digest, offer = json.loads(out)
    return cpu, rss, digest, offer


def one(session: Path, work: Path) -> None:
    # (-P: the code PYTHONPATH names, not a p2pd in the current folder, which ``-m`` would put first)
    proc = subprocess.Popen([sys.executable, "-P", "-m", "p2pd.exchange.producer", str(session), str(work)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:  # (a failure is an outcome too: its text is compared)
        print(json.dumps([usage.ru_utime + usage.ru_stime, usage.ru_maxrss, "failed", err.decode(errors="replace")]))
        return
    inflate = zstandard.ZstdDecompressor().decompressobj()
    digest = hashlib.sha256()
    offer = ""
    for tag, data in records(out):
        if tag == b"D":
            digest.update(inflate.decompress(data))
        elif tag == b"S":
            offer = data.decode()
        elif tag == b"E":
            digest.update(b"E" + data)
    print(json.dumps([usage.ru_utime + usage.ru_stime, usage.ru_maxrss, digest.hexdigest(), offer]))


def sessions(work: Path, sizes: list[str], corpus: bool) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    if corpus:
        out += [(file_id(p), p) for p in [*claude_code_files(), *codex_files(), *gemini_files()]]
        odd = work / "odd.jsonl"
        odd.write_bytes(odd_session())
        out.append(("odd lines", odd))
    handover = Path(__file__).with_name("handover.py")
    for size in sizes:
        path = work / f"generated-{size}mb.jsonl"
        subprocess.run([sys.executable, str(handover), "--generate", str(path), str(int(float(size) * MB)),
                        str(int(float(size) * 10))], check=True)
        out.append((f"generated {size} MB", path))
    return out


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--one":
        one(Path(sys.argv[2]), Path(sys.argv[3]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="50,200", help="generated sessions, comma-separated MB (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per session (default %(default)s)")
    ap.add_argument("--no-corpus", action="store_true", help="only the generated sessions")
    ap.add_argument("--save", type=Path, help="write the digests here")
    ap.add_argument("--compare", type=Path, help="check the digests against a saved run")
    args = ap.parse_args()
    saved = json.loads(args.compare.read_text()) if args.compare else None
    digests: dict[str, list[str]] = {}
    differ = 0
    print(f"{'session':64} {'CPU s min / median / max':>26} {'RSS MiB':>8}  same")
    # (a fixed folder: the document names the transcript's path, and runs to compare must name the same)
    work = Path(tempfile.gettempdir()) / "p2pd-packing-bench"
    spool = work / "spool"
    spool.mkdir(parents=True, exist_ok=True)
    try:
        for name, path in sessions(work, [s for s in args.sizes.split(",") if s], not args.no_corpus):
            runs = [run(path, spool) for _ in range(max(1, args.repeat))]
            cpus = [r[0] for r in runs]
            produced = {(r[2], r[3]) for r in runs}
            if len(produced) != 1:
                raise SystemExit(f"{name}: runs differ")
            digests[name] = list(next(iter(produced)))
            same = "" if saved is None else ("yes" if saved.get(name) == digests[name] else "NO")
            differ += same == "NO"
            print(f"{name:64} {min(cpus):8.3f} / {statistics.median(cpus):6.3f} / {max(cpus):6.3f} "
                  f"{max(r[1] for r in runs) / 1024:8.0f}  {same}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.save:
        args.save.write_text(json.dumps(digests, indent=1))
    if saved is not None:
        missing = set(saved) - set(digests)
        print(f"{differ} differ, {len(missing)} not run" if differ or missing else "all the same bytes")
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
