"""One transfer peer in its own process, driven over stdin/stdout with JSON lines (tests and benchmarks).

    python -m tests.transfer.peer send (--blob PATH | --raw PATH) [--mms N] [--idle S]
    python -m tests.transfer.peer recv --dest DIR [--mms N] [--idle S] [--decline] [--decode]
    python -m tests.transfer.peer bare-send --size N --chunk N      (raw data channel, no protocol)
    python -m tests.transfer.peer bare-recv --size N

Signaling: the first stdin line is {"offer": null} (this peer makes the offer, prints {"sdp": ...}, then reads
{"answer": ...}) or {"offer": "<sdp json>"} (this peer answers, prints {"sdp": ...}). Afterwards stdin may
carry {"cancel": "reason"}; stdout carries {"event": "progress"|"result"|"error", ...} lines. Every result
line includes the process's peak RSS (``max_rss``, bytes) and its CPU seconds (user + system) from the open
channel on (``cpu``). The UDP buffers are widened as ``p2pd`` does (:mod:`p2pd.transfer.sockets`); ``--stock``
leaves aiortc's data path as aiortc made it (no :func:`p2pd.transfer.datapath.tune`).

End to end (benchmarks): ``send --raw`` compresses a raw JSONL file into a blob first (streaming, in a thread)
and reports the wall-clock time it started (``t_start``); ``recv --decode`` decompresses the received blob
(streaming, in a thread) and reports when it finished (``t_end``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from p2pd.errors import P2pdError  # noqa: E402
from p2pd.support.eventloop import run  # noqa: E402
from p2pd.transfer.channel import TransferControl, attach, receive_blob, send_blob  # noqa: E402
from p2pd.transfer.datapath import tune  # noqa: E402
from p2pd.transfer.frames import OfferInfo  # noqa: E402
from p2pd.transfer.sockets import widen_buffers  # noqa: E402
from p2pd.transfer.tap import Message  # noqa: E402
from tests.transfer import rtc  # noqa: E402


def emit(**obj: Any) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def peak_rss() -> int:
    """Peak resident set of this process image. VmHWM, not ru_maxrss: on Linux ru_maxrss survives execve, so a
    child forked from a large parent would report the parent's peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


async def read_line(reader: asyncio.StreamReader) -> dict[str, Any]:
    line = await reader.readline()
    if not line:
        raise EOFError("stdin closed")
    return json.loads(line)


async def stdin_reader() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


RULES: list[Any] = []  # the delayed-SACK rule installed (its counters go into the result line)


async def connect(reader: asyncio.StreamReader, stock: bool = False) -> tuple[Any, Any]:
    pc = rtc.new_peer()
    ch = rtc.channel(pc, 0)
    attach(ch)
    first = await read_line(reader)
    if first.get("offer") is None:
        emit(sdp=await rtc.make_offer(pc))
        answer = await read_line(reader)
        await pc.setRemoteDescription(rtc.description_from_json(answer["answer"]))
    else:
        emit(sdp=await rtc.make_answer(pc, first["offer"]))
    await rtc.wait_open(ch, 20)
    widen_buffers(pc)  # as p2pd.transfer.peer.connect does
    if not stock:
        RULES.append(tune(pc))
    return pc, ch


def cpu_seconds() -> float:
    """User + system CPU time of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def sacks() -> dict[str, int]:
    """SACKs the delayed-SACK rule sent and deferred (none when aiortc's own rule ran)."""
    rule = RULES[0] if RULES else None
    return {"sacks": rule.sent, "deferred": rule.deferred, "gaps": rule.gaps} if rule is not None else {}


async def watch_cancel(reader: asyncio.StreamReader, control: TransferControl) -> None:
    while True:
        try:
            msg = await read_line(reader)
        except (EOFError, ValueError):
            return
        if "cancel" in msg:
            control.cancel(msg["cancel"])


def progress(done: int, total: int) -> None:
    emit(event="progress", done=done, total=total)


async def main(args: argparse.Namespace) -> int:
    reader = await stdin_reader()
    pc, ch = await connect(reader, args.stock)
    cpu_start = cpu_seconds()

    def spent() -> dict[str, Any]:  # what every result and error line ends with
        return {"max_rss": peak_rss(), "cpu": cpu_seconds() - cpu_start, **sacks()}

    control = TransferControl()
    watcher = asyncio.ensure_future(watch_cancel(reader, control))
    started = time.perf_counter()
    try:
        if args.mode == "send":
            t_start = time.time()
            if args.blob:
                blob_path = Path(args.blob)
            else:
                blob_path = await asyncio.to_thread(compress_file, Path(args.raw))
            res = await send_blob(ch, blob_path, OfferInfo("bench", "claude-code", "session", 1),
                                  on_progress=progress, idle_timeout=args.idle, max_message_size=args.mms,
                                  control=control)
            emit(event="result", chunks_sent=res.chunks_sent, bytes_sent=res.bytes_sent,
                 resumed_bytes=res.resumed_bytes, chunk_size=res.chunk_size, elapsed=res.elapsed,
                 compressed_size=res.compressed_size, raw_size=res.raw_size, t_start=t_start,
                 **spent())
        elif args.mode == "recv":
            async def decide(offer: Any) -> bool:
                return not args.decline

            got = await receive_blob(ch, Path(args.dest), decide=decide, on_progress=progress,
                                     idle_timeout=args.idle, max_message_size=args.mms, control=control)
            raw_size = await asyncio.to_thread(decompress_file, got.path) if args.decode else None
            emit(event="result", path=str(got.path), bytes_received=got.bytes_received,
                 resumed_bytes=got.resumed_bytes, elapsed=got.elapsed, raw_size=raw_size, t_end=time.time(),
                 **spent())
        elif args.mode == "bare-send":
            await bare_send(ch, args.size, args.chunk)
            emit(event="result", elapsed=time.perf_counter() - started, **spent())
        elif args.mode == "bare-recv":
            elapsed = await bare_recv(ch, args.size)
            emit(event="result", elapsed=elapsed, **spent())
    except P2pdError as exc:
        emit(event="error", type=type(exc).__name__, message=str(exc), **spent())
        return 1
    finally:
        watcher.cancel()
        await pc.close()
    return 0


def compress_file(raw_path: Path) -> Path:
    """Stream a raw file into a blob file beside it (lz4 frame, 1 MiB at a time): bounded memory."""
    import hashlib

    import lz4.frame

    from p2pd.blob.container import HEADER_SIZE, BlobHeader

    out = raw_path.with_suffix(".blob")
    size = raw_path.stat().st_size
    digest = hashlib.sha256()
    written = 0
    with raw_path.open("rb") as src, out.open("wb") as dst:

        def put(piece: bytes) -> None:
            nonlocal written
            digest.update(piece)
            dst.write(piece)
            written += len(piece)

        dst.write(bytes(HEADER_SIZE))
        comp = lz4.frame.LZ4FrameCompressor(content_checksum=True)
        put(comp.begin(source_size=size))
        while block := src.read(1 << 20):
            put(comp.compress(block))
        put(comp.flush())
        dst.seek(0)
        header = BlobHeader(codec="lz4", raw_size=size, compressed_size=written, sha256=digest.digest())
        dst.write(header.pack())
    return out


def decompress_file(blob_path: Path) -> int:
    """Stream-decompress a received blob (payload already verified); return the raw size after checking it."""
    import lz4.frame

    from p2pd.blob.container import HEADER_SIZE, BlobHeader

    dec = lz4.frame.LZ4FrameDecompressor()
    total = 0
    with blob_path.open("rb") as fh:
        header = BlobHeader.unpack(fh.read(HEADER_SIZE))
        while block := fh.read(256 * 1024):
            total += len(dec.decompress(block, max_length=1 << 20))
            while not dec.needs_input and not dec.eof:
                total += len(dec.decompress(b"", max_length=1 << 20))
    if not dec.eof or total != header.raw_size:
        raise ValueError(f"decompressed {total} bytes, header says {header.raw_size}")
    return total


async def bare_send(ch: Any, size: int, chunk: int) -> None:
    """The data channel's ceiling: random bytes in ``chunk``-byte messages, same watermarks, no protocol."""
    from p2pd.transfer.channel import HIGH_WATER, LOW_WATER

    block = os.urandom(chunk)
    low = asyncio.Event()
    ch.bufferedAmountLowThreshold = LOW_WATER
    ch.on("bufferedamountlow", low.set)
    sent = 0
    while sent < size:
        if ch.bufferedAmount > HIGH_WATER:
            low.clear()
            await low.wait()
            continue
        n = min(chunk, size - sent)
        ch.send(block if n == chunk else block[:n])
        sent += n
    done = asyncio.Event()
    ch.on("message", lambda m: done.set())
    await asyncio.wait_for(done.wait(), 120)  # the receiver's "got everything"


async def bare_recv(ch: Any, size: int) -> float:
    got = 0
    first: float | None = None
    done = asyncio.Event()

    def on_message(m: bytes) -> None:
        nonlocal got, first
        if first is None:
            first = time.perf_counter()
        got += len(m)
        if got >= size:
            done.set()

    tap = attach(ch)  # messages that arrived before this handler are in the tap's queue
    while (event := tap.pop()) is not None:
        if isinstance(event, Message):
            on_message(event.data)
    tap.detach()
    ch.on("message", on_message)
    await asyncio.wait_for(done.wait(), 600)
    ch.send(b"done")
    await asyncio.sleep(0.2)
    return time.perf_counter() - (first or time.perf_counter())


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["send", "recv", "bare-send", "bare-recv"])
    p.add_argument("--blob")
    p.add_argument("--dest")
    p.add_argument("--mms", type=int, default=65536)
    p.add_argument("--idle", type=float, default=30.0)
    p.add_argument("--raw")
    p.add_argument("--decline", action="store_true")
    p.add_argument("--decode", action="store_true")
    p.add_argument("--size", type=int, default=0)
    p.add_argument("--chunk", type=int, default=65536)
    p.add_argument("--stock", action="store_true", help="leave aiortc's data path as it is (no datapath.tune)")
    return p.parse_args(argv)


if __name__ == "__main__":
    sys.exit(run(main(parse(sys.argv[1:]))))
