"""Abuse benchmark of one ``p2pd-signal`` process with its default limits (not collected by pytest).

    .venv/bin/python tests/bench/signaling_abuse.py [--seconds 20] [--flooders 2] …

For ``--seconds``, while abusive clients — each from its own loopback address (127.0.0.2, 127.0.0.3, …) —

- flood tiny ``ping`` messages and WebSocket ping frames without ever reading (reconnecting when thrown out),
- hold as many connections and rooms as they are allowed,
- open TCP sockets that stop half-way through the HTTP handshake,
- send oversized frames (over the message limit, and over the frame limit),

good clients (addresses 127.0.1.1, 127.0.1.2, …) run ``--pairers`` concurrent pairing loops (two fresh
connections: welcome, allocate, join, one relay each way) and ``--latency-pairs`` paired clients relay
timestamped messages. Prints the good clients' pairing rate and failures, relay latency p50/p99, what the
abusers achieved, and the server's RSS. Everything is on loopback and ends after ``--seconds``.

Goal: good-client relay p99 < 50 ms. Clients and server share the machine's cores, so the figures are a lower
bound for a server with the machine to itself; ``--control`` relays the same messages through a second server
that no abuser touches, at the same time, to tell the abuse's cost from other load on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing as mp
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil
from websockets.asyncio.client import ClientConnection, connect

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.signaling.rawclient import flood, frame, handshake, tcp, upgrade_request  # noqa: E402

SUBPROTOCOL: Any = "p2pd-signal.v1"


# ---- abusers (each a process with its own source address) --------------------------------------------------------


def flooder(port: int, source: str, seconds: float, control_frames: bool, result: Any) -> None:
    """Floods without reading, from 4 threads; a thrown-out connection is replaced at once."""
    deadline = time.monotonic() + seconds
    one = frame(b"p" * 125, opcode=9) if control_frames else frame('{"type":"ping"}')
    totals = {"frames": 0, "connections": 0, "refused": 0}
    lock = threading.Lock()

    def run() -> None:
        while (left := deadline - time.monotonic()) > 0:
            try:
                sock = handshake(port, source)
            except OSError:
                with lock:
                    totals["refused"] += 1
                time.sleep(0.05)
                continue
            sent = flood(sock, one, left)
            sock.close()
            with lock:
                totals["frames"] += sent
                totals["connections"] += 1

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result.put(("flood (pings frames)" if control_frames else "flood (ping messages)", source, totals))


def slot_holder(url: str, source: str, seconds: float, result: Any) -> None:
    """Opens up to 200 connections from one address, each allocating a room, and holds them."""

    async def main() -> None:
        held: list[ClientConnection] = []
        counts = {"held": 0, "refused": 0, "rooms": 0}
        deadline = time.monotonic() + seconds
        for _ in range(200):
            if time.monotonic() > deadline:
                break
            try:
                ws = await open_from(url, source)
                first = json.loads(await ws.recv())
                if first["type"] != "welcome":
                    counts["refused"] += 1
                    await ws.close()
                    continue
                held.append(ws)
                await ws.send('{"type":"allocate"}')
                if json.loads(await ws.recv())["type"] == "joined":
                    counts["rooms"] += 1
            except Exception:
                counts["refused"] += 1
        counts["held"] = len(held)
        await asyncio.sleep(max(0.0, deadline - time.monotonic()))
        for ws in held:
            ws.transport.abort()
        result.put(("slot holder", source, counts))

    asyncio.run(main())


def half_handshaker(port: int, source: str, seconds: float, result: Any) -> None:
    """Keeps opening sockets that send half an upgrade request and then nothing."""
    deadline = time.monotonic() + seconds
    sockets: list[socket.socket] = []
    counts = {"opened": 0, "failed": 0}
    partial = upgrade_request(port)[:60]
    while time.monotonic() < deadline:
        try:
            sock = tcp(port, source)
            sock.sendall(partial)
            sockets.append(sock)
            counts["opened"] += 1
        except OSError:
            counts["failed"] += 1
        if len(sockets) >= 500:
            sockets.pop(0).close()
        time.sleep(0.002)
    for sock in sockets:
        sock.close()
    result.put(("half handshakes", source, counts))


def oversizer(url: str, port: int, source: str, max_bytes: int, seconds: float, result: Any) -> None:
    """Sends messages over the size limit (refused, connection kept) and frames over 4x (connection closed)."""
    deadline = time.monotonic() + seconds
    counts = {"refused messages": 0, "closed connections": 0, "failed": 0}
    big = frame(json.dumps({"type": "ping", "id": "x" * (2 * max_bytes)}))
    huge = frame(b"\x00" * (4 * max_bytes + 1))
    while time.monotonic() < deadline:
        try:
            sock = handshake(port, source)
            for _ in range(3):
                sock.sendall(big)
                counts["refused messages"] += 1
            sock.sendall(huge)
            sock.settimeout(5)
            while sock.recv(65536):
                pass
            counts["closed connections"] += 1
            sock.close()
        except OSError:
            counts["failed"] += 1
            time.sleep(0.05)
    result.put(("oversized frames", source, counts))


# ---- good clients -----------------------------------------------------------------------------------------------


async def open_from(url: str, source: str) -> ClientConnection:
    host, port = url.removeprefix("ws://").rstrip("/").rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((source, 0))
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
    return await connect(url, subprotocols=[SUBPROTOCOL], sock=sock, compression=None, open_timeout=10,
                         ping_interval=None)


async def expect(ws: ClientConnection, kind: str, timeout: float = 10.0) -> dict[str, Any]:
    while True:
        message = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        if message["type"] == kind:
            return message
        if message["type"] == "error":
            raise RuntimeError(message["code"])


def pairing_worker(url: str, loops: int, seconds: float, result: Any) -> None:
    async def pair_once(source: str) -> float:
        started = time.perf_counter()
        sender, receiver = await open_from(url, source), await open_from(url, source)
        try:
            await expect(sender, "welcome")
            await expect(receiver, "welcome")
            await sender.send('{"type":"allocate"}')
            joined = await expect(sender, "joined")
            await receiver.send(json.dumps({"type": "join", "room": joined["room"]}))
            joined_r = await expect(receiver, "joined")
            await expect(sender, "peer_joined")
            await sender.send(json.dumps({"type": "relay", "to": joined_r["peer_id"], "data": {"kind": "pake"}}))
            await expect(receiver, "relay")
            await receiver.send(json.dumps({"type": "relay", "to": joined["peer_id"], "data": {"kind": "pake"}}))
            await expect(sender, "relay")
            return time.perf_counter() - started
        finally:
            await sender.close()
            await receiver.close()

    async def main() -> None:
        deadline = time.perf_counter() + seconds
        durations: list[float] = []
        errors: dict[str, int] = {}

        async def loop(index: int) -> None:
            n = 0
            while time.perf_counter() < deadline:
                n += 1
                source = f"127.0.1.{1 + (index * 31 + n) % 250}"  # many users, not one
                try:
                    durations.append(await pair_once(source))
                except Exception as exc:
                    key = str(exc) if isinstance(exc, RuntimeError) else type(exc).__name__
                    errors[key] = errors.get(key, 0) + 1

        await asyncio.gather(*(loop(i) for i in range(loops)))
        result.put((durations, errors))

    asyncio.run(main())


def latency_worker(url: str, pairs: int, rate: float, seconds: float, result: Any) -> None:
    async def main() -> None:
        samples: list[float] = []
        sockets: list[ClientConnection] = []

        async def run_pair(index: int) -> None:
            source = f"127.0.2.{1 + index % 250}"
            a, b = await open_from(url, source), await open_from(url, source)
            sockets.extend((a, b))
            await expect(a, "welcome")
            await expect(b, "welcome")
            await a.send('{"type":"allocate"}')
            joined = await expect(a, "joined")
            await b.send(json.dumps({"type": "join", "room": joined["room"]}))
            joined_b = await expect(b, "joined")
            await expect(a, "peer_joined")
            count = int(rate * seconds)

            async def receive() -> None:
                for _ in range(count):
                    message = await expect(b, "relay", timeout=30)
                    samples.append(time.perf_counter() - message["data"]["t"])

            receiving = asyncio.create_task(receive())
            await asyncio.sleep(index / pairs / rate)  # spread the senders
            for _ in range(count):
                await a.send(json.dumps({"type": "relay", "to": joined_b["peer_id"],
                                         "data": {"t": time.perf_counter(), "sdp": "x" * 200}}))
                await asyncio.sleep(1 / rate)
            await asyncio.wait_for(receiving, 30)

        outcomes = await asyncio.gather(*(run_pair(i) for i in range(pairs)), return_exceptions=True)
        for ws in sockets:
            await ws.close()
        result.put((samples, [repr(o) for o in outcomes if isinstance(o, BaseException)]))

    asyncio.run(main())


# ---- driver -----------------------------------------------------------------------------------------------------


def start_server(extra: list[str]) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "signaling", "--port", "0", "--no-web", *extra]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.search(r"listening on (ws://\S+)", line)
    if not match:
        process.kill()
        raise SystemExit(f"server did not start: {line}")
    return process, match.group(1)


def metrics(url: str) -> dict[str, float]:
    http = "http://" + url.removeprefix("ws://").rstrip("/") + "/metrics"
    with urllib.request.urlopen(http, timeout=30) as response:
        return {line.split()[0]: float(line.split()[1]) for line in response.read().decode().splitlines()
                if line and not line.startswith("#")}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--flooders", type=int, default=2, help="addresses flooding ping messages (4 sockets each)")
    parser.add_argument("--ping-flooders", type=int, default=1, help="addresses flooding WebSocket ping frames")
    parser.add_argument("--holders", type=int, default=2, help="addresses holding every slot they can")
    parser.add_argument("--half-handshakers", type=int, default=1)
    parser.add_argument("--oversizers", type=int, default=1)
    parser.add_argument("--pairers", type=int, default=4, help="concurrent good pairing loops")
    parser.add_argument("--latency-pairs", type=int, default=20)
    parser.add_argument("--latency-rate", type=float, default=5.0, help="relays per second per pair")
    parser.add_argument("--abuser-nice", type=int, default=0,
                        help="run the abusive clients this much nicer than the rest (they share the machine's "
                             "cores with the server and the good clients; on a real network they would not)")
    parser.add_argument("--server-arg", action="append", default=[], help="extra p2pd-signal option (repeatable)")
    parser.add_argument("--control", action="store_true",
                        help="also relay the same timestamped messages through a second server no abuser touches, "
                             "at the same time: its p99 is the machine's own noise (other load on shared cores)")
    args = parser.parse_args()
    if args.seconds > 600:
        raise SystemExit("--seconds is at most 600")
    ctx = mp.get_context("fork")
    server, url = start_server(args.server_arg)
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    server_ps = psutil.Process(server.pid)
    rss_start = server_ps.memory_info().rss
    cpu_start = sum(server_ps.cpu_times()[:2])
    wall_start = time.monotonic()
    peak = [rss_start]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.05):
            with contextlib.suppress(psutil.Error):
                peak[0] = max(peak[0], server_ps.memory_info().rss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    abuse = ctx.Queue()
    good = ctx.Queue()
    control: Any = None
    control_samples: list[float] = []
    processes: list[Any] = []
    address = iter(f"127.0.0.{n}" for n in range(2, 255))
    try:
        seconds = args.seconds
        for _ in range(args.flooders):
            processes.append(ctx.Process(target=flooder, args=(port, next(address), seconds, False, abuse)))
        for _ in range(args.ping_flooders):
            processes.append(ctx.Process(target=flooder, args=(port, next(address), seconds, True, abuse)))
        for _ in range(args.holders):
            processes.append(ctx.Process(target=slot_holder, args=(url, next(address), seconds, abuse)))
        for _ in range(args.half_handshakers):
            processes.append(ctx.Process(target=half_handshaker, args=(port, next(address), seconds, abuse)))
        for _ in range(args.oversizers):
            processes.append(ctx.Process(target=oversizer, args=(url, port, next(address), 65536, seconds, abuse)))
        abusers = len(processes)
        for process in processes:
            process.start()
            if args.abuser_nice:  # their CPU is the attacker's, not the server's, on a real network
                with contextlib.suppress(psutil.Error):
                    psutil.Process(process.pid).nice(psutil.Process().nice() + args.abuser_nice)
        time.sleep(min(2.0, seconds / 5))  # the abuse is under way before the good clients start
        good_seconds = max(1.0, seconds - 4.0)
        workers = [ctx.Process(target=pairing_worker, args=(url, args.pairers, good_seconds, good)),
                   ctx.Process(target=latency_worker, args=(url, args.latency_pairs, args.latency_rate,
                                                            good_seconds, good))]
        if args.control:
            control, control_url = start_server(args.server_arg)
            control_queue = ctx.Queue()
            workers.append(ctx.Process(target=latency_worker, args=(control_url, args.latency_pairs,
                                                                    args.latency_rate, good_seconds, control_queue)))
        for process in workers:
            process.start()
        processes += workers
        if args.control:
            control_samples = control_queue.get(timeout=seconds + 120)[0]
            workers.pop()
        results = [good.get(timeout=seconds + 120) for _ in workers]
        durations, errors = next(r for r in results if isinstance(r[1], dict))
        samples, latency_errors = next(r for r in results if isinstance(r[1], list))
        reports = [abuse.get(timeout=seconds + 120) for _ in range(abusers)]
        counts = metrics(url)
        rss_end = server_ps.memory_info().rss
        cpu = sum(server_ps.cpu_times()[:2]) - cpu_start
        wall = time.monotonic() - wall_start
    finally:
        stop.set()
        for process in processes:
            process.join(30)
            if process.is_alive():
                process.kill()
        for process in (server, control):
            if process is not None:
                process.terminate()
                process.wait(30)

    print(f"signaling abuse benchmark: one server process (default limits), {os.cpu_count()} cores shared with "
          f"{abusers} abusive (nice +{args.abuser_nice}) and 2 good client processes, {args.seconds:g} s")
    for kind, source, tally in sorted(reports):
        print(f"  abuser {source:<11} {kind:<22} " + ", ".join(f"{k} {v}" for k, v in tally.items()))
    total = len(durations) + sum(errors.values())
    print(f"good pairings:            {len(durations) / good_seconds:.1f}/s ({len(durations)} of {total} in "
          f"{good_seconds:g} s, {args.pairers} concurrent; failures: {errors or 'none'})")
    if durations:
        print(f"pairing time p50 / p99:   {percentile(durations, 0.5) * 1000:.0f} ms / "
              f"{percentile(durations, 0.99) * 1000:.0f} ms")
    if samples:
        print(f"good relay p50 / p99:     {percentile(samples, 0.5) * 1000:.1f} ms / "
              f"{percentile(samples, 0.99) * 1000:.1f} ms (max {max(samples) * 1000:.1f} ms; {len(samples)} "
              f"relays, {args.latency_pairs} pairs at {args.latency_rate:g}/s; errors: {latency_errors or 'none'})")
    if control_samples:
        print(f"control relay p50 / p99:  {percentile(control_samples, 0.5) * 1000:.1f} ms / "
              f"{percentile(control_samples, 0.99) * 1000:.1f} ms (max {max(control_samples) * 1000:.1f} ms; "
              "a second server no abuser touches, at the same time: the machine's own noise)")
    print(f"server RSS:               {rss_start / 2**20:.0f} MiB at start, peak {peak[0] / 2**20:.0f} MiB, "
          f"{rss_end / 2**20:.0f} MiB at the end")
    print(f"server CPU:               {cpu:.1f} s in {wall:.1f} s ({100 * cpu / wall:.0f} % of one core)")
    keys = ("connections_refused_address", "handshakes_refused_rate", "sockets_refused",
            "connections_closed_rate_limit", "connections_dropped_flood",
            "connections_closed_slow", "connections_closed_idle", "connections_refused")
    print("server counters:          " + ", ".join(f"{k} {int(counts.get(f'p2pd_signal_{k}_total', 0))}"
                                                  for k in keys))
    print("                          errors " + ", ".join(
        f"{k.split('=')[1].strip(chr(34) + '}')} {int(v)}" for k, v in counts.items()
        if k.startswith("p2pd_signal_errors_total") and v))


if __name__ == "__main__":
    main()
