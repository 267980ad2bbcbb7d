"""Daemon memory and disk after big transfers: a real ``p2pd-signal`` and two paired ``p2pd serve`` daemons;
the desk sends the laptop N generated sessions of SIZE MB each (real-shaped: the corpus's Claude Code lines,
``tests/transfer/gen.py``), one after the other, each through ``POST /send`` and followed until the laptop has it
in its inbox.

    .venv/bin/python tests/bench/memory.py [--count 10] [--mb 100] [--outbox-mb 300] [--partial-mb 300]

Printed per daemon, in MiB: RSS cold (both online, nothing sent yet), idle (after one small warm-up transfer: the
WebRTC stack — aiortc, its crypto — is imported on first use and stays, 30–40 MiB), peak (``VmHWM``), and after
(the last transfer done and imported through ``POST /inbox/{id}/import``, then 10 s quiet); and the outbox and
partial folders' sizes against the configured caps (``outbox_max_mb``, ``partial_max_mb``). Issue 16's bar: after
within 50 MB of idle; outbox + partial under the caps; issue 13's: peak ≤ 200 MiB. Exit 1 when a bar is missed.

    .venv/bin/python tests/bench/memory.py --rss [--mb 50 --mb 200]

``--rss``: the peak RSS (``wait4``) of the other p2pd processes a conversation of SIZE MB goes through, each on a
generated session: the daemon's packing process (``python -m p2pd.daemon.packer``, what ``POST /send`` and a
handoff run), ``p2pd export`` (compact and ``--compressed``), ``p2pd import`` of the exported document, and
``p2pd export --redact``. Issue 13's bar: ≤ 200 MiB each, daemons included. Exit 1 when one is over.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.daemon.chaos import SignalServer, make_template  # noqa: E402
from tests.daemon.conftest import SESSION_ID, Daemon, device_id, online, wait_for  # noqa: E402

MB = 1_000_000
MIB = 1 << 20


def status(pid: int, key: str) -> float:
    """A ``/proc/PID/status`` figure (kB) in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(key)


def folder_mb(path: Path) -> float:
    if not path.exists():
        return 0.0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / MB


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--generate":  # in a child: the generator's memory is not ours
        from tests.transfer.gen import generate_conversation

        Path(sys.argv[2]).write_bytes(generate_conversation(int(sys.argv[3]), seed=int(sys.argv[4])))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=10)
    ap.add_argument("--mb", type=float, action="append", help="size of each generated session, MB (default 100; "
                    "--rss: 50 and 200; repeat it for several)")
    ap.add_argument("--rss", action="store_true", help="peak RSS of the packing process, export and import")
    ap.add_argument("--outbox-mb", type=int, default=300, help="the daemons' outbox_max_mb")
    ap.add_argument("--partial-mb", type=int, default=300, help="the daemons' partial_max_mb")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="extra environment for both "
                    "daemons (e.g. PYTHONMALLOC=pymalloc to compare allocators)")
    args = ap.parse_args()
    if args.rss:
        from tests.bench.process_rss import main as rss_main

        return rss_main(args.mb or [50.0, 200.0])
    args.mb = (args.mb or [100.0])[0]
    caps = {"P2PD_OUTBOX_MAX_MB": str(args.outbox_mb), "P2PD_PARTIAL_MAX_MB": str(args.partial_mb),
            **dict(e.split("=", 1) for e in args.env)}
    with tempfile.TemporaryDirectory(prefix="p2pd-memory-") as tmp:
        work = Path(tmp)
        sessions = []
        for i in range(args.count):
            path = work / "sessions" / f"s{i}.jsonl"
            path.parent.mkdir(exist_ok=True)
            subprocess.run([sys.executable, __file__, "--generate", str(path), str(int(args.mb * MB)), str(i + 1)],
                           check=True)
            sessions.append(path)
        print(f"{args.count} sessions of {args.mb:g} MB generated", flush=True)
        make_template(work / "homes")
        server = SignalServer()
        server.start()
        desk = Daemon(work / "homes" / "a", signal_url=server.url, **caps)
        laptop = Daemon(work / "homes" / "b", signal_url=server.url, **caps)
        try:
            desk.start()
            laptop.start()
            wait_for(lambda: online(desk, device_id(laptop)), what="the laptop online")
            time.sleep(5.0)
            assert desk.process is not None and laptop.process is not None
            pids = {"desk (sender)": desk.process.pid, "laptop (receiver)": laptop.process.pid}
            cold = {k: status(p, "VmRSS") for k, p in pids.items()}
            with desk.client() as c:  # a small transfer first: the WebRTC stack is loaded once, on first use
                row = c.post("/send", json={"session": SESSION_ID, "to": {"device": "laptop"}}).json()
                wait_for(lambda tid=row["id"]: c.get(f"/transfers/{tid}").json()["state"] == "done", timeout=120,
                         what="the warm-up transfer")
            time.sleep(5.0)
            idle = {k: status(p, "VmRSS") for k, p in pids.items()}
            started = time.monotonic()
            for i, path in enumerate(sessions):
                t0 = time.monotonic()
                with desk.client() as c:
                    row = c.post("/send", json={"transcript_path": str(path), "to": {"device": "laptop"}},
                                 timeout=600).json()
                    done = wait_for(lambda tid=row["id"]: (r := c.get(f"/transfers/{tid}").json())["state"]
                                    in ("done", "failed", "cancelled") and r, timeout=900, what="the transfer")
                assert done["state"] == "done", done
                with laptop.client() as c:
                    wait_for(lambda n=i + 2: len(c.get("/inbox", params={"limit": 1000}).json()) >= n, timeout=300,
                             what="in the laptop's inbox")
                now = {k: status(p, "VmRSS") for k, p in pids.items()}
                print(f"  transfer {i + 1}: {done['size'] / MB:.1f} MB on the wire, {time.monotonic() - t0:.1f} s; "
                      + ", ".join(f"{k} {v:.0f} MiB" for k, v in now.items()), flush=True)
            elapsed = time.monotonic() - started
            with laptop.client() as c:  # the last one imported into Claude Code (the daemon's import path)
                entry = c.get("/inbox", params={"limit": 1}).json()[0]
                t0 = time.monotonic()
                r = c.post(f"/inbox/{entry['id']}/import", json={"cwd": str(work)}, timeout=900)
                assert r.status_code == 200, r.text
                print(f"  imported the last one on the laptop: {r.json()['lines']} lines, "
                      f"{time.monotonic() - t0:.1f} s", flush=True)
            time.sleep(10.0)
            after = {k: status(p, "VmRSS") for k, p in pids.items()}
            peak = {k: status(p, "VmHWM") for k, p in pids.items()}
            disk = {"desk (sender)": (folder_mb(desk.home / "outbox"), folder_mb(desk.home / "partial")),
                    "laptop (receiver)": (folder_mb(laptop.home / "outbox"), folder_mb(laptop.home / "partial"))}
        finally:
            desk.kill()
            laptop.kill()
            server.stop()
    print()
    print(f"{args.count} × {args.mb:g} MB in {elapsed:.0f} s; caps: outbox {args.outbox_mb} MB, partial "
          f"{args.partial_mb} MB")
    print("| daemon | cold RSS MiB | idle RSS MiB | peak RSS MiB | after RSS MiB | after − idle | outbox MB | "
          "partial MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    bad = False
    for k in pids:
        grew = after[k] - idle[k]
        outbox, partial = disk[k]
        bad |= grew > 50 * MB / MIB or outbox > args.outbox_mb or partial > args.partial_mb or peak[k] > 200
        print(f"| {k} | {cold[k]:.0f} | {idle[k]:.0f} | {peak[k]:.0f} | {after[k]:.0f} | {grew:+.0f} | "
              f"{outbox:.0f} | {partial:.0f} |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
