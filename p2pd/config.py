"""User settings, kept simple: environment variables override a small TOML file.

File: ``<user config dir>/p2pd/config.toml`` (platformdirs; on Linux ``~/.config/p2pd/config.toml``), or the path in
``P2PD_CONFIG``. Keys:

| key      | env           | meaning                                                         |
|----------|---------------|-----------------------------------------------------------------|
| `redact` | `P2PD_REDACT` | mask secrets before a conversation leaves the machine (default false) |

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
