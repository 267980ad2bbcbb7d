"""The config file's keys and what each may hold, checked with pydantic before any value is used.

:func:`validate` takes the parsed TOML and raises one :class:`~p2pd.errors.InvalidInputError` naming every key
that is unknown (with the closest known key: ``signall`` → did you mean ``signal``?) or holds a bad value (with the
rule it breaks), so a typo is never silently ignored. The accessors in :mod:`p2pd.config` read the values and
apply the environment variables, which win over the file.

Every key p2pd reads is declared here, whichever module reads it; a new key is added here with its type and range,
and to :mod:`p2pd.config_quick`, whose msgspec Structs take a valid file first without importing this module (and
pydantic): only a file they are not sure of comes here (``tests/test_config_quick.py`` holds the two together).
The ``[accept]`` table is checked in depth by :mod:`p2pd.daemon.accept_policy`.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from p2pd.errors import InvalidInputError

Positive = Annotated[float, Field(gt=0)]


class IceServer(BaseModel):
    """One STUN/TURN server, as WebRTC's ``RTCIceServer``."""

    model_config = ConfigDict(extra="forbid", strict=True)
    urls: Annotated[list[str], BeforeValidator(lambda v: [v] if isinstance(v, str) else v), Field(min_length=1)]
    username: str | None = None
    credential: str | None = None


class SessionLinksTable(BaseModel):
    """``[session_links]``: what one paired device may push into session links here (checked on receipt, before
    anything is stored; :mod:`p2pd.daemon.session_limits`), and how long what waits for a device is kept."""

    model_config = ConfigDict(extra="forbid", strict=True)
    rate_per_minute: Annotated[int, Field(ge=1, le=100_000)] = 60  # session-link messages a device may send
    backlog_per_session: Annotated[int, Field(ge=1, le=100_000)] = 50  # undelivered, per session and device
    backlog_per_device: Annotated[int, Field(ge=1, le=1_000_000)] = 500  # undelivered from a device, in all
    links_per_device: Annotated[int, Field(ge=1, le=100_000)] = 64  # links a device introduced, kept here
    queue_max_messages: Annotated[int, Field(ge=1, le=1_000_000)] = 1000  # waiting for one offline device
    queue_max_age_hours: Positive = 168.0  # … and for at most this long
    delivered_max_age_hours: Positive = 168.0  # messages a session was given, kept this long for reading back


Command = Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)] \
    | Annotated[str, Field(min_length=1)]  # an argv list, or one string split as a shell would


class DelegateCommands(BaseModel):
    """``[delegate_command]`` as a table: the command for each agent a delegation may start."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=False)
    claude_code: Command | None = Field(default=None, alias="claude-code")
    codex: Command | None = None


class ConfigFile(BaseModel):
    """Every key of ``config.toml``; all optional (the defaults are the accessors')."""

    model_config = ConfigDict(extra="forbid", strict=True)
    # conversations
    redact: bool | None = None
    # the network
    signal: Annotated[str, Field(pattern=r"^wss?://\S+$")] | None = None
    web_url: Annotated[str, Field(pattern=r"^https?://\S+$")] | None = None
    ice_servers: list[IceServer] | None = None
    relay_only: bool | None = None
    connect_timeout: Annotated[float, Field(gt=0, le=3600)] | None = None
    # what a receiver takes
    receive_max_size: Annotated[int, Field(ge=1, le=1 << 40)] | None = None
    min_rate: Annotated[float, Field(ge=0)] | None = None
    rate_window: Annotated[float, Field(ge=0.1, le=86400)] | None = None
    # the daemon
    port: Annotated[int, Field(ge=0, le=65535)] | None = None
    host: Annotated[str, Field(min_length=1)] | None = None
    allow_remote: bool | None = None
    cors_origins: list[Annotated[str, Field(min_length=1, pattern=r"^[^*]+$")]] | None = None
    accept_handoffs: bool | None = None
    handoff_agent: str | None = None
    handoff_claim_timeout: Positive | None = None
    partial_max_age_hours: Positive | None = None
    partial_max_mb: Positive | None = None
    outbox_max_age_hours: Positive | None = None
    outbox_max_mb: Positive | None = None
    accept: dict[str, Any] | None = None
    session_links: SessionLinksTable | None = None
    # delegation (seed 002): the command that starts an agent on a delegated session (one for every agent, or a
    # table of them by agent); absent: never started
    delegate_command: Command | DelegateCommands | None = None

    @field_validator("handoff_agent")
    @classmethod
    def _known_agent(cls, value: str) -> str:
        from p2pd.agents.registry import import_targets

        if value not in import_targets():
            raise ValueError(f"must be one of {', '.join(import_targets())}")
        return value


KEYS = tuple(ConfigFile.model_fields)


def validate(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """``data`` (the parsed file) when every key is known and every value fits; else one error naming each key."""
    try:
        ConfigFile.model_validate(data)
    except ValidationError as exc:
        raise InvalidInputError(f"config file {path}: " + "; ".join(_problem(e) for e in exc.errors())) from None
    return data


# What a key that must match a pattern must be, in words.
_PATTERNS = {"signal": "must be a ws:// or wss:// URL", "web_url": "must be an http:// or https:// URL",
             "cors_origins": "must be origins such as https://app.example (no '*')"}


def _problem(error: Any) -> str:
    key = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        if len(error["loc"]) > 1:
            return f"unknown key '{key}'"
        close = difflib.get_close_matches(key, KEYS, n=1, cutoff=0.6)
        return f"unknown key '{key}'" + (f" (did you mean '{close[0]}'?)" if close else
                                          f" (the keys are {', '.join(KEYS)})")
    if error["type"] == "missing":
        return f"'{key}' is required"
    if error["type"] == "string_pattern_mismatch":
        rule = _PATTERNS.get(str(error["loc"][0]), "has the wrong form")
    else:
        rule = re.sub(r"^(Input|Value|List|String) should", "must", str(error["msg"]).removeprefix("Value error, "))
        rule = re.sub(r" after validation(, not \d+)?$", "", rule)
    return f"'{key}' {rule}, not {error['input']!r}"
