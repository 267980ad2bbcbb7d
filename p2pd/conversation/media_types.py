"""Media types of the parts p2pd writes (documented in SPEC.md).

A2A has no standard part for tool calls, tool results or model reasoning, so they travel as ``data`` parts whose
``mediaType`` says what the data is. A reader that does not know a media type can still show the data as JSON.
"""

from __future__ import annotations

TEXT = "text/plain"
TOOL_USE = "application/vnd.p2pd.tool-use+json"
TOOL_RESULT = "application/vnd.p2pd.tool-result+json"
THINKING = "application/vnd.p2pd.thinking+json"
REDACTED_THINKING = "application/vnd.p2pd.redacted-thinking+json"
# A Claude Code content block of a kind p2pd has no special mapping for (kept verbatim).
CLAUDE_CODE_BLOCK = "application/vnd.p2pd.claude-code.block+json"
# A Codex response item / content item that has no closer mapping (kept verbatim).
CODEX_ITEM = "application/vnd.p2pd.codex.item+json"

TOOL_KINDS = {TOOL_USE, TOOL_RESULT}
THINKING_KINDS = {THINKING, REDACTED_THINKING}

# Extension URIs declared on messages that carry platform source data for an exact round trip.
EXT_CLAUDE_CODE = "https://p2pd.dev/a2a-ext/claude-code-source/v1"
EXT_CODEX = "https://p2pd.dev/a2a-ext/codex-source/v1"
# A Gemini CLI content part that has no closer mapping (kept verbatim).
GEMINI_PART = "application/vnd.p2pd.gemini.part+json"
