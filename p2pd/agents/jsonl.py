"""Reading a JSONL file line by line, for every agent that writes one (Claude Code, Codex, Gemini).

Nothing here fails on bad input: every line becomes a :class:`SourceLine`, malformed ones carry the reason (not
JSON, not an object, not UTF-8, or cut off by the end of the file).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from p2pd.errors import InvalidInputError, NotFoundError

_HAS_SURROGATE = re.compile("[\udc80-\udcff]")


@dataclass
class SourceLine:
    n: int  # 1-based line number
    text: str
    value: Any = None
    error: str | None = None

    @property
    def obj(self) -> dict[str, Any] | None:
        return self.value if self.error is None and isinstance(self.value, dict) else None

    @property
    def type(self) -> str | None:
        o = self.obj
        t = o.get("type") if o else None
        return t if isinstance(t, str) else None


def read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise NotFoundError(f"transcript not found: {path}") from None
    except IsADirectoryError:
        raise InvalidInputError(f"{path} is a directory, not a transcript") from None
    return data.decode("utf-8", errors="surrogateescape")


def parse_lines(text: str) -> list[SourceLine]:
    """Split JSONL text into lines (a final newline does not make an extra line) and parse each one."""
    raw_lines = text.split("\n")
    truncated = bool(text) and not text.endswith("\n")
    if raw_lines and raw_lines[-1] == "":
        raw_lines.pop()
    out: list[SourceLine] = []
    for i, line in enumerate(raw_lines, start=1):
        out.append(parse_line(i, line, last_without_newline=truncated and i == len(raw_lines)))
    return out


def parse_line(n: int, line: str, *, last_without_newline: bool = False) -> SourceLine:
    if not line.strip():
        return SourceLine(n, line, error="blank line")
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        reason = f"not valid JSON ({exc.msg} at column {exc.colno})"
        if last_without_newline:
            reason = f"truncated: the file ends inside this line ({exc.msg} at column {exc.colno})"
        return SourceLine(n, line, error=reason)
    except RecursionError:
        return SourceLine(n, line, error="not valid JSON (nested too deeply)")
    if _HAS_SURROGATE.search(line):
        return SourceLine(n, line, value=value, error="not valid UTF-8")
    if not isinstance(value, dict):
        return SourceLine(n, line, value=value, error=f"not a JSON object (a {type(value).__name__})")
    return SourceLine(n, line, value=value)


def lines_to_text(values: Iterable[str]) -> str:
    return "".join(v + "\n" for v in values)
