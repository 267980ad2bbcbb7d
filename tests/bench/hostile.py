"""Hostile documents against real p2pd processes: each blob within the default size cap must end within 60 s and
512 MiB peak RSS, either imported or with exit 4/5 and one clear line.

    python tests/bench/hostile.py [--cases tiny-messages,huge-string,...] [--command import|receive|network]

Each case is a blob (zstd) written in pieces: the raw document is never held by this process. Then a real
``p2pd import BLOB`` (or ``p2pd receive --file BLOB --import``) runs in a throwaway Claude home; its time and
peak RSS come from ``wait4``. ``--command network``: a real p2pd-signal on loopback, a real ``p2pd receive CODE
--yes --import`` waiting, and a hostile sender streaming the blob over the real protocol (the real ``p2pd send``
with its payload swapped: ``tests/exchange/doubles.py hostile``); the receiver is measured. Prints one row per
case: raw and blob size, exit status, seconds, peak MiB and the last line the process printed."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from p2pd.blob.stream import BlobWriter  # noqa: E402

MB = 1 << 20
HEAD = (b'{"format":"p2pd.conversation","formatVersion":1,"a2aVersion":"1.0","contextId":"hostile",'
        b'"createdAt":"2026-01-01T00:00:00Z","origin":{"platform":"a2a"},')
TINY = b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}'


def _repeat(unit: bytes, total: int, sep: bytes = b",") -> Iterator[bytes]:
    n = max(1, total // (len(unit) + len(sep)))
    block = sep.join([unit] * 10_000)
    while n >= 10_000:
        yield block
        n -= 10_000
        if n:
            yield sep
    if n:
        yield sep.join([unit] * n)


def tiny_messages() -> Iterator[bytes]:  # the 412 KB blob: 100 MB of tiny messages
    yield HEAD + b'"messages":['
    yield from _repeat(TINY, 100 * MB)
    yield b"]}"


def tiny_messages_under_cap() -> Iterator[bytes]:  # 240,000 tiny messages: within the cap, imported
    yield HEAD + b'"messages":['
    yield from _repeat(TINY, 240_000 * (len(TINY) + 1))
    yield b"]}"


def tiny_messages_pretty() -> Iterator[bytes]:  # the same, one element per few lines (another tool's layout)
    yield HEAD + b'"messages": [\n'
    yield from _repeat(b'  {"messageId": "m",\n   "role": "ROLE_USER",\n   "parts": [{"text": "x"}]}', 100 * MB,
                       b",\n")
    yield b"\n]}"


def tiny_records() -> Iterator[bytes]:
    yield HEAD + b'"messages":[' + TINY + b'],"records":['
    yield from _repeat(b'{"line":1,"value":1}', 100 * MB)
    yield b"]}"


def huge_string() -> Iterator[bytes]:  # one message whose text is 900 MB
    yield HEAD + b'"messages":[{"messageId":"m","role":"ROLE_USER","parts":[{"text":"'
    for _ in range(900):
        yield b"x" * MB
    yield b'"}]}]}'


def string_under_cap() -> Iterator[bytes]:  # a 60 MB text: within the element cap, imported
    yield HEAD + b'"messages":[{"messageId":"m","role":"ROLE_USER","parts":[{"text":"'
    for _ in range(60):
        yield b"y" * MB
    yield b'"}]}]}'


def huge_title() -> Iterator[bytes]:
    yield HEAD + b'"title":"'
    for _ in range(500):
        yield b"t" * MB
    yield b'","messages":[' + TINY + b"]}"


def deep_message() -> Iterator[bytes]:  # 10^5-deep nesting inside a message
    yield HEAD + b'"messages":[{"messageId":"m","role":"ROLE_USER","parts":[{"data":'
    yield b"[" * 100_000 + b"]" * 100_000
    yield b"}]}]}"


def deep_envelope() -> Iterator[bytes]:
    yield HEAD + b'"metadata":' + b"{\"a\":" * 100_000 + b"1" + b"}" * 100_000 + b',"messages":[]}'


def many_values() -> Iterator[bytes]:  # 60 MB of numbers in one element
    yield HEAD + b'"messages":[{"messageId":"m","role":"ROLE_USER","parts":[{"data":['
    yield from _repeat(b"1.5", 60 * MB)
    yield b"]}]}]}"


def tiny_messages_lines() -> Iterator[bytes]:  # the line layout p2pd writes: each element found by its line's end
    yield HEAD + b'"messages":[\n'
    yield from _repeat(TINY, 100 * MB, b"\n,")
    yield b"\n]}"


def huge_line() -> Iterator[bytes]:  # the line layout, then a line that never ends (a 900 MB text)
    yield HEAD + b'"messages":[\n' + TINY + b'\n,{"messageId":"m","role":"ROLE_USER","parts":[{"text":"'
    for _ in range(900):
        yield b"x" * MB
    yield b'"}]}\n]}'


def deep_line() -> Iterator[bytes]:  # 300 levels on one line of the line layout (a parser takes it; the limit not)
    yield HEAD + b'"messages":[\n' + TINY + b'\n,{"messageId":"m","role":"ROLE_USER","parts":[{"data":'
    yield b"[" * 300 + b"]" * 300
    yield b"}]}\n]}"


def many_subagents() -> Iterator[bytes]:
    yield HEAD + b'"messages":[' + TINY + b'],"subagents":['
    yield from _repeat(b'{"messages":[],"agentId":"a","fileName":"agent-a.jsonl"}', 100 * MB)
    yield b"]}"


CASES: dict[str, Callable[[], Iterator[bytes]]] = {
    "tiny-messages": tiny_messages, "tiny-under-cap": tiny_messages_under_cap,
    "tiny-messages-pretty": tiny_messages_pretty, "tiny-records": tiny_records,
    "huge-string": huge_string, "string-under-cap": string_under_cap, "huge-title": huge_title,
    "deep-message": deep_message, "deep-envelope": deep_envelope, "many-values": many_values,
    "many-subagents": many_subagents, "tiny-messages-lines": tiny_messages_lines, "huge-line": huge_line,
    "deep-line": deep_line,
}


def make_blob(case: str, path: Path) -> int:
    with BlobWriter(path, "zstd") as w:
        for piece in CASES[case]():
            w.write(piece)
    return w.raw_size


def run(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 120.0) -> tuple[int, float, float, str]:
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = start + timeout
    status = None
    while status is None:
        pid, st, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            status = (os.waitstatus_to_exitcode(st), usage)
            break
        if time.monotonic() > deadline:
            proc.kill()
        time.sleep(0.05)
    took = time.monotonic() - start
    code, usage = status
    out = (proc.stderr.read() if proc.stderr else b"").decode("utf-8", "replace").strip().splitlines()
    last = out[-1] if out else ""
    return code, took, usage.ru_maxrss / 1024, last


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--command", choices=["import", "receive", "network"], default="import")
    args = ap.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="p2pd-hostile-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "CLAUDE_CONFIG_DIR": str(work / "claude"),
               "P2PD_HOME": str(work / "p2pd")}
        signal = _signal(env, work) if args.command == "network" else None
        print(f"{'case':22} {'raw MB':>8} {'blob KB':>8} {'exit':>4} {'s':>6} {'MiB':>6}  last line")
        for case in args.cases.split(","):
            blob = work / f"{case}.a2a.p2pd"
            raw = make_blob(case, blob)
            if args.command == "import":
                argv = [sys.executable, "-m", "p2pd", "import", str(blob), "--cwd", str(work)]
            else:
                argv = [sys.executable, "-m", "p2pd", "receive", "--file", str(blob), "--import", "--cwd", str(work),
                        "-o", str(work / "out")]
            if args.command == "network":
                assert signal is not None
                code_words = f"{4000 + len(case)}-amber-lotus"
                argv = [sys.executable, "-m", "p2pd", "receive", code_words, "--yes", "--import", "--cwd", str(work),
                        "-o", str(work / "out"), "--signal", signal[1]]
                sample = ROOT / "p2pd" / "cli" / "demo_session.jsonl"  # (never read: the payload is the blob)
                sender = subprocess.Popen([sys.executable, "-m", "tests.exchange.doubles", "hostile", str(blob), "send",
                                           str(sample), "--code", code_words, "--signal", signal[1], "--timeout", "60"],
                                          env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            code, took, rss, last = run(argv, env, work)
            if args.command == "network":
                sender.kill()
                sender.wait()
            ok = code in (0, 4, 5) and took < 60 and rss < 512
            failed += not ok
            print(f"{case:22} {raw / MB:8.1f} {blob.stat().st_size / 1024:8.1f} {code:4d} {took:6.1f} {rss:6.0f}  "
                  f"{last[:110]}{'' if ok else '   <-- OVER'}", flush=True)
            blob.unlink()
        if signal is not None:
            signal[0].terminate()
            signal[0].wait()
    return 1 if failed else 0


def _signal(env: dict[str, str], work: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A real p2pd-signal on a free loopback port."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "signaling", "--port", str(port), "--no-web"], env=env, cwd=work,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"ws://127.0.0.1:{port}"
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("p2pd-signal did not start")


if __name__ == "__main__":
    sys.exit(main())
