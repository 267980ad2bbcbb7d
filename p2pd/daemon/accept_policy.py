"""Whether the daemon takes a transfer a paired device offers (pure: no I/O but reading the config file).

The ``[accept]`` table of the config file (``p2pd/config.py``; every key optional)::

    [accept]
    max_size = 50_000_000            # bytes of conversation JSON (decompressed); larger offers are refused
    devices = ["laptop", "9f3a…"]    # paired devices (id or name) allowed to send here; absent: all of them
    transfers_per_hour = 20          # per device: conversations accepted in the last hour
    bytes_per_hour = 200_000_000     # per device: their bytes (decompressed) in the last hour
    ask = true                       # every transfer waits, pending, until accepted or declined here

The verdict is taken on the OFFER alone, before a byte of the conversation is stored. Refusals go back to the
sender as REJECT with a typed code — ``too_large``, ``not_allowed``, ``rate_limited`` (``p2pd/transfer/SPEC.md``)
— which the sender records as the cause (``declined``, ``not_allowed``, ``rate_limited``). A resumed transfer of
a conversation already accepted within the hour does not count again. ``ask`` does not apply to a handoff this
daemon claimed (claiming was the decision; ``accept_handoffs`` governs it); the other rules do.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from p2pd.errors import Cause, InvalidInputError
from p2pd.transfer.codes import Code

log = logging.getLogger("p2pd.daemon")

HOUR = 3600.0
KEYS = ("max_size", "devices", "transfers_per_hour", "bytes_per_hour", "ask")


class Decision(StrEnum):
    ACCEPT = "accept"
    ASK = "ask"
    REFUSE = "refuse"


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    code: Code = Code.DECLINED  # for REFUSE: the REJECT code the sender gets
    cause: Cause = Cause.DECLINED  # for REFUSE: what this side records
    reason: str = ""


@dataclass(frozen=True)
class Accepted:
    """A conversation accepted from a device: its SHA-256, size (decompressed) and when (epoch seconds)."""

    sha256: str
    size: int
    at: float


@dataclass(frozen=True)
class AcceptPolicy:
    max_size: int | None = None
    devices: tuple[str, ...] | None = None
    transfers_per_hour: int | None = None
    bytes_per_hour: int | None = None
    ask: bool = False

    def judge(self, *, device_id: str, device_name: str, sha256: str, size: int, recent: Iterable[Accepted],
              now: float, claimed_handoff: bool = False) -> Verdict:
        """The verdict on an offer of ``size`` bytes (decompressed) from a device, given what was accepted from
        it before (``recent``; older than an hour is ignored)."""
        if self.devices is not None and device_id not in self.devices and device_name not in self.devices:
            return Verdict(Decision.REFUSE, Code.NOT_ALLOWED, Cause.NOT_ALLOWED,
                           "this device's accept policy takes no transfers from you")
        if self.max_size is not None and size > self.max_size:
            return Verdict(Decision.REFUSE, Code.TOO_LARGE, Cause.TOO_LARGE,
                           f"the conversation is {size} bytes, over this device's accept limit of "
                           f"{self.max_size} bytes")
        window = {a.sha256: a for a in recent if now - a.at < HOUR}
        if sha256 not in window:  # (a resume of one already accepted counts once)
            if self.transfers_per_hour is not None and len(window) + 1 > self.transfers_per_hour:
                return Verdict(Decision.REFUSE, Code.RATE_LIMITED, Cause.RATE_LIMITED,
                               f"over this device's limit of {self.transfers_per_hour} transfers per hour "
                               "from one sender; try again later")
            used = sum(a.size for a in window.values())
            if self.bytes_per_hour is not None and used + size > self.bytes_per_hour:
                return Verdict(Decision.REFUSE, Code.RATE_LIMITED, Cause.RATE_LIMITED,
                               f"over this device's limit of {self.bytes_per_hour} bytes per hour from one "
                               "sender; try again later")
        if self.ask and not claimed_handoff:
            return Verdict(Decision.ASK)
        return Verdict(Decision.ACCEPT)


def parse_policy(table: Any, where: str = "the config file") -> AcceptPolicy:
    """The ``[accept]`` table as a policy; one clear error naming the key for anything malformed."""
    if table is None:
        return AcceptPolicy()
    if not isinstance(table, dict):
        raise InvalidInputError(f"'accept' in {where} must be a table ([accept])")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise InvalidInputError(f"unknown key accept.{unknown[0]} in {where} (known: {', '.join(KEYS)})")

    def count(key: str) -> int | None:
        value = table.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInputError(f"accept.{key} in {where} must be a whole number ≥ 0, not {value!r}")
        return value

    devices = table.get("devices")
    if devices is not None and (not isinstance(devices, list)
                                or not all(isinstance(d, str) and d.strip() for d in devices)):
        raise InvalidInputError(f"accept.devices in {where} must be a list of device ids or names")
    ask = table.get("ask", False)
    if not isinstance(ask, bool):
        raise InvalidInputError(f"accept.ask in {where} must be true or false")
    return AcceptPolicy(max_size=count("max_size"),
                        devices=tuple(d.strip() for d in devices) if devices is not None else None,
                        transfers_per_hour=count("transfers_per_hour"), bytes_per_hour=count("bytes_per_hour"),
                        ask=ask)


def configured_policy() -> AcceptPolicy:
    """The policy in the config file (``P2PD_CONFIG`` or the platform's config folder)."""
    from p2pd.config import config_path, load_config

    return parse_policy(load_config().get("accept"), str(config_path()))


class PolicySource:
    """The policy a running daemon applies: the config file's ``[accept]``, read again when the file changed
    (its path, modification time or size — looked at on each offer) or after :meth:`reload` (SIGHUP). A changed
    file that does not parse keeps the previous policy (logged). ``PolicySource(policy)`` is a fixed one."""

    def __init__(self, fixed: AcceptPolicy | None = None) -> None:
        self._fixed = fixed
        self._key: tuple[str, int, int] | None = None
        self._policy = fixed if fixed is not None else configured_policy()  # a bad file at start-up is an error
        self._key = self._file_key()

    @staticmethod
    def _file_key() -> tuple[str, int, int]:
        from p2pd.config import config_path

        path = config_path()
        try:
            st = path.stat()
        except OSError:
            return (str(path), 0, -1)
        return (str(path), st.st_mtime_ns, st.st_size)

    def reload(self) -> None:
        """Read the file again at the next offer, changed or not."""
        self._key = None

    def current(self) -> AcceptPolicy:
        if self._fixed is not None:
            return self._fixed
        key = self._file_key()
        if key != self._key:
            self._key = key
            try:
                self._policy = configured_policy()
                log.info("[accept] policy (re)read: %s", self._policy)
            except InvalidInputError as exc:
                log.warning("kept the previous [accept] policy: %s", exc)
        return self._policy


__all__ = ["HOUR", "AcceptPolicy", "Accepted", "Decision", "PolicySource", "Verdict", "configured_policy",
           "parse_policy"]
