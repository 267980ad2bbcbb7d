"""Values made by the Python side for the JS unit tests (web/tests/lz4.test.mjs runs this and reads its JSON):
LZ4 frames as p2pd's codec and other lz4.frame settings make them, and blobs made by p2pd.blob."""

from __future__ import annotations

import base64
import json
import random

import lz4.frame

from p2pd.blob import container as blob
from p2pd.blob.codecs import CODECS


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def main() -> None:
    rng = random.Random(6)
    words = ["tool", "call", "result", "the", "agent", "said", "file", "line", "error", "ok", "{", "}", '"', "\n"]
    text = " ".join(rng.choice(words) for _ in range(120_000)).encode()  # ~500 KB: many linked 64 KiB blocks
    noise = rng.randbytes(100_000)  # incompressible: stored (uncompressed) blocks
    inputs = {"short": b'{"hello":"world"}', "text": text, "noise": noise, "one-byte": b"x"}
    frames = []
    for name, raw in inputs.items():
        frames.append({"name": f"{name} (p2pd codec)", "raw": b64(raw), "frame": b64(CODECS["lz4"].compress(raw))})
    frames.append({"name": "text, 4 MiB blocks, block checksums, no content size", "raw": b64(text),
                   "frame": b64(lz4.frame.compress(text, block_size=lz4.frame.BLOCKSIZE_MAX4MB,
                                                   block_checksum=True, store_size=False))})
    frames.append({"name": "text, independent blocks, high compression", "raw": b64(text),
                   "frame": b64(lz4.frame.compress(text, block_linked=False, compression_level=9))})
    document = json.dumps({"format": "p2pd.conversation", "formatVersion": 1, "messages": [], "title": "é ✓"},
                          ensure_ascii=False).encode()
    print(json.dumps({"frames": frames, "blob": {"document": b64(document), "blob": b64(blob.encode(document))}}))


if __name__ == "__main__":
    main()
