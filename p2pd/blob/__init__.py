"""The wire blob: a conversation document's JSON compressed behind a fixed header (spec: ``BLOB.md``).

- ``container`` — the 60-byte header (magic, version, codec, sizes, SHA-256) and encode/decode/read/write;
- ``codecs``    — the compression codecs by name and wire id (lz4 frame, zstd).
"""
