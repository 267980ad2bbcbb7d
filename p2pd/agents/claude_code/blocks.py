"""Claude Code content blocks ⇄ A2A parts, losslessly.

| block                          | part                                                     |
|--------------------------------|----------------------------------------------------------|
| ``text``                       | ``text`` part, ``mediaType: text/plain``                 |
| ``image`` with base64 source   | ``raw`` part (the base64 as is), ``mediaType`` = image's |
| ``tool_use``                   | ``data`` part = the block, TOOL_USE media type           |
| ``tool_result``                | ``data`` part = the block, TOOL_RESULT media type        |
| ``thinking``                   | ``data`` part = the block, THINKING media type           |
| ``redacted_thinking``          | ``data`` part = the block, REDACTED_THINKING media type  |
| anything else (even non-dicts) | ``data`` part = the block, CLAUDE_CODE_BLOCK media type  |

Whatever a text or image block holds beyond what the part carries is kept in ``part.metadata.claudeCode.block``
so the block can be rebuilt exactly.
"""

from __future__ import annotations

import base64
import binascii
import copy
from typing import TYPE_CHECKING, Any

from p2pd.conversation import media_types as mt

if TYPE_CHECKING:
    from p2pd.conversation.model import Part

DATA_BLOCK_TYPES = {
    "tool_use": mt.TOOL_USE,
    "tool_result": mt.TOOL_RESULT,
    "thinking": mt.THINKING,
    "redacted_thinking": mt.REDACTED_THINKING,
}
MEDIA_TO_BLOCK_TYPE = {v: k for k, v in DATA_BLOCK_TYPES.items()}
_CC = "claudeCode"
_TEXT_KEYS = frozenset({"type", "text"})


def is_base64(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def block_part_json(block: Any) -> dict[str, Any]:
    """A block as its part's JSON (``Part.to_json_dict()``'s dict), made without the models (the streamed writer's
    path; :func:`block_to_part` is this, validated)."""
    if block.__class__ is dict:
        btype = block.get("type")
        if btype == "text" and (text := block.get("text")).__class__ is str:
            extra = {k: v for k, v in block.items() if k not in _TEXT_KEYS}
            if not extra:
                return {"text": text, "mediaType": mt.TEXT}
            return {"text": text, "metadata": {_CC: {"block": extra}}, "mediaType": mt.TEXT}
        if btype == "image":
            source = block.get("source")
            if (isinstance(source, dict) and source.get("type") == "base64"
                    and isinstance(source.get("data"), str) and isinstance(source.get("media_type"), str)
                    and is_base64(source["data"])):
                rest = copy.copy(block)
                rest["source"] = {k: v for k, v in source.items() if k != "data"}
                return {"raw": source["data"], "metadata": {_CC: {"block": rest}}, "mediaType": source["media_type"]}
        media = DATA_BLOCK_TYPES.get(btype, mt.CLAUDE_CODE_BLOCK) if isinstance(btype, str) else mt.CLAUDE_CODE_BLOCK
        return {"data": block, "mediaType": media}
    return {"data": block, "mediaType": mt.CLAUDE_CODE_BLOCK}


def block_to_part(block: Any) -> Part:
    from p2pd.conversation.model import Part

    return Part.model_validate(block_part_json(block))


def part_to_block(part: Part) -> Any:
    """The exact block a part was made from (for parts made by :func:`block_to_part`)."""
    cc = (part.metadata or {}).get(_CC)
    extra = cc.get("block") if isinstance(cc, dict) else None
    if part.text is not None:
        block: dict[str, Any] = {"type": "text", "text": part.text}
        if isinstance(extra, dict):
            block.update(extra)
        return block
    if part.raw is not None:
        if isinstance(extra, dict):
            block = copy.deepcopy(extra)
            block.setdefault("source", {})["data"] = part.raw
            return block
        return {"type": "image", "source": {"type": "base64", "media_type": part.media_type or "image/png",
                                            "data": part.raw}}
    if part.url is not None:
        return {"type": "text", "text": f"[file: {part.filename or part.url}]({part.url})"}
    return part.data_value
