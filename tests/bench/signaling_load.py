"""Load benchmark of one ``p2pd-signal`` process (not collected by pytest).

    .venv/bin/python tests/bench/signaling_load.py [--connections 10000] [--workers 4] …

1. opens ``--connections`` idle WebSocket connections from ``--workers`` client processes and holds them;
2. while they are held, runs ``--pairers`` concurrent pairing loops for ``--pairing-seconds`` (each pairing is a
   fresh sender and receiver connection: welcome, allocate, join, peer_joined, one relay each way, close);
3. then ``--latency-pairs`` paired clients relay timestamped messages at ``--latency-rate`` per second each
   for ``--latency-seconds`` and the one-way relay latency is measured (sender and receiver share a process);
4. prints idle connections held, pairings per second, relay latency p50/p99 and the server's memory (RSS).

Goal on the 2-core machine: 10,000 connections, p99 < 50 ms. Clients and server share the two cores, so the
figures are a lower bound for a server with the machine to itself.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing as mp
import os
import re
import resource
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil
from websockets.asyncio.client import ClientConnection, connect

ROOT = Path(__file__).resolve().parents[2]
SUBPROTOCOL: Any = "p2pd-signal.v1"


def raise_fd_limit() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def use_uvloop() -> None:
    with contextlib.suppress(ImportError):
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


async def open_client(url: str) -> ClientConnection:
    ws = await connect(url, subprotocols=[SUBPROTOCOL], compression=None, open_timeout=60, ping_interval=None)
    await ws.recv()  # welcome
    return ws


async def expect(ws: ClientConnection, kind: str) -> dict[str, Any]:
    while True:
        message = json.loads(await ws.recv())
        if message["type"] == kind:
            return message
        if message["type"] == "error":
            raise RuntimeError(message)


# ---- worker processes ------------------------------------------------------------------------------------------


def idle_worker(url: str, count: int, ready: Any, stop: Any) -> None:
    raise_fd_limit()
    use_uvloop()

    async def main() -> None:
        sockets: list[ClientConnection] = []
        failures = 0
        semaphore = asyncio.Semaphore(64)  # do not flood the accept queue

        async def one() -> None:
            nonlocal failures
            async with semaphore:
                try:
                    sockets.append(await open_client(url))
                except Exception:
                    failures += 1

        await asyncio.gather(*(one() for _ in range(count)))
        ready.put((len(sockets), failures))
        while not stop.is_set():
            await asyncio.sleep(0.2)
        for ws in sockets:
            ws.transport.abort()

    asyncio.run(main())


def pairing_worker(url: str, loops: int, seconds: float, result: Any) -> None:
    raise_fd_limit()
    use_uvloop()

    async def pair_once() -> None:
        sender, receiver = await open_client(url), await open_client(url)
        try:
            await sender.send('{"type":"allocate"}')
            joined = await expect(sender, "joined")
            await receiver.send(json.dumps({"type": "join", "room": joined["room"]}))
            joined_r = await expect(receiver, "joined")
            await expect(sender, "peer_joined")
            await sender.send(json.dumps({"type": "relay", "to": joined_r["peer_id"], "data": {"kind": "pake"}}))
            await expect(receiver, "relay")
            await receiver.send(json.dumps({"type": "relay", "to": joined["peer_id"], "data": {"kind": "pake"}}))
            await expect(sender, "relay")
        finally:
            await sender.close()
            await receiver.close()

    async def main() -> None:
        deadline = time.perf_counter() + seconds
        done = 0
        errors = 0

        async def loop() -> None:
            nonlocal done, errors
            while time.perf_counter() < deadline:
                try:
                    await pair_once()
                    done += 1
                except Exception:
                    errors += 1

        await asyncio.gather(*(loop() for _ in range(loops)))
        result.put((done, errors))

    asyncio.run(main())


def latency_worker(url: str, pairs: int, rate: float, seconds: float, result: Any) -> None:
    raise_fd_limit()
    use_uvloop()

    async def main() -> None:
        samples: list[float] = []
        sockets: list[ClientConnection] = []

        async def run_pair() -> None:
            a, b = await open_client(url), await open_client(url)
            sockets.extend((a, b))
            await a.send('{"type":"allocate"}')
            joined = await expect(a, "joined")
            await b.send(json.dumps({"type": "join", "room": joined["room"]}))
            joined_b = await expect(b, "joined")
            await expect(a, "peer_joined")
            count = int(rate * seconds)

            async def receive() -> None:
                for _ in range(count):
                    message = await expect(b, "relay")
                    samples.append(time.perf_counter() - message["data"]["t"])

            receiving = asyncio.create_task(receive())
            await asyncio.sleep((hash(joined["room"]) % 1000) / 1000 / rate)  # spread the senders
            for _ in range(count):
                await a.send(json.dumps({"type": "relay", "to": joined_b["peer_id"],
                                         "data": {"t": time.perf_counter(), "sdp": "x" * 200}}))
                await asyncio.sleep(1 / rate)
            await asyncio.wait_for(receiving, 30)

        outcomes = await asyncio.gather(*(run_pair() for _ in range(pairs)), return_exceptions=True)
        for ws in sockets:
            await ws.close()
        result.put((samples, sum(1 for o in outcomes if isinstance(o, BaseException))))

    asyncio.run(main())


# ---- driver ------------------------------------------------------------------------------------------------------


def start_server(args: argparse.Namespace) -> tuple[subprocess.Popen[str], str]:
    connections = str(args.connections + 4 * args.pairers + 2 * args.latency_pairs + 100)
    command = [sys.executable, "-m", "signaling", "--port", "0",  # every client is 127.0.0.1: no per-address caps
               "--max-connections", connections, "--max-connections-per-address", connections,
               "--max-rooms-per-address", "1000000", "--join-deadline", "100000",
               "--max-rooms", "1000000", "--joins-per-minute", "100000000",
               "--messages-per-second", "1000", "--message-burst", "1000", "--room-ttl", "120"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.search(r"listening on (ws://\S+)", line)
    if not match:
        process.kill()
        raise SystemExit(f"server did not start: {line}")
    return process, match.group(1)


def metric(url: str, name: str) -> float:
    http = "http://" + url.removeprefix("ws://").rstrip("/") + "/metrics"
    with urllib.request.urlopen(http, timeout=30) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise KeyError(name)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=4, help="client processes holding the idle connections")
    parser.add_argument("--pairers", type=int, default=16, help="concurrent pairing loops (over 2 processes)")
    parser.add_argument("--pairing-seconds", type=float, default=10.0)
    parser.add_argument("--latency-pairs", type=int, default=200)
    parser.add_argument("--latency-rate", type=float, default=5.0, help="messages per second per pair")
    parser.add_argument("--latency-seconds", type=float, default=10.0)
    args = parser.parse_args()
    raise_fd_limit()
    ctx = mp.get_context("fork")
    server, url = start_server(args)
    server_ps = psutil.Process(server.pid)
    stop = ctx.Event()
    idle: list[Any] = []
    try:
        rss_start = server_ps.memory_info().rss
        ready = ctx.Queue()
        started = time.perf_counter()
        share = [args.connections // args.workers + (1 if i < args.connections % args.workers else 0)
                 for i in range(args.workers)]
        idle = [ctx.Process(target=idle_worker, args=(url, n, ready, stop)) for n in share]
        for process in idle:
            process.start()
        opened = failed = 0
        for _ in idle:
            ok, bad = ready.get(timeout=600)
            opened, failed = opened + ok, failed + bad
        open_seconds = time.perf_counter() - started
        held = metric(url, "p2pd_signal_connections")
        rss_idle = server_ps.memory_info().rss

        result = ctx.Queue()
        half = max(1, args.pairers // 2)
        pairers = [ctx.Process(target=pairing_worker, args=(url, n, args.pairing_seconds, result))
                   for n in (half, args.pairers - half) if n > 0]
        for process in pairers:
            process.start()
        pairings = pairing_errors = 0
        for _ in pairers:
            done, errors = result.get(timeout=args.pairing_seconds + 120)
            pairings, pairing_errors = pairings + done, pairing_errors + errors
        for process in pairers:
            process.join()

        latency = ctx.Process(target=latency_worker,
                              args=(url, args.latency_pairs, args.latency_rate, args.latency_seconds, result))
        latency.start()
        samples, latency_errors = result.get(timeout=args.latency_seconds + 300)
        latency.join()
        rss_end = server_ps.memory_info().rss
        held_end = metric(url, "p2pd_signal_connections")

        print(f"signaling load benchmark: one server process, {os.cpu_count()} cores shared with the clients")
        print(f"idle connections held:      {int(held)} of {args.connections} "
              f"(opened in {open_seconds:.1f} s, {failed} failed; {int(held_end)} still held at the end)")
        print(f"pairings per second:        {pairings / args.pairing_seconds:.0f} "
              f"({pairings} in {args.pairing_seconds:g} s, {args.pairers} concurrent, {pairing_errors} errors)")
        if samples:
            print(f"relay latency p50 / p99:    {percentile(samples, 0.5) * 1000:.1f} ms / "
                  f"{percentile(samples, 0.99) * 1000:.1f} ms (max {max(samples) * 1000:.1f} ms; "
                  f"{len(samples)} relays, {args.latency_pairs} pairs at {args.latency_rate:g}/s, "
                  f"{latency_errors} errors)")
        print(f"server memory (RSS):        {rss_start / 2**20:.0f} MiB at start, {rss_idle / 2**20:.0f} MiB "
              f"holding the connections ({(rss_idle - rss_start) / max(1, held) / 1024:.1f} KiB each), "
              f"{rss_end / 2**20:.0f} MiB at the end")
    finally:
        stop.set()
        for process in idle:
            process.join(30)
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
