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


def generate_rollout(size: int, seed: int = 0) -> bytes:
    """At least ``size`` bytes of a Codex rollout made of the corpus's Codex lines: its ``session_meta`` once, then
    the other lines in turn, each copy with fresh item and call ids and its tool outputs and texts grown to
    real sizes (a few KB, as real rollouts' command outputs are)."""
    from tests.corpus import codex_files

    rng = random.Random(seed)
    objs = [json.loads(line) for path in codex_files() for line in path.read_bytes().splitlines() if line.strip()]
    meta = next(o for o in objs if o.get("type") == "session_meta")
    rest = [o for o in objs if o.get("type") != "session_meta"]
    out = [json.dumps(meta, separators=(",", ":")).encode() + b"\n"]
    total = len(out[0])
    i = 0
    while total < size:
        obj = json.loads(json.dumps(rest[i % len(rest)]))
        i += 1
        payload = obj.get("payload")
        if isinstance(payload, dict):
            for key in ("id", "call_id"):
                if isinstance(payload.get(key), str):
                    payload[key] = f"{payload[key]}-{rng.getrandbits(64):016x}"
            if isinstance(payload.get("output"), str):
                payload["output"] += "\n" + "\n".join(f"line {n}: {rng.getrandbits(96):024x}"
                                                       for n in range(rng.randrange(20, 200)))
        line = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
        out.append(line + b"\n")
        total += len(line) + 1
    return b"".join(out)


def generate_recording(size: int, seed: int = 0) -> bytes:
    """At least ``size`` bytes of a Gemini CLI JSONL recording made of the corpus's Gemini messages, as the
    recorder writes one: the session's metadata first; then the messages in turn, each copy with a fresh id,
    an agent message with tool calls written twice (first with its calls executing, then again finished, with
    their results grown to real sizes), now and then a ``$set`` of the summary, and a ``$rewindTo`` taking back
    the last few messages."""
    from tests.corpus import gemini_files

    rng = random.Random(seed)
    source = next(p for p in gemini_files() if p.suffix == ".json")
    data = json.loads(source.read_bytes())
    messages = [m for m in data["messages"] if isinstance(m, dict)]
    meta = {k: v for k, v in data.items() if k != "messages"}
    out = [json.dumps(meta, separators=(",", ":")).encode() + b"\n"]
    total, i = len(out[0]), 0
    recent: list[str] = []

    def put(obj: object) -> None:
        nonlocal total
        line = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        out.append(line)
        total += len(line)

    while total < size:
        msg = json.loads(json.dumps(messages[i % len(messages)]))
        i += 1
        msg["id"] = f"{rng.getrandbits(128):032x}"
        calls = msg.get("toolCalls")
        if isinstance(calls, list) and calls:
            put({**msg, "toolCalls": [{**c, "status": "executing", "result": None} for c in calls]})
            if rng.random() < 0.3:  # a notice while the calls run: written before the finished version
                put({"id": f"{rng.getrandbits(128):032x}", "timestamp": msg.get("timestamp"), "type": "info",
                     "content": "Running the tools…"})
            for c in calls:
                c["result"] = [{"functionResponse": {"id": c.get("id"), "name": c.get("name"), "response": {
                    "output": "\n".join(f"line {n}: {rng.getrandbits(96):024x}"
                                        for n in range(rng.randrange(20, 200)))}}}]
        put(msg)
        recent = [*recent[-5:], msg["id"]]
        if rng.random() < 0.01:
            put({"$set": {"summary": f"working on step {i}", "lastUpdated": msg.get("timestamp")}})
        if rng.random() < 0.005 and len(recent) > 3:
            put({"$rewindTo": recent[-3]})
            recent = recent[:-3]
    return b"".join(out)
