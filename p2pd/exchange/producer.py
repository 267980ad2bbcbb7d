"""The packing process of a streamed send: ``python -m p2pd.exchange.producer SESSION_FILE WORK_DIR`` (or, started
ahead as a spare, without arguments: it imports, then reads ``{"session", "work"}`` as one JSON line on stdin).

It converts the session into the conversation document (a Claude Code transcript, a Codex rollout or a Gemini CLI
JSONL recording as it is written; a document p2pd wrote is checked, then sent as it is; anything else is loaded
whole), compresses it with zstd as it goes, and writes records to its standard output, which the sending process
(:mod:`p2pd.exchange.producing`) reads while the transfer runs::

    tag u8, length u32 (big-endian), data
    b"S"  what the conversation is offered under, as JSON (title, contextId, origin, counts.messages): once,
          as soon as it is known — a streamed Claude Code session says it at its first prompt, while payload
          records already flow (the document itself carries title and counts at its end)
    b"D"  compressed payload bytes
    b"E"  JSON {"raw_size": n}: the payload is complete
    b"X"  JSON: the error that stopped it, when it is one of p2pd's (``P2pdError.to_wire()``: its class, cause and
          details travel, not only its text)

An error ends it with a non-zero exit status and its text on standard error. Running in its own process, the
conversion has a core of its own: the sender's event loop (pairing, ICE, the data channel) does not compete
with it for the GIL.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, cast

RECORD = 1 << 16  # gather compressed output into records of about this size (~0.8 MB of document)
JOB_SIZE = 2 << 20  # the zstd worker thread compresses the document in jobs of this many bytes (see _Out)


class _Out:
    """The records on standard output. The document goes into a zstd stream writer, whose ``write`` (C code, no
    Python frame: the writer calls it once per element) compresses as it goes and hands the compressed
    bytes to :meth:`_compressed`; those are sent in ``D`` records of about RECORD bytes."""

    def __init__(self) -> None:
        import zstandard

        from p2pd.blob.codecs import zstd_parameters

        self._zstd = zstandard
        # Compressed by one zstd worker thread (it releases the GIL) while this one converts: the compression
        # leaves the conversion's critical path for the other core. Its jobs are JOB_SIZE bytes of document:
        # each is emitted once done, so the payload streams (zstd's default job, ~15 MB of document, would hold
        # a 10 MB session back until its end). Measured on a 53 MB document (d50), this thread's CPU: 0.22 s
        # compressing itself, 0.04 s with the worker. With p2pd's 4 MiB window (codecs.ZSTD_WINDOW_LOG) and
        # each job starting from the whole window before it (overlap_log 9), the jobs compress about as one
        # stream does: 7.5 % of that document (8.8 % with a 2 MiB window and zstd's default overlap; 8.6 % with
        # the 4 MiB window alone), for +0.02 s of the worker's CPU; 7.3 % of the real 3.7 MB one (8.4 %).
        params = zstd_parameters(threads=1, job_size=JOB_SIZE, overlap_log=9)
        self._cctx = zstandard.ZstdCompressor(compression_params=params)
        self._stream = self._cctx.stream_writer(cast("IO[bytes]", _Sink(self._compressed)), size=-1,
                                                closefd=False)
        self.write: Callable[[bytes], object] = self._stream.write
        self._buf: list[bytes] = []
        self._held = 0

    def record(self, tag: bytes, data: bytes) -> None:
        view = tag + len(data).to_bytes(4, "big") + data
        while view:
            n = os.write(1, view)
            view = view[n:]

    def head(self, fields: dict[str, Any]) -> None:
        self.record(b"S", json.dumps(fields).encode())

    def _compressed(self, data: bytes) -> None:
        self._buf.append(data)
        self._held += len(data)
        if self._held >= RECORD:
            self.flush()

    def flush(self) -> None:
        if self._buf:
            self.record(b"D", b"".join(self._buf))
            self._buf, self._held = [], 0

    def finish(self) -> None:
        self._stream.flush(self._zstd.FLUSH_FRAME)
        self.flush()
        raw_size = self._cctx.frame_progression()[0]  # (the bytes the frame took in: the document's size)
        self.record(b"E", json.dumps({"raw_size": raw_size}).encode())


class _Sink:
    """Where the stream writer puts compressed bytes (it asks for a file-like ``write``)."""

    def __init__(self, take: Callable[[bytes], None]) -> None:
        self._take = take

    def write(self, data: bytes) -> int:
        self._take(bytes(data))
        return len(data)


def offered(doc_json: dict[str, Any]) -> dict[str, Any]:
    """What a whole document is offered under (the ``S`` record's fields)."""
    counts = doc_json.get("counts") or {}
    return {"title": doc_json.get("title", ""), "contextId": doc_json.get("contextId", ""),
            "origin": doc_json.get("origin") or {}, "counts": {"messages": counts.get("messages", 0)}}


def produce(session: Path, work: Path, out: Any) -> None:
    """Pack ``session``: a Claude Code transcript, a Codex rollout or a Gemini CLI JSONL recording converted as it
    is written; a conversation document p2pd wrote checked, then sent as it is
    (:mod:`p2pd.exchange.document_file`); anything else loaded whole."""
    from p2pd.agents import registry

    agent = registry.detect_agent(session)
    if agent is None:  # a conversation document (.a2a.json, a blob)
        from p2pd.exchange.document_file import pass_through

        if pass_through(session, out.write, on_head=out.head).as_is:
            out.finish()
            return
    elif (write_session := agent.write_streamed) is not None:  # Claude Code, Codex, Gemini CLI JSONL
        from p2pd.agents.spec import NotStreamable

        try:
            write_session(session, out.write, spool_dir=work, on_head=out.head)
            out.finish()
            return
        except NotStreamable:
            pass
    _whole(session, out)


def _whole(session: Path, out: Any) -> None:
    """The session or document loaded whole, then written (what cannot be converted or sent as a stream)."""
    from p2pd.agents.sources import load_file
    from p2pd.conversation.layout import document_lines
    from p2pd.support.gcpause import bulk_work

    with bulk_work():
        data = load_file(session).to_json_dict()
        out.head(offered(data))
        document_lines(data, out.write)
    out.finish()


def _job(argv: list[str]) -> tuple[Path, Path] | None:
    """The session and the spool folder: from the command line, or — a spare, started before the sender knew
    its job (:mod:`p2pd.exchange.spare`) — one JSON line on standard input, read once the modules
    are imported (None: the sender ended without a job for it)."""
    if len(argv) >= 3:
        return Path(argv[1]), Path(argv[2])
    import zstandard  # noqa: F401

    from p2pd.agents import registry  # noqa: F401
    from p2pd.agents.claude_code import streamed  # noqa: F401
    from p2pd.blob import stream  # noqa: F401

    line = sys.stdin.buffer.readline()
    if not line.strip():
        return None
    job = json.loads(line)
    return Path(job["session"]), Path(job["work"])


def main(argv: list[str]) -> int:
    gc.disable()  # a short-lived process building nothing cyclic worth collecting
    job = _job(argv)
    if job is None:
        os._exit(0)
    out = _Out()
    try:
        from p2pd.errors import writing

        with writing(f"the send's work folder {job[1].parent}", reading=job[0]):  # (a full disk: typed)
            produce(job[0], job[1], out)
    except Exception as exc:  # the parent shows the text; the status says it failed
        from p2pd.errors import P2pdError

        sys.stderr.write(f"{exc}\n" if isinstance(exc, P2pdError) else f"{type(exc).__name__}: {exc}\n")
        sys.stderr.flush()
        if isinstance(exc, P2pdError):
            with contextlib.suppress(OSError):  # (the sender may have gone: the status still says it failed)
                out.record(b"X", json.dumps(exc.to_wire()).encode())
        os._exit(2)
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
