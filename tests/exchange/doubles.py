"""Test doubles of a p2pd peer, run as real processes: ``python -m tests.exchange.doubles MODE p2pd-args…`` runs the
real ``p2pd`` command with one thing changed:

* ``corrupt`` — a sender that flips one byte of the streamed payload after hashing it (the receiver must find the
  SHA-256 mismatch);
* ``stall`` — a sender whose packing stops after the first chunks (a transfer that stays mid-stream until it is
  cancelled);
* ``classic`` — a receiver that does not list STREAMS (an older p2pd);
* ``lz4only`` — a receiver that lists neither STREAMS nor zstd (like the page);
* ``hostile BLOB`` — a sender whose payload is the zstd blob file BLOB, whatever it holds (tests/bench/hostile.py
  makes them), streamed as the real sender streams its own; the offer's summary is made up.
"""

from __future__ import annotations

import sys
import threading
from typing import Any


def main() -> None:
    mode, argv = sys.argv[1], sys.argv[2:]
    from p2pd.exchange import producing
    from p2pd.transfer import receiving

    if mode == "hostile":
        blob_path, argv = argv[0], argv[1:]
        producing.Production.start = classmethod(lambda cls, source, work: _hostile(cls, blob_path, work))  # type: ignore[method-assign,assignment]
    elif mode in ("corrupt", "stall"):
        real_read = producing.Production.read
        stalled = threading.Event()

        def read(self: Any, offset: int, max_len: int, min_len: int) -> bytes:
            if mode == "stall" and offset > 0:
                sys.stderr.write("double: stalled\n")
                sys.stderr.flush()
                stalled.wait()  # until the process is stopped
            data = real_read(self, offset, max_len, min_len)
            if mode == "corrupt" and offset == 0 and len(data) > 100:
                data = data[:100] + bytes([data[100] ^ 0xFF]) + data[101:]
            return data

        producing.Production.read = read  # type: ignore[method-assign]
        if mode == "stall":
            real_stop = producing.Production.stop

            def stop(self: Any) -> None:
                stalled.set()
                real_stop(self)

            producing.Production.stop = stop  # type: ignore[method-assign]
    elif mode in ("classic", "lz4only"):
        real_init = receiving.ReceiveSide.__init__

        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            kwargs["stream_sink"] = None
            real_init(self, *args, **kwargs)
            if mode == "lz4only":
                self.machine._codec_ids = (1,)

        receiving.ReceiveSide.__init__ = init  # type: ignore[method-assign]
    else:
        raise SystemExit(f"unknown mode {mode}")
    from p2pd.cli.main import main as p2pd_main

    raise SystemExit(p2pd_main(argv))


def _hostile(cls: Any, blob_path: str, work: Any) -> Any:
    """A Production streaming the payload of a ready blob file (its own header's sizes), in pieces."""
    from p2pd.blob.container import HEADER_SIZE, BlobHeader

    with open(blob_path, "rb") as fh:
        header = BlobHeader.unpack(fh.read(HEADER_SIZE), max_raw_size=1 << 62)
    prod = cls(work, header.raw_size)

    def feed() -> None:
        prod._set_head({"title": "hostile", "contextId": "hostile", "origin": {"platform": "a2a"},
                        "counts": {"messages": 1}})
        with open(blob_path, "rb") as fh:
            fh.seek(HEADER_SIZE)
            while piece := fh.read(1 << 16):
                prod._append(piece)
        prod._complete(header.raw_size)

    threading.Thread(target=feed, name="hostile-producer", daemon=True).start()
    return prod


if __name__ == "__main__":
    main()
