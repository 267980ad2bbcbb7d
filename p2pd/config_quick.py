"""The config file's quick check: msgspec Structs that say "fits" or "not sure", so a valid file is never the
reason a command imports pydantic.

Every ``p2pd`` command reads ``config.toml`` first, and :mod:`p2pd.config_file` checks it with pydantic: importing
pydantic and building its models costs ~65 ms (``p2pd devices``: 0.13 s without a config file, 0.20 s with one), on
every command of every user who set a signaling server. :func:`fits` checks the parsed file against Structs of the
same keys under rules at least as strict as the pydantic model's — every value of the type it declares (no
coercion), the same ranges and lengths, unknown keys refused, patterns limited to ASCII and anchored at the very
end —, so what it accepts the model accepts (a seeded test holds it on mutated files, and that the Structs declare
the model's keys). When it does not fit, the model decides: its error, naming each key, is the one a user sees.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

_Positive = Annotated[float, msgspec.Meta(gt=0)]


class QuickIceServer(msgspec.Struct, forbid_unknown_fields=True):
    urls: str | Annotated[list[str], msgspec.Meta(min_length=1)]  # (the model takes one URL as a list of it)
    username: str | None = None
    credential: str | None = None


class QuickSessionLinks(msgspec.Struct, forbid_unknown_fields=True):
    rate_per_minute: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 60
    backlog_per_session: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 50
    backlog_per_device: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 500
    links_per_device: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 64
    queue_max_messages: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 1000
    queue_max_age_hours: _Positive = 168.0
    delivered_max_age_hours: _Positive = 168.0


_Command = Annotated[list[Annotated[str, msgspec.Meta(min_length=1)]], msgspec.Meta(min_length=1)] \
    | Annotated[str, msgspec.Meta(min_length=1)]


class QuickDelegateCommands(msgspec.Struct, forbid_unknown_fields=True, rename={"claude_code": "claude-code"}):
    claude_code: _Command | None = None
    codex: _Command | None = None


class QuickConfig(msgspec.Struct, forbid_unknown_fields=True):
    redact: bool | None = None
    signal: Annotated[str, msgspec.Meta(pattern=r"^wss?://[!-~]+\Z")] | None = None
    web_url: Annotated[str, msgspec.Meta(pattern=r"^https?://[!-~]+\Z")] | None = None
    ice_servers: list[QuickIceServer] | None = None
    relay_only: bool | None = None
    connect_timeout: Annotated[float, msgspec.Meta(gt=0, le=3600)] | None = None
    receive_max_size: Annotated[int, msgspec.Meta(ge=1, le=1 << 40)] | None = None
    min_rate: Annotated[float, msgspec.Meta(ge=0)] | None = None
    rate_window: Annotated[float, msgspec.Meta(ge=0.1, le=86400)] | None = None
    port: Annotated[int, msgspec.Meta(ge=0, le=65535)] | None = None
    host: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    allow_remote: bool | None = None
    cors_origins: list[Annotated[str, msgspec.Meta(pattern=r"^[!-)+-~]+\Z")]] | None = None
    accept_handoffs: bool | None = None
    handoff_agent: str | None = None  # (one of the import targets: checked in fits)
    handoff_claim_timeout: _Positive | None = None
    partial_max_age_hours: _Positive | None = None
    partial_max_mb: _Positive | None = None
    outbox_max_age_hours: _Positive | None = None
    outbox_max_mb: _Positive | None = None
    accept: dict[str, Any] | None = None
    session_links: QuickSessionLinks | None = None
    delegate_command: _Command | QuickDelegateCommands | None = None


def fits(data: dict[str, Any]) -> bool:
    """True when the pydantic model (:class:`p2pd.config_file.ConfigFile`) surely takes ``data``; False: not
    sure — ask the model."""
    try:
        config = msgspec.convert(data, QuickConfig, strict=True)
    except msgspec.ValidationError:
        return False
    if config.handoff_agent is not None:
        from p2pd.agents.registry import import_targets

        return config.handoff_agent in import_targets()
    return True
