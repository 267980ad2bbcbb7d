"""A generated long conversation document for the reader tests: ``size`` messages in the shapes real sessions have
(prompts, agent text, thinking, tool calls whose results come back in the next user message, the odd error, very
long unbroken lines that must wrap on a phone, one result longer than the page shows at first). Seeded."""

from __future__ import annotations

import random
from typing import Any

TOOL_USE = "application/vnd.p2pd.tool-use+json"
TOOL_RESULT = "application/vnd.p2pd.tool-result+json"
THINKING = "application/vnd.p2pd.thinking+json"
WORDS = ["agent", "tool", "file", "line", "error", "the", "result", "test", "build", "commit", "branch", "merge",
         "page", "reader", "outline"]


def message(role: str, kind: str, parts: list[dict[str, Any]], minute: int) -> dict[str, Any]:
    return {"role": role, "parts": parts, "messageId": f"m{minute}",
            "metadata": {"p2pd": {"active": True, "kind": kind,
                                  "timestamp": f"2026-02-12T{10 + minute // 3600 % 10:02d}:{minute // 60 % 60:02d}:"
                                               f"{minute % 60:02d}.000Z"}}}


def conversation(size: int = 5969, seed: int = 18, long_result_at: int = 7) -> dict[str, Any]:
    rng = random.Random(seed)

    def words(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    messages: list[dict[str, Any]] = []
    calls = 0
    while len(messages) < size:
        n = len(messages)
        step = n % 4 if n else 0
        if step == 0:
            messages.append(message("ROLE_USER", "prompt", [{"text": f"Turn {n + 1}: {words(12)}?",
                                                             "mediaType": "text/plain"}], n))
        elif step == 1:
            calls += 1
            command = "cat " + "/very/long/path/without/spaces" * 6 + f" && echo {words(4)}"
            messages.append(message("ROLE_AGENT", "response", [
                {"data": {"type": "thinking", "thinking": words(30)}, "mediaType": THINKING},
                {"text": words(25), "mediaType": "text/plain"},
                {"data": {"type": "tool_use", "id": f"toolu_{calls:06d}", "name": "Bash",
                          "input": {"command": command}}, "mediaType": TOOL_USE}], n))
        elif step == 2:
            body = ("x" * 30_000) if n == long_result_at - 1 else "\n".join(
                words(8) + " " + "unbroken_" * 20 for _ in range(rng.randint(1, 6)))
            messages.append(message("ROLE_USER", "tool-result", [
                {"data": {"type": "tool_result", "tool_use_id": f"toolu_{calls:06d}", "content": body,
                          "is_error": rng.random() < 0.05}, "mediaType": TOOL_RESULT}], n))
        else:
            messages.append(message("ROLE_AGENT", "response", [{"text": words(40), "mediaType": "text/plain"}], n))
    return {"format": "p2pd.conversation", "formatVersion": 1, "contextId": f"generated-{size}",
            "title": f"Generated conversation of {size} messages", "origin": {"platform": "claude-code",
                                                                          "sessionId": "generated"},
            "counts": {"messages": size, "toolCalls": calls}, "messages": messages[:size], "subagents": []}
