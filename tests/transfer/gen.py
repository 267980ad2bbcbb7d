"""Large conversations for transfer tests and benchmarks, made of the corpus's real Claude Code lines.

Lines are taken from the corpus sessions in turn and each copy gets fresh ``uuid``/``parentUuid`` values, so
the result is valid JSONL that compresses like a real transcript (repeats are further apart than lz4's
64 KiB window) while being as large as asked.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

from tests.corpus import claude_code_files


def corpus_lines() -> list[bytes]:
    lines: list[bytes] = []
    for path in claude_code_files(include_subagents=True):
        lines.extend(line for line in path.read_bytes().splitlines() if line.strip())
    if not lines:
        raise RuntimeError("the transcript corpus has no Claude Code lines")
    return lines


def generate_conversation(size: int, seed: int = 0, *, team_every: int = 0, one_run: bool = False) -> bytes:
    """At least ``size`` bytes of JSONL (whole lines). ``team_every``: after every that many corpus lines, an
    agent-team exchange (:func:`team_lines`) joins the chain — a session of a lead and its teammates.
    ``one_run``: the user's prompts after the first are left out — one prompt, then an agent run of the whole size
    (its tool results stay)."""
    rng = random.Random(seed)
    lines = corpus_lines()
    out: list[bytes] = []
    total = 0
    parent: str | None = None
    i = 0
    team = team_lines(rng) if team_every else None
    while total < size:
        line = lines[i % len(lines)]
        i += 1
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if one_run and total and _is_prompt(obj):
            continue
        extra = next(team) if team is not None and i % team_every == 0 else []
        for value in [obj, *extra]:
            if isinstance(value, dict) and "uuid" in value:
                value["uuid"] = f"{rng.getrandbits(128):032x}"
                value["parentUuid"] = parent
                parent = value["uuid"]
            line = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
            out.append(line + b"\n")
            total += len(line) + 1
    return b"".join(out)


def _is_prompt(obj: Any) -> bool:
    """A user line of the user's own words (not a line of tool results)."""
    message = obj.get("message") if isinstance(obj, dict) and obj.get("type") == "user" else None
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, str) or (isinstance(content, list) and not any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content))


def team_lines(rng: random.Random) -> Iterator[list[dict[str, Any]]]:
    """Agent-team exchanges, one list of lines (a lead's team call and its result, or a teammate's notice) at a
    time: a team made and three teammates spawned, then, over and over, a task created, claimed, discussed and
    completed (each line's ``uuid`` and ``parentUuid`` are the caller's to set)."""
    stamp = "2026-02-12T10:00:00.000Z"

    def call(name: str, tool_input: dict[str, Any], result: str) -> list[dict[str, Any]]:
        call_id = f"toolu_{rng.getrandbits(64):016x}"
        base = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/proj", "sessionId": "team-session",
                "version": "2.1.39", "gitBranch": "main", "timestamp": stamp, "uuid": "", "parentUuid": None}
        return [{**base, "type": "assistant", "message": {
                    "id": f"msg_{rng.getrandbits(64):016x}", "type": "message", "role": "assistant",
                    "model": "claude-opus-4-6", "content": [{"type": "tool_use", "id": call_id, "name": name,
                                                             "input": tool_input}]}},
                {**base, "type": "user", "message": {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": call_id, "content": result}]}}]

    yield call("TeamCreate", {"team_name": "squad", "description": "the work, shared"}, "Team squad created")
    members = ["alice", "bob", "carol"]
    for name in members:
        yield call("Task", {"team_name": "squad", "name": name, "subagent_type": "general-purpose",
                            "prompt": f"You are {name}, a member of squad."}, f"Spawned {name}")
    n = 0
    while True:
        n += 1
        who = members[n % len(members)]
        yield call("TaskCreate", {"subject": f"Part {n}", "description": f"Do part {n} " + "of the port " * 20},
                   f"Task #{n} created successfully: Part {n}")
        yield call("TaskUpdate", {"taskId": str(n), "owner": who, "status": "in_progress"}, f"Updated task #{n}")
        yield call("SendMessage", {"type": "message", "recipient": who, "content": f"Start on part {n}, please.",
                                   "summary": f"part {n}"}, "Message sent")
        yield [{"type": "user", "uuid": "", "parentUuid": None, "sessionId": "team-session", "timestamp": stamp,
                "message": {"role": "user", "content": f'<teammate-message teammate_id="{who}">'
                            '{"type":"idle_notification","from":"' + who + '"}</teammate-message>'}}]
        yield call("TaskUpdate", {"taskId": str(n), "status": "completed"}, f"Updated task #{n}")


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


def as_json_session(recording: bytes) -> bytes:
    """A JSONL recording's metadata (its first line) and its other lines as the elements of ``messages``: a Gemini
    CLI session in the older JSON format, indented as the CLI writes it."""
    lines = [json.loads(line) for line in recording.splitlines()]
    return json.dumps({**lines[0], "messages": lines[1:]}, indent=2).encode()


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
