"""ICE servers the signaling server hands to the clients that joined a room (STUN/TURN for crossing NATs).

The server is configured with STUN/TURN URLs (``--ice-server``, repeatable) and coturn's shared secret
(``--turn-secret-file``: a file, never a command-line argument). Every client that has joined a room — never an
anonymous connection — gets one ``ice_servers`` message with fresh TURN credentials in coturn's REST scheme
(``use-auth-secret``): username ``<expiry unix time>:<user>``, password base64(HMAC-SHA1(secret, username)),
valid for ``ttl`` seconds (default one hour). Credentials are never logged and never counted by name.

The same keys can come from a config file (``--config FILE``, TOML or JSON): ``ice_servers`` (list of URLs),
``turn_secret_file``, ``turn_ttl``, ``turn_user``; command-line values win.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from signaling import protocol as p

DEFAULT_TTL = 3600.0
DEFAULT_USER = "p2pd"
_URL = re.compile(r"^(stun|stuns|turn|turns):(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?"
                  r"(\?transport=(udp|tcp))?$")


class IceConfigError(ValueError):
    """The ICE configuration is unusable (the message says which setting and why)."""


def check_url(url: str) -> str:
    """``url`` if it is a ``stun:``/``stuns:``/``turn:``/``turns:`` URL (optionally ``?transport=udp|tcp``)."""
    if not _URL.match(url):
        raise IceConfigError(f"not a STUN/TURN URL: {url!r} (expected e.g. stun:HOST:3478, "
                             "turn:HOST:3478?transport=udp, turn:HOST:3478?transport=tcp, turns:HOST:443)")
    return url


def is_turn(url: str) -> bool:
    return url.startswith(("turn:", "turns:"))


def rest_credential(secret: bytes, user: str, expiry: int) -> tuple[str, str]:
    """coturn's REST credential (``use-auth-secret``) valid until the unix time ``expiry``."""
    username = f"{expiry}:{user}"
    digest = hmac.new(secret, username.encode("utf-8"), hashlib.sha1).digest()
    return username, base64.b64encode(digest).decode("ascii")


def read_secret(path: Path) -> bytes:
    """The shared secret from ``path`` (surrounding whitespace stripped); refuses an empty or unreadable file."""
    try:
        secret = path.read_bytes().strip()
    except OSError as exc:
        raise IceConfigError(f"cannot read the TURN secret file {path}: {exc.strerror or exc}") from None
    if not secret:
        raise IceConfigError(f"the TURN secret file {path} is empty")
    return secret


@dataclass(frozen=True)
class IceSettings:
    """What the server hands out. ``secret`` is required as soon as one URL is a TURN URL."""

    urls: tuple[str, ...] = ()
    secret: bytes | None = field(default=None, repr=False)
    ttl: float = DEFAULT_TTL
    user: str = DEFAULT_USER
    clock: Callable[[], float] = field(default=time.time, repr=False, compare=False)

    def __post_init__(self) -> None:
        for url in self.urls:
            check_url(url)
        if any(is_turn(u) for u in self.urls) and not self.secret:
            raise IceConfigError("TURN URLs need the coturn shared secret (--turn-secret-file)")
        if self.ttl <= 0:
            raise IceConfigError("the TURN credential lifetime must be positive")
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", self.user):
            raise IceConfigError("the TURN user name may hold letters, digits, '.', '_' and '-' only")

    def message(self) -> p.IceServers:
        """A fresh ``ice_servers`` message: STUN URLs as they are, each TURN URL with new credentials."""
        expiry = int(self.clock() + self.ttl)
        servers: list[p.IceServer] = []
        for url in self.urls:
            if is_turn(url):
                assert self.secret is not None
                username, credential = rest_credential(self.secret, self.user, expiry)
                servers.append(p.IceServer(urls=[url], username=username, credential=credential))
            else:
                servers.append(p.IceServer(urls=[url]))
        return p.IceServers(ice_servers=servers, expires_in=float(self.ttl))


def load_config_file(path: Path) -> dict[str, Any]:
    """The ICE keys of a TOML (``.toml``) or JSON config file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise IceConfigError(f"cannot read the config file {path}: {exc.strerror or exc}") from None
    try:
        data: Any = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise IceConfigError(f"the config file {path} is not valid {path.suffix.lstrip('.') or 'JSON'}: {exc}") \
            from None
    if not isinstance(data, dict):
        raise IceConfigError(f"the config file {path} must hold a table/object of settings")
    return data


def settings_from(urls: Sequence[str], secret_file: Path | None, *, config: dict[str, Any] | None = None,
                  ttl: float | None = None, user: str | None = None) -> IceSettings | None:
    """Build the settings from command-line values over config-file values; ``None`` when nothing is set."""
    conf = config or {}
    conf_urls = conf.get("ice_servers", [])
    if not isinstance(conf_urls, list) or not all(isinstance(u, str) for u in conf_urls):
        raise IceConfigError("'ice_servers' in the config file must be a list of URLs")
    all_urls = tuple(urls) if urls else tuple(conf_urls)
    secret_path = secret_file or (Path(conf["turn_secret_file"]) if conf.get("turn_secret_file") else None)
    if not all_urls:
        return None
    secret = read_secret(secret_path) if secret_path is not None else None
    chosen_ttl = ttl if ttl is not None else float(conf.get("turn_ttl", DEFAULT_TTL))
    chosen_user = user or str(conf.get("turn_user", DEFAULT_USER))
    return IceSettings(urls=all_urls, secret=secret, ttl=chosen_ttl, user=chosen_user)
