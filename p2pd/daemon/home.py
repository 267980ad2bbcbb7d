"""The daemon's own folder: ``$P2PD_HOME``, else platformdirs' ``user_data_dir("p2pd")``.

| path             | what                                                                              |
|------------------|-----------------------------------------------------------------------------------|
| `token`          | the API's bearer token, mode 0600, made on first run (`secrets.token_urlsafe(32)`) |
| `state.sqlite3`  | transfers, inbox, handoffs, hook sessions (``store.py``)                           |
| `daemon.json`    | `{url, pid, port, host}` while a daemon serves; removed when it stops              |
| `inbox/`         | received conversations (``.a2a.json``)                                             |
| `outbox/`        | conversations on their way out (blobs named by SHA-256, kept for resume)           |
| `partial/`       | half-received blobs                                                               |
| `exports/`       | ``POST /export`` output when no path is given                                      |

The folder itself is made 0700: it holds the token and every conversation that passed through.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from p2pd.errors import InvalidInputError
from p2pd.support.atomic import atomic_write_bytes


def default_root() -> Path:
    env = os.environ.get("P2PD_HOME", "").strip()
    return Path(env).expanduser() if env else Path(platformdirs.user_data_dir("p2pd"))


@dataclass(frozen=True)
class Home:
    root: Path

    @classmethod
    def default(cls) -> Home:
        return cls(default_root())

    @property
    def token_path(self) -> Path:
        return self.root / "token"

    @property
    def db_path(self) -> Path:
        return self.root / "state.sqlite3"

    @property
    def daemon_json(self) -> Path:
        return self.root / "daemon.json"

    @property
    def inbox(self) -> Path:
        return self.root / "inbox"

    @property
    def outbox(self) -> Path:
        return self.root / "outbox"

    @property
    def partial(self) -> Path:
        return self.root / "partial"

    @property
    def exports(self) -> Path:
        return self.root / "exports"

    def ensure(self) -> Home:
        """Make the folder (0700) and its sub-folders; returns self."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(OSError):
            os.chmod(self.root, 0o700)
        for sub in (self.inbox, self.outbox, self.partial, self.exports):
            sub.mkdir(exist_ok=True, mode=0o700)
        return self

    def token(self) -> str:
        """The bearer token, made (0600, never readable by others) if there is none yet."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self.token_path
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return self.read_token()
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_urlsafe(32) + "\n")
        return self.read_token()

    def read_token(self) -> str:
        path = self.token_path
        mode = path.stat().st_mode & 0o777
        if mode & 0o077:
            os.chmod(path, 0o600)  # someone loosened it: tighten rather than serve with a readable token
        token = path.read_text(encoding="ascii").strip()
        if len(token) < 16:
            raise InvalidInputError(f"the token file {path} is empty or too short: delete it to make a new one")
        return token

    # ------------------------------------------------------------ daemon.json
    def write_daemon_info(self, *, url: str, host: str, port: int) -> None:
        data = {"url": url, "host": host, "port": port, "pid": os.getpid()}
        atomic_write_bytes(self.daemon_json, json.dumps(data).encode())

    def read_daemon_info(self) -> dict[str, Any] | None:
        """What a running daemon wrote, or None (no file, unreadable, or its process is gone)."""
        try:
            data = json.loads(self.daemon_json.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("url"), str):
            return None
        pid = data.get("pid")
        if isinstance(pid, int) and not _alive(pid):
            return None
        return data

    def remove_daemon_info(self) -> None:
        """Remove daemon.json if this process wrote it."""
        try:
            data = json.loads(self.daemon_json.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if isinstance(data, dict) and data.get("pid") == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                self.daemon_json.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
