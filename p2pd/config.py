"""User settings, kept simple: environment variables override a small TOML file.

File: ``<user config dir>/p2pd/config.toml`` (platformdirs; on Linux ``~/.config/p2pd/config.toml``), or the path in
``P2PD_CONFIG``. Keys:

| key      | env           | meaning                                                         |
|----------|---------------|-----------------------------------------------------------------|
| `redact` | `P2PD_REDACT` | mask secrets before a conversation leaves the machine (default false) |
| `signal` | `P2PD_SIGNAL` | the signaling server's URL (default `ws://127.0.0.1:8765`) |
| `ice_servers` | `P2PD_ICE_SERVERS` (JSON) | STUN/TURN: list of `{urls, username, credential}`; none by default |
| `relay_only` | `P2PD_RELAY_ONLY` | connect only through a relay (TURN): the peer never learns our addresses |
| `connect_timeout` | `P2PD_CONNECT_TIMEOUT` | seconds to try for a peer connection before the fallback (default 30) |
| `port`   | `P2PD_PORT`   | the daemon's HTTP port (`p2pd serve`; default 8737) |
| `host`   | `P2PD_HOST`   | the address the daemon binds (default `127.0.0.1`) |
| `allow_remote` | `P2PD_ALLOW_REMOTE` | allow a non-loopback `host` (default false: refused) |
| `cors_origins` | — | browser origins allowed to call the API (default none: no CORS headers at all) |
| `receive_max_size` | `P2PD_RECEIVE_MAX_SIZE` | largest conversation taken, bytes of JSON (default 1 GiB) |
| `min_rate` | `P2PD_MIN_RATE` | bytes/s a sender must keep up while chunks are due (default 4096; 0: none) |
| `rate_window` | `P2PD_RATE_WINDOW` | seconds over which `min_rate` is measured (default 60) |

The receive keys apply to `p2pd receive` and to everything the daemon receives. The daemon's accept policy for
paired devices is the `[accept]` table (``p2pd/daemon/accept_policy.py``, DAEMON.md).

An unreadable file is one clear error naming it. Every key's type and range are declared in
:mod:`p2pd.config_file` and checked (pydantic) whenever the file is read: an unknown key (``signall = …``: did you
mean ``signal``?) or a bad value is one error naming the key, never silently ignored. Environment variables win
over the file; a bad one is an error naming the variable.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from p2pd.errors import InvalidInputError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def config_path() -> Path:
    env = os.environ.get("P2PD_CONFIG")
    return Path(env).expanduser() if env else Path(platformdirs.user_config_dir("p2pd")) / "config.toml"


def load_config() -> dict[str, Any]:
    path = config_path()
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"config file {path} is not valid TOML: {exc}") from None
    from p2pd.config_quick import fits

    if fits(data):  # (msgspec: what it takes, the model takes; a valid file never imports pydantic)
        return data
    from p2pd.config_file import validate  # pydantic: unknown keys and bad values are one error naming each key

    return validate(data, path)


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InvalidInputError(f"{where} must be true or false")


def redact_default() -> bool:
    env = os.environ.get("P2PD_REDACT")
    if env is not None:
        return _bool(env, "P2PD_REDACT")
    value = load_config().get("redact", False)
    return _bool(value, f"'redact' in {config_path()}")


DEFAULT_SIGNAL_URL = "ws://127.0.0.1:8765"


def signal_url() -> str:
    env = os.environ.get("P2PD_SIGNAL", "").strip()
    if env:
        return env
    value = load_config().get("signal", DEFAULT_SIGNAL_URL)
    if not isinstance(value, str) or not value.startswith(("ws://", "wss://")):
        raise InvalidInputError(f"'signal' in {config_path()} must be a ws:// or wss:// URL")
    return value


def ice_servers() -> list[dict[str, Any]]:
    """Configured STUN/TURN servers as ``[{"urls": …, "username": …, "credential": …}]`` (default: none)."""
    import json

    env = os.environ.get("P2PD_ICE_SERVERS", "").strip()
    if env:
        try:
            value: Any = json.loads(env)
        except ValueError as exc:
            raise InvalidInputError(f"P2PD_ICE_SERVERS is not JSON: {exc}") from None
        where = "P2PD_ICE_SERVERS"
    else:
        value = load_config().get("ice_servers", [])
        where = f"'ice_servers' in {config_path()}"
    if not isinstance(value, list) or not all(isinstance(v, dict) and "urls" in v for v in value):
        raise InvalidInputError(f"{where} must be a list of {{urls, username, credential}} entries")
    return value


def relay_only() -> bool:
    """Connect only through a relay (``relay_only`` / ``P2PD_RELAY_ONLY``; default false)."""
    env = os.environ.get("P2PD_RELAY_ONLY")
    if env is not None:
        return _bool(env, "P2PD_RELAY_ONLY")
    return _bool(load_config().get("relay_only", False), f"'relay_only' in {config_path()}")


DEFAULT_CONNECT_TIMEOUT = 30.0


def connect_timeout() -> float:
    """Seconds to try for a peer connection before giving up / falling back (default 30)."""
    raw: Any = os.environ.get("P2PD_CONNECT_TIMEOUT", "").strip() or load_config().get("connect_timeout",
                                                                                      DEFAULT_CONNECT_TIMEOUT)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise InvalidInputError(f"the connect timeout must be a number of seconds, not {raw!r}") from None
    if not 0 < value <= 3600:
        raise InvalidInputError(f"the connect timeout must be between 0 and 3600 s, not {value:g}")
    return value


DEFAULT_DAEMON_PORT = 8737
DEFAULT_DAEMON_HOST = "127.0.0.1"


@dataclass(frozen=True)
class DaemonSettings:
    host: str
    port: int
    allow_remote: bool
    cors_origins: tuple[str, ...]
    accept_handoffs: bool = True  # claim handoffs that paired devices offer, and import them
    handoff_agent: str = "claude-code"  # the agent a claimed handoff is imported into
    partial_max_age_hours: float = 168.0  # start-up removes cut-off receives older than this
    handoff_claim_timeout: float = 600.0  # seconds a claim over the local API may go unstarted (then: pending)
    outbox_max_age_hours: float = 168.0  # outbox blobs nothing open needs are removed after this
    outbox_max_mb: float = 1024.0  # … and the oldest of them while the outbox is larger than this
    partial_max_mb: float = 2048.0  # the oldest cut-off receives are removed while they take more than this


def daemon_settings() -> DaemonSettings:
    """``p2pd serve``'s settings: environment over the config file over the defaults."""
    conf = load_config()
    where = config_path()
    host = os.environ.get("P2PD_HOST", "").strip() or conf.get("host", DEFAULT_DAEMON_HOST)
    if not isinstance(host, str) or not host:
        raise InvalidInputError(f"'host' in {where} must be an address")
    raw_port: Any = os.environ.get("P2PD_PORT", "").strip() or conf.get("port", DEFAULT_DAEMON_PORT)
    try:
        port = int(raw_port)
    except (TypeError, ValueError):
        raise InvalidInputError(f"the daemon port must be a number, not {raw_port!r}") from None
    if not 0 <= port <= 65535:
        raise InvalidInputError(f"the daemon port must be 0..65535, not {port}")
    env_remote = os.environ.get("P2PD_ALLOW_REMOTE")
    allow_remote = (_bool(env_remote, "P2PD_ALLOW_REMOTE") if env_remote is not None
                    else _bool(conf.get("allow_remote", False), f"'allow_remote' in {where}"))
    origins = conf.get("cors_origins", [])
    if not isinstance(origins, list) or not all(isinstance(o, str) and o and o != "*" for o in origins):
        raise InvalidInputError(f"'cors_origins' in {where} must be a list of origins (no '*')")
    env_accept = os.environ.get("P2PD_ACCEPT_HANDOFFS")
    accept = (_bool(env_accept, "P2PD_ACCEPT_HANDOFFS") if env_accept is not None
              else _bool(conf.get("accept_handoffs", True), f"'accept_handoffs' in {where}"))
    agent = os.environ.get("P2PD_HANDOFF_AGENT", "").strip() or conf.get("handoff_agent", "claude-code")
    from p2pd.agents.registry import import_targets

    if agent not in import_targets():
        raise InvalidInputError(f"'handoff_agent' must be one of {', '.join(import_targets())}, not {agent!r}")
    return DaemonSettings(host=host, port=port, allow_remote=allow_remote, cors_origins=tuple(origins),
                          accept_handoffs=accept, handoff_agent=agent, partial_max_age_hours=partial_max_age_hours(),
                          **_daemon_limits(conf, where))


def _daemon_limits(conf: dict[str, Any], where: Path) -> dict[str, float]:
    """The daemon's housekeeping limits and claim lease: positive numbers (environment P2PD_<KEY> wins)."""
    out: dict[str, float] = {}
    for key in ("handoff_claim_timeout", "outbox_max_age_hours", "outbox_max_mb", "partial_max_mb"):
        raw: Any = os.environ.get(f"P2PD_{key.upper()}", "").strip() or conf.get(key)
        if raw is None:
            continue
        try:
            value = float(raw) if not isinstance(raw, bool) else -1.0
        except (TypeError, ValueError):
            value = -1.0
        if not value > 0:
            raise InvalidInputError(f"'{key}' in {where} must be a positive number, not {raw!r}")
        out[key] = value
    return out


def partial_max_age_hours() -> float:
    """Hours a cut-off receive's partial waits for its resume before a start-up removes it (default 168)."""
    age = load_config().get("partial_max_age_hours", 168.0)
    if isinstance(age, bool) or not isinstance(age, int | float) or age <= 0:
        raise InvalidInputError(f"'partial_max_age_hours' in {config_path()} must be a positive number of hours")
    return float(age)


@dataclass(frozen=True)
class ReceiveLimits:
    """What a receiver takes, ``p2pd receive`` and the daemon alike (keys ``receive_max_size``, ``min_rate``,
    ``rate_window``)."""

    max_size: int  # bytes of conversation JSON once decompressed; a larger offer is refused (too_large)
    min_rate: float  # bytes/s a sender must deliver while chunks are due (0: no minimum)
    rate_window: float  # seconds over which min_rate is measured


def receive_limits() -> ReceiveLimits:
    """The receive caps: environment over the config file over the transfer layer's defaults."""
    from p2pd.blob.container import DEFAULT_MAX_RAW_SIZE
    from p2pd.transfer.receiving import MIN_RATE, RATE_WINDOW

    conf = load_config()

    def number(key: str, env: str, default: float, low: float, high: float, *, integer: bool = False) -> float:
        raw: Any = os.environ.get(env, "").strip() or conf.get(key, default)
        where = env if os.environ.get(env, "").strip() else f"'{key}' in {config_path()}"
        try:
            if isinstance(raw, bool) or (integer and isinstance(raw, float)):
                raise ValueError
            value = int(raw) if integer else float(raw)
        except (TypeError, ValueError):
            raise InvalidInputError(f"{where} must be a {'whole ' if integer else ''}number, not {raw!r}") from None
        if not low <= value <= high:
            raise InvalidInputError(f"{where} must be between {low:g} and {high:g}, not {value:g}")
        return value

    return ReceiveLimits(
        max_size=int(number("receive_max_size", "P2PD_RECEIVE_MAX_SIZE", DEFAULT_MAX_RAW_SIZE, 1, 1 << 40,
                            integer=True)),
        min_rate=number("min_rate", "P2PD_MIN_RATE", MIN_RATE, 0, 1 << 40),
        rate_window=number("rate_window", "P2PD_RATE_WINDOW", RATE_WINDOW, 0.1, 86400))
