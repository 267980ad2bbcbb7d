"""Where a daemon send goes (a paired device, a pairing code or a link), and the error when a device or link
send has no device network."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from p2pd.errors import Cause, ConflictError


class NoNetworkError(ConflictError):
    """A device or link send without a device network (HTTP 409)."""

    cause = Cause.NO_NETWORK

    def __init__(self) -> None:
        super().__init__("no device network: start the daemon with a signaling server and pair a device first "
                         "(`p2pd pair`), or send to a code instead")


class SendTo(BaseModel):
    """Exactly one of: a paired ``device`` (id or name), a pairing ``code`` (``""`` or null: make a new one), a
    fan-out ``link``."""

    model_config = ConfigDict(extra="forbid")

    device: str | None = Field(default=None, max_length=200)
    code: str | None = Field(default=None, max_length=200)
    link: str | None = Field(default=None, max_length=200)

    @model_validator(mode="after")
    def _exactly_one(self) -> SendTo:
        given = [k for k in ("device", "code", "link") if k in self.model_fields_set]
        if len(given) != 1:
            raise ValueError("'to' needs exactly one of device, code or link")
        if given[0] != "code" and not getattr(self, given[0]):
            raise ValueError(f"'to.{given[0]}' must not be empty")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in ("device", "code", "link") if k in self.model_fields_set)


__all__ = ["NoNetworkError", "SendTo"]
