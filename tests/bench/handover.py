"""Handover benchmark: what a user runs, side by side with what they would run instead (magic-wormhole).

    .venv/bin/python tests/bench/handover.py [--sizes real,1,10,50,200] [--repeat 3]

For each session size, one run interleaves A B A B …:
  * p2pd: a local ``p2pd-signal``; ``p2pd receive --yes -o DIR`` starts first and prints a code; then
    ``p2pd send SESSION --code CODE``. p2pd converts the transcript into the conversation document, compresses,
    pairs, moves it over WebRTC, verifies and writes the ``.a2a.json``.
  * magic-wormhole 0.24 (installed by this script into its own venv, ~/.cache/p2pd-bench/wormhole, with its
    mailbox server and transit relay run locally under twistd): ``wormhole receive --accept-file CODE`` first,
    then ``wormhole send --code CODE SESSION`` — the raw ``.jsonl``, no conversion.
The clock runs from the sender's start until both processes have exited; the receiver waits first: each tool's
sender starts ``HEAD_START`` (1 s; ``P2PD_BENCH_HEAD_START``) after its receiver did — p2pd's at the earliest once
its code is printed —, as when a person carries the code from one machine to the other. Peak RSS of
each process comes from ``wait4``. Printed per size: min/median/max seconds of each tool, the p2pd/wormhole ratio
pair by pair (its median), the peak RSS of each process (max over runs) and its CPU seconds (user+sys, with the
children it waited for; median). ``--timeline`` adds one p2pd run per size, not counted, with each p2pd process's
CPU every 0.1 s (tests/bench/cpu_timeline.py: where the critical path runs and when a core idles).
``--startup N`` adds the fixed costs, N runs interleaved: ``--help``, and ``send SESSION`` until it prints its code
(the real session; p2pd allocates a code from p2pd-signal, wormhole from its mailbox server).

Sessions: the real 3.5 MB corpus session (spotter/4d5611e5) and generated ones of 1, 10, 50, 200 MB made of the
corpus's real Claude Code lines (user and agent turns, tool calls and results, thinking), fresh ids per copy.
``--documents`` adds, after each, its conversation document as ``p2pd export`` writes it (a fallback file is one):
``p2pd send FILE.a2a.json`` checks it and sends it as it is; wormhole moves that file.
Everything runs on loopback.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.bench.cpu_timeline import CpuTimeline  # noqa: E402
from tests.corpus import corpus_root  # noqa: E402
from tests.transfer.gen import generate_conversation  # noqa: E402

MB = 1_000_000
WORMHOLE_PINS = ["magic-wormhole==0.24.0", "magic-wormhole-mailbox-server==0.8.0",
                 "magic-wormhole-transit-relay==0.5.0"]
WORMHOLE_VENV = Path(os.environ.get("P2PD_BENCH_CACHE", Path.home() / ".cache" / "p2pd-bench")) / "wormhole"
REAL_SESSION = "claude-code/spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
BIN = Path(sys.executable).parent
CODE_RE = re.compile(r"Code: (\S+)")
WORMHOLE_CODE_RE = re.compile(r"Wormhole code is: (\S+)")


@dataclass
class Run:
    seconds: float
    rss_send: float  # MiB
    rss_recv: float
    cpu_send: float = 0.0  # user+sys seconds of the process and the children it waited for (wait4)
    cpu_recv: float = 0.0
    timeline: list[str] = field(default_factory=list)  # with sample=True: tests/bench/cpu_timeline.py's table


# Seconds from a receiver's start to its sender's, for both tools (p2pd: at least until its code is printed): the
# receiver is waiting first, as when a person reads the code off one machine and types it on another. Both tools
# go on preparing after they could take a code (p2pd imports aiortc and starts its checking process once the code
# is printed; wormhole connects to its mailbox server), and a sender started before that is done shares the
# two cores with it.
HEAD_START = float(os.environ.get("P2PD_BENCH_HEAD_START", "1.0"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} after {timeout} s")


class Proc:
    """A child process whose exit and peak RSS are collected with wait4 in a thread."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, *, watch_stderr: bool = False) -> None:
        self.argv = argv
        self.stderr_lines: list[str] = []
        self.code_seen = threading.Event()
        self.code: str | None = None
        self.started = time.perf_counter()
        self.p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, bufsize=1)
        self.done = threading.Event()
        self.status = 0
        self.rss_mib = 0.0
        self.cpu = 0.0
        self.ended = 0.0
        threading.Thread(target=self._read, args=(watch_stderr,), daemon=True).start()
        threading.Thread(target=self._wait, daemon=True).start()

    def _read(self, watch: bool) -> None:
        assert self.p.stderr is not None
        for line in self.p.stderr:
            self.stderr_lines.append(line)
            if watch and self.code is None:
                m = CODE_RE.search(line)
                if m:
                    self.code = m.group(1)
                    self.code_seen.set()

    def _wait(self) -> None:
        _, status, usage = os.wait4(self.p.pid, 0)
        self.ended = time.perf_counter()
        self.status = os.waitstatus_to_exitcode(status)
        self.rss_mib = usage.ru_maxrss / 1024
        self.cpu = usage.ru_utime + usage.ru_stime
        self.done.set()

    def wait_head_start(self) -> None:
        """Return HEAD_START seconds after this process (a receiver) started."""
        time.sleep(max(0.0, self.started + HEAD_START - time.perf_counter()))

    def finish(self, timeout: float) -> None:
        if not self.done.wait(timeout):
            self.p.send_signal(signal.SIGKILL)
            self.done.wait(10)
            raise RuntimeError(f"{self.argv[:3]} did not exit within {timeout} s")
        if self.status != 0:
            raise RuntimeError(f"{self.argv[:3]} exited {self.status}: {''.join(self.stderr_lines)[-2000:]}")


def ensure_wormhole() -> Path:
    py = WORMHOLE_VENV / "bin" / "python"
    if not (WORMHOLE_VENV / "bin" / "wormhole").exists():
        print(f"installing {', '.join(WORMHOLE_PINS)} into {WORMHOLE_VENV} …", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(WORMHOLE_VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *WORMHOLE_PINS],
                       check=True)
    return WORMHOLE_VENV / "bin"


class Servers:
    """p2pd-signal, and wormhole's mailbox server and transit relay, all on loopback."""

    def __init__(self, work: Path, wormhole_bin: Path) -> None:
        self.signal_port, self.mailbox_port, self.relay_port = free_port(), free_port(), free_port()
        argvs = [
            [str(BIN / "p2pd-signal"), "--host", "127.0.0.1", "--port", str(self.signal_port)],
            [str(wormhole_bin / "twistd"), "-n", "--pidfile=", "--logfile=/dev/null", "wormhole-mailbox",
             f"--port=tcp:{self.mailbox_port}:interface=127.0.0.1", "--channel-db=:memory:"],
            [str(wormhole_bin / "twistd"), "-n", "--pidfile=", "--logfile=/dev/null", "transitrelay",
             f"--port=tcp:{self.relay_port}:interface=127.0.0.1"],
        ]
        self.procs = [subprocess.Popen(argv, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                      for argv in argvs]
        for port in (self.signal_port, self.mailbox_port, self.relay_port):
            wait_port(port)

    def close(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


def run_p2pd(session: Path, servers: Servers, work: Path, n: int, sample: bool = False) -> Run:
    """One p2pd handover; ``sample``: with its CPU timeline (tests/bench/cpu_timeline.py)."""
    home = work / f"p2pd-home-{n}"
    out = work / f"p2pd-out-{n}"
    out.mkdir(parents=True)
    env = dict(os.environ, HOME=str(home), P2PD_HOME=str(home / "p2pd"), P2PD_CONFIG=str(home / "none.toml"),
               PYTHONPATH=str(ROOT),  # the tree this script is in, not the one the venv was installed from
               P2PD_SIGNAL=f"ws://127.0.0.1:{servers.signal_port}", P2PD_ICE_HOST_ADDRESSES="127.0.0.1",
               TERM="dumb")
    receiver = Proc([str(BIN / "p2pd"), "receive", "--make-code", "--yes", "-o", str(out)], env, work,
                    watch_stderr=True)
    if not receiver.code_seen.wait(60):
        receiver.p.kill()
        raise RuntimeError(f"p2pd receive printed no code: {''.join(receiver.stderr_lines)}")
    receiver.wait_head_start()
    start = time.perf_counter()
    sender = Proc([str(BIN / "p2pd"), "send", str(session), "--code", str(receiver.code)], env, work)
    sampler = CpuTimeline(sender.p.pid, receiver.p.pid) if sample else None
    if sampler is not None:
        sampler.start()
    sender.finish(900)
    receiver.finish(900)
    elapsed = max(sender.ended, receiver.ended) - start
    if sampler is not None:
        sampler.stop()
    got = list(out.glob("*.a2a.json"))
    if len(got) != 1:
        raise RuntimeError(f"p2pd receive wrote {got}")
    shutil.rmtree(out)
    return Run(elapsed, sender.rss_mib, receiver.rss_mib, sender.cpu, receiver.cpu,
               sampler.table() if sampler is not None else [])


def run_wormhole(session: Path, servers: Servers, wormhole_bin: Path, work: Path, n: int) -> Run:
    out = work / f"wh-out-{n}"
    out.mkdir(parents=True)
    env = dict(os.environ, HOME=str(work / f"wh-home-{n}"))
    common = [str(wormhole_bin / "wormhole"), f"--relay-url=ws://127.0.0.1:{servers.mailbox_port}/v1",
              f"--transit-helper=tcp:127.0.0.1:{servers.relay_port}"]
    code = f"{n + 2}-bench-handover"
    receiver = Proc([*common, "receive", "--accept-file", "--hide-progress", "-o", str(out / session.name), code],
                    env, work)
    receiver.wait_head_start()  # waiting first, as with p2pd
    start = time.perf_counter()
    sender = Proc([*common, "send", "--hide-progress", "--code", code, str(session)], env, work)
    sender.finish(900)
    receiver.finish(900)
    elapsed = max(sender.ended, receiver.ended) - start
    if (out / session.name).stat().st_size != session.stat().st_size:
        raise RuntimeError("wormhole delivered a file of another size")
    shutil.rmtree(out)
    return Run(elapsed, sender.rss_mib, receiver.rss_mib, sender.cpu, receiver.cpu)


def sessions(work: Path, sizes: list[str], documents: bool = False) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    for label, path in _sessions(work, sizes):
        out.append((label, path))
        if documents:  # the same conversation as the document `p2pd export` writes (what a fallback file is)
            doc = work / f"{path.stem}.a2a.json"
            subprocess.run([str(BIN / "p2pd"), "export", str(path), "-o", str(doc)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env=dict(os.environ, HOME=str(work / "export-home"), P2PD_CONFIG=str(work / "none.toml"),
                                    PYTHONPATH=str(ROOT), TERM="dumb"))
            out.append((f"{label.split(' (')[0]} session as .a2a.json ({human_mb(doc)})", doc))
    return out


def human_mb(path: Path) -> str:
    return f"{path.stat().st_size / MB:.1f} MB"


def _sessions(work: Path, sizes: list[str]) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    for size in sizes:
        if size == "real":
            root = corpus_root()
            path = (root / REAL_SESSION) if root else Path(REAL_SESSION)
            if not path.exists():
                raise SystemExit(f"the corpus session {path} is missing")
            out.append(("3.5 MB (real, 4d5611e5)", path))
        else:
            path = work / f"generated-{size}mb.jsonl"
            # Generated in a child process: a child's peak RSS (wait4) starts from its parent's high-water mark
            # (kept across exec), so a parent that held 200 MB would inflate every figure below.
            subprocess.run([sys.executable, __file__, "--generate", str(path), str(int(float(size) * MB)),
                            str(int(float(size) * 10))], check=True)
            out.append((f"{size} MB (generated)", path))
    return out


def spread(values: list[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--generate":
        Path(sys.argv[2]).write_bytes(generate_conversation(int(sys.argv[3]), seed=int(sys.argv[4])))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="real,1,10,50,200",
                    help="comma-separated: 'real' and/or MB (default: %(default)s)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each tool per size (default 3)")
    ap.add_argument("--documents", action="store_true",
                    help="also send each session's .a2a.json (as `p2pd export` writes it; wormhole moves that file)")
    ap.add_argument("--startup", type=int, default=0, metavar="N",
                    help="also time --help and `send` until its code is printed, N runs of each tool")
    ap.add_argument("--timeline", action="store_true",
                    help="one more p2pd run per size, not counted: each process's CPU every 0.1 s")
    args = ap.parse_args()
    wormhole_bin = ensure_wormhole()
    compiled = byte_compile()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; p2pd {BIN / 'p2pd'} on {ROOT}; "
          f"wormhole {wormhole_bin}; load {os.getloadavg()[0]:.2f}; {compiled}")
    with tempfile.TemporaryDirectory(prefix="p2pd-bench-") as tmp:
        work = Path(tmp)
        servers = Servers(work, wormhole_bin)
        rows = []
        starts: Timings = {}
        try:
            n = 0
            for label, path in sessions(work, [x for x in args.sizes.split(",") if x], args.documents):
                mine: list[Run] = []
                theirs: list[Run] = []
                for _ in range(args.repeat):
                    n += 1
                    mine.append(run_p2pd(path, servers, work, n))
                    theirs.append(run_wormhole(path, servers, wormhole_bin, work, n))
                    print(f"  {label}: p2pd {mine[-1].seconds:.2f} s, wormhole {theirs[-1].seconds:.2f} s", flush=True)
                if args.timeline:
                    n += 1
                    sampled = run_p2pd(path, servers, work, n, sample=True)
                    print(f"  {label}: p2pd's CPU timeline, a run of {sampled.seconds:.2f} s (cores in use per 0.1 s)",
                          *sampled.timeline, sep="\n    ", flush=True)
                ratios = [a.seconds / b.seconds for a, b in zip(mine, theirs, strict=True)]
                rows.append((label, spread([r.seconds for r in mine]), spread([r.seconds for r in theirs]),
                             statistics.median(ratios), max(r.rss_send for r in mine), max(r.rss_recv for r in mine),
                             max(r.rss_send for r in theirs), max(r.rss_recv for r in theirs),
                             cpu(mine), cpu(theirs)))
            if args.startup:
                starts = startup(servers, wormhole_bin, work, args.startup)
        finally:
            servers.close()
    if rows:
        print()
        print("| session | p2pd s (min/med/max) | wormhole s (min/med/max) | p2pd/wormhole (median of pairs) "
              "| p2pd RSS send/recv MiB | wormhole RSS send/recv MiB | CPU s send/recv p2pd, wormhole (median) |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for label, mine_s, theirs_s, ratio, ps, pr, ws, wr, mc, tc in rows:
            print(f"| {label} | {mine_s} | {theirs_s} | {ratio:.2f} | {ps:.0f} / {pr:.0f} | {ws:.0f} / {wr:.0f} "
                  f"| {mc}, {tc} |")
    if args.startup:
        print()
        print("| start-up (s, min/med/max) | p2pd | wormhole |")
        print("|---|---:|---:|")
        for what, (a, b) in starts.items():
            print(f"| {what} | {spread(a)} | {spread(b)} |")
    return 0


def byte_compile() -> str:
    """p2pd's own modules byte-compiled, as an installed p2pd has them: ``pip install`` compiles a package's
    modules (wormhole's venv and this one's libraries are), and an editable install writes them at its first run
    — unless PYTHONDONTWRITEBYTECODE is set, as on the machines these figures come from, where every p2pd process
    would otherwise compile ~35 ms of stale modules at each start."""
    import compileall
    import io
    from contextlib import redirect_stdout

    with redirect_stdout(io.StringIO()):
        ok = all(compileall.compile_dir(str(ROOT / pkg), quiet=1) for pkg in ("p2pd", "signaling"))
    if not ok:
        raise RuntimeError("p2pd's modules do not byte-compile")
    return "p2pd byte-compiled as installed" + (" (PYTHONDONTWRITEBYTECODE is set here)"
                                                 if os.environ.get("PYTHONDONTWRITEBYTECODE") else "")


def cpu(runs: list[Run]) -> str:
    return (f"{statistics.median(r.cpu_send for r in runs):.2f} / "
            f"{statistics.median(r.cpu_recv for r in runs):.2f}")


def _until_code(argv: list[str], env: dict[str, str], cwd: Path, pattern: re.Pattern[str]) -> float:
    """Seconds from starting ``argv`` until a line of its output matches ``pattern`` (then it is killed)."""
    start = time.perf_counter()
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, bufsize=1)
    try:
        assert p.stdout is not None
        for line in p.stdout:
            if pattern.search(line):
                return time.perf_counter() - start
        raise RuntimeError(f"{argv[:2]} printed no code")
    finally:
        p.kill()
        p.wait()


Timings = dict[str, tuple[list[float], list[float]]]  # what -> (p2pd's seconds, wormhole's seconds)


def startup(servers: Servers, wormhole_bin: Path, work: Path, repeat: int) -> Timings:
    """Fixed costs, interleaved: ``--help``, and ``send SESSION`` until it prints its code (the real session)."""
    root = corpus_root()
    session = (root / REAL_SESSION) if root else Path(REAL_SESSION)
    env = dict(os.environ, HOME=str(work / "start-home"), P2PD_HOME=str(work / "start-home" / "p2pd"),
               P2PD_CONFIG=str(work / "none.toml"), PYTHONPATH=str(ROOT),
               P2PD_SIGNAL=f"ws://127.0.0.1:{servers.signal_port}", P2PD_ICE_HOST_ADDRESSES="127.0.0.1", TERM="dumb")
    wenv = dict(os.environ, HOME=str(work / "start-home-wh"))
    wormhole = [str(wormhole_bin / "wormhole"), f"--relay-url=ws://127.0.0.1:{servers.mailbox_port}/v1",
                f"--transit-helper=tcp:127.0.0.1:{servers.relay_port}"]
    out: Timings = {"--help": ([], []), "send, to the code printed": ([], [])}
    for _ in range(repeat):
        for argv, target, e in (([str(BIN / "p2pd"), "--help"], 0, env), ([*wormhole, "--help"], 1, wenv)):
            t = time.perf_counter()
            subprocess.run(argv, env=e, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            out["--help"][target].append(time.perf_counter() - t)
        out["send, to the code printed"][0].append(
            _until_code([str(BIN / "p2pd"), "send", str(session)], env, work, CODE_RE))
        out["send, to the code printed"][1].append(
            _until_code([*wormhole, "send", "--hide-progress", str(session)], wenv, work, WORMHOLE_CODE_RE))
    return out


if __name__ == "__main__":
    sys.exit(main())
