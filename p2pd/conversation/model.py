"""The p2pd conversation document: A2A 1.0 messages plus what is needed to resume and render them.

pydantic models, serialized in A2A 1.0 ProtoJSON style (camelCase, ``ROLE_USER``/``ROLE_AGENT``, one of
``text``/``raw``/``url``/``data`` per part). The full specification is ``SPEC.md`` beside this file.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from p2pd.conversation.shapes import A2A_PROTOCOL_VERSION as A2A_PROTOCOL_VERSION
from p2pd.conversation.shapes import FORMAT_NAME as FORMAT_NAME
from p2pd.conversation.shapes import FORMAT_VERSION as FORMAT_VERSION
from p2pd.conversation.shapes import JsonObject as JsonObject
from p2pd.conversation.shapes import MessageLike as MessageLike
from p2pd.conversation.shapes import PartLike as PartLike
from p2pd.conversation.shapes import Role as Role
from p2pd.conversation.shapes import count_message


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def to_json_dict(self) -> JsonObject:
        """The ProtoJSON-style dict: camelCase keys, unset optional fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class Part(_Model):
    """One A2A 1.0 part: exactly one of ``text``, ``raw`` (base64), ``url`` or ``data``."""

    text: str | None = None
    raw: str | None = None
    url: str | None = None
    data: Any = None
    media_type: str | None = None
    filename: str | None = None
    metadata: JsonObject | None = None

    @model_validator(mode="before")
    @classmethod
    def _data_may_be_json_null(cls, value: Any) -> Any:
        # ``{"data": null}`` is a data part whose value is JSON null (ProtoJSON NullValue); keep it apart from
        # "no data" by remembering that the key was present.
        if isinstance(value, dict) and "data" in value and value["data"] is None:
            value = {**value, "data": _JSON_NULL}
        return value

    @model_validator(mode="after")
    def _exactly_one_content(self) -> Part:
        present = [k for k in ("text", "raw", "url") if getattr(self, k) is not None]
        if self.data is not None:
            present.append("data")
        if len(present) != 1:
            found = ", ".join(present) if present else "none"
            raise ValueError(f"a part holds exactly one of text, raw, url, data (found: {found})")
        return self

    @property
    def kind(self) -> str:
        if self.text is not None:
            return "text"
        if self.raw is not None:
            return "raw"
        if self.url is not None:
            return "url"
        return "data"

    @property
    def data_value(self) -> Any:
        """The data of a data part, with JSON null restored."""
        return None if self.data is _JSON_NULL else self.data

    def to_json_dict(self) -> JsonObject:
        out: JsonObject = {}
        if self.text is not None:
            out["text"] = self.text
        elif self.raw is not None:
            out["raw"] = self.raw
        elif self.url is not None:
            out["url"] = self.url
        else:
            out["data"] = self.data_value
        if self.metadata is not None:
            out["metadata"] = self.metadata
        if self.filename is not None:
            out["filename"] = self.filename
        if self.media_type is not None:
            out["mediaType"] = self.media_type
        return out


class _JsonNull:
    """Marker for a data part whose value is JSON ``null``."""

    def __repr__(self) -> str:
        return "null"


_JSON_NULL: Any = _JsonNull()


class Message(_Model):
    """An A2A 1.0 ``Message``."""

    message_id: str
    context_id: str | None = None
    task_id: str | None = None
    role: Role
    parts: list[Part]
    metadata: JsonObject | None = None
    extensions: list[str] | None = None
    reference_task_ids: list[str] | None = None

    def to_json_dict(self) -> JsonObject:
        out: JsonObject = {"messageId": self.message_id}
        if self.context_id is not None:
            out["contextId"] = self.context_id
        if self.task_id is not None:
            out["taskId"] = self.task_id
        out["role"] = self.role.value
        out["parts"] = [p.to_json_dict() for p in self.parts]
        if self.metadata is not None:
            out["metadata"] = self.metadata
        if self.extensions is not None:
            out["extensions"] = self.extensions
        if self.reference_task_ids is not None:
            out["referenceTaskIds"] = self.reference_task_ids
        return out

    @property
    def p2pd(self) -> JsonObject:
        """The platform-neutral view p2pd adds to every message (``metadata.p2pd``)."""
        meta = (self.metadata or {}).get("p2pd")
        return meta if isinstance(meta, dict) else {}


class Origin(_Model):
    platform: str  # "claude-code", "codex", "gemini", "a2a"
    session_id: str | None = None
    cwd: str | None = None
    git_branch: str | None = None
    client_version: str | None = None
    transcript_path: str | None = None
    hostname: str | None = None


class Counts(_Model):
    messages: int = 0
    user_messages: int = 0
    agent_messages: int = 0
    tool_calls: int = 0
    tool_results: int = 0
    active_messages: int = 0
    side_branch_messages: int = 0
    source_lines: int = 0
    records: int = 0
    malformed_lines: int = 0
    subagents: int = 0

    def add(self, message: MessageLike) -> None:
        """Count one main-transcript message (its role, branch, tool calls and results)."""
        count_message(self, message)


class LineIssue(_Model):
    """A source line that could not be read as what it claims to be. It is kept (see ``Record``) and reported."""

    line: int
    reason: str


class Record(_Model):
    """A source line that is not a conversation message (progress rows, snapshots, unknown line types,
    malformed lines). Kept verbatim so the source can be rebuilt exactly.

    ``value`` is the parsed JSON of the line; ``text`` is the raw line when it was not valid JSON; ``raw`` is the
    line's bytes in base64 instead of ``text`` when they are not valid UTF-8 (a line cut inside a character).
    """

    line: int
    value: Any = None
    text: str | None = None
    raw: str | None = None


class Transcript(_Model):
    """The messages and other records of one source file."""

    messages: list[Message] = Field(default_factory=list)
    records: list[Record] = Field(default_factory=list)
    issues: list[LineIssue] = Field(default_factory=list)
    line_count: int = 0


class Subagent(Transcript):
    agent_id: str
    file_name: str
    meta: JsonObject | None = None


class SidecarFile(_Model):
    """A file stored beside a session (Claude Code's spilled tool results). UTF-8 text, else base64 in ``raw``."""

    name: str
    text: str | None = None
    raw: str | None = None


class ConversationDocument(_Model):
    """A whole conversation as p2pd hands it from one machine or agent to another."""

    format: str = FORMAT_NAME
    format_version: int = FORMAT_VERSION
    a2a_version: str = Field(default=A2A_PROTOCOL_VERSION, alias="a2aVersion")
    context_id: str
    title: str = ""
    summary: str | None = None
    created_at: str
    origin: Origin
    counts: Counts = Field(default_factory=Counts)
    messages: list[Message] = Field(default_factory=list)
    records: list[Record] = Field(default_factory=list)
    issues: list[LineIssue] = Field(default_factory=list)
    line_count: int = 0
    subagents: list[Subagent] = Field(default_factory=list)
    tool_results: list[SidecarFile] = Field(default_factory=list)
    metadata: JsonObject | None = None

    def main_transcript(self) -> Transcript:
        return Transcript(messages=self.messages, records=self.records, issues=self.issues,
                          line_count=self.line_count)

    def active_messages(self) -> list[Message]:
        return [m for m in self.messages if m.p2pd.get("active", True)]

    def to_json_dict(self) -> JsonObject:
        out = super().to_json_dict()
        out["messages"] = [m.to_json_dict() for m in self.messages]
        for sub, sub_out in zip(self.subagents, out["subagents"], strict=True):
            sub_out["messages"] = [m.to_json_dict() for m in sub.messages]
            _restore_nulls(sub_out, sub)
        _restore_nulls(out, self)
        return out


def _restore_nulls(out: JsonObject, doc: Transcript | ConversationDocument) -> None:
    """``exclude_none`` drops model fields that are None, so a record whose line was JSON ``null`` would lose its
    ``value``; put it back. (Nulls inside JSON values are untouched by ``exclude_none``.)"""
    for rec_out, rec in zip(out.get("records", []), doc.records, strict=True):
        if rec.value is None and rec.text is None and rec.raw is None:
            rec_out["value"] = None
