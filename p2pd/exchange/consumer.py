"""The checking process of a streamed receive: ``python -m p2pd.exchange.consumer``.

Started before the offer arrives (its imports then cost nothing on the way), it reads records on its standard
input (``tag u8, length u32 big-endian, data``): ``b"S"`` first, JSON ``{"codec", "staged", "max_raw_size"}``;
then ``b"D"`` compressed bytes; ``b"E"`` the raw size as 8 bytes, last. It decompresses into the staging file while
checking each element of the document (:class:`~p2pd.exchange.packing.StreamUnpacker`), and at the end writes
what it checked as JSON to its standard output (context id, title, counts, origin). A payload that is not a
conversation ends it at once with status 3 and the reason on standard error; a write this machine refuses (a
full disk) with status 4. Its own process: the receiver's event loop (aiortc) keeps its core while the document
is checked.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path

INVALID = 3  # the payload is not a conversation this side takes
STORAGE = 4  # this machine could not write it (an OSError)


def _read(n: int) -> bytes:
    got = sys.stdin.buffer.read(n)  # (a buffered read of n bytes reads until it has them, or the end)
    if len(got) < n:
        raise EOFError("the receiver closed the stream early")
    return got


def main(argv: list[str]) -> int:
    gc.disable()  # short-lived; the checker builds nothing cyclic worth collecting
    from p2pd.exchange.packing import StreamUnpacker

    folder = "its folder"
    try:
        head = _read(5)
        setup = json.loads(_read(int.from_bytes(head[1:], "big")))
        staged = Path(setup["staged"])
        folder = str(staged.parent)
        sink = StreamUnpacker(setup["codec"], staged.parent, max_raw_size=int(setup["max_raw_size"]), staged=staged)
        while True:
            head = _read(5)
            data = _read(int.from_bytes(head[1:], "big"))
            if head[:1] == b"D":
                sink.feed(data)
            else:
                sink.finish(int.from_bytes(data, "big"))
                break
        got = sink.unpacked
        assert got is not None
        out = {"context_id": got.context_id, "title": got.title, "counts": got.counts.model_dump(),
               "origin": got.origin.model_dump()}
        os.write(1, json.dumps(out).encode())
        return 0
    except OSError as exc:  # this machine refused (its disk is full, the folder is gone): not the payload's fault
        sys.stderr.write(f"cannot write the conversation in {folder}: {exc.strerror or exc}\n")
        sys.stderr.flush()
        return STORAGE
    except Exception as exc:  # the receiver shows the text; the status says the payload was refused
        sys.stderr.write(f"{exc}\n")
        sys.stderr.flush()
        return INVALID


if __name__ == "__main__":
    os._exit(main(sys.argv))
