"""User settings, kept simple: environment variables override a small TOML file.

File: ``<user config dir>/p2pd/config.toml`` (platformdirs; on Linux ``~/.config/p2pd/config.toml``), or the path in
``P2PD_CONFIG``. Keys:

| key      | env           | meaning                                                         |
|----------|---------------|-----------------------------------------------------------------|
| `redact` | `P2PD_REDACT` | mask secrets before a conversation leaves the machine (default false) |
| `signal` | `P2PD_SIGNAL` | the signaling server's URL (default `ws://127.0.0.1:8765`) |
| `ice_servers` | `P2PD_ICE_SERVERS` (JSON) | STUN/TURN: list of `{urls, username, credential}`; none by default |

An unreadable file is one clear error naming it; unknown keys are ignored.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

import platformdirs

from .errors import InvalidInputError

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
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"config file {path} is not valid TOML: {exc}") from None


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
