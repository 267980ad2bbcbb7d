"""Large conversations for transfer tests and benchmarks, made of the corpus's real Claude Code lines.

Lines are taken from the corpus sessions in turn and each copy gets fresh ``uuid``/``parentUuid`` values, so
the result is valid JSONL that compresses like a real transcript (repeats are further apart than lz4's
64 KiB window) while being as large as asked.
"""

from __future__ import annotations

import json
import random

from tests.corpus import claude_code_files


def corpus_lines() -> list[bytes]:
    lines: list[bytes] = []
    for path in claude_code_files(include_subagents=True):
        lines.extend(line for line in path.read_bytes().splitlines() if line.strip())
    if not lines:
        raise RuntimeError("the transcript corpus has no Claude Code lines")
    return lines


def generate_conversation(size: int, seed: int = 0) -> bytes:
    """At least ``size`` bytes of JSONL (whole lines)."""
    rng = random.Random(seed)
    lines = corpus_lines()
    out: list[bytes] = []
    total = 0
    parent: str | None = None
    i = 0
    while total < size:
        line = lines[i % len(lines)]
        i += 1
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and "uuid" in obj:
            obj["uuid"] = f"{rng.getrandbits(128):032x}"
            obj["parentUuid"] = parent
            parent = obj["uuid"]
            line = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
        out.append(line + b"\n")
        total += len(line) + 1
    return b"".join(out)
