"""The CLI's client for a running daemon: finds it through ``daemon.json``, checks ``/health``, sends the token.

HTTP errors come back as the daemon's own errors: the body carries the cause, party and exit code
(:meth:`p2pd.errors.P2pdError.to_wire`) and :func:`p2pd.errors.from_wire` rebuilds the same class — a 409 may be a
conflict, a busy receiver, a declined offer or a changed device key. A body without a cause (not from p2pd) falls
back to a class by status code. The CLI prints one line and exits with the error's code.
"""

from __future__ import annotations

from typing import Any

import httpx

from p2pd.daemon.home import Home
from p2pd.errors import (
    Cause,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    P2pdError,
    TooLargeError,
    TransferFailedError,
    from_wire,
)

START_HINT = "start it with `p2pd serve` (or `systemctl --user start p2pd` with the unit from " \
             "`p2pd serve --print-systemd-unit`)"

_ERRORS: dict[int, type[P2pdError]] = {400: InvalidInputError, 404: NotFoundError, 409: ConflictError,
                                       413: TooLargeError, 422: InvalidInputError, 502: TransferFailedError}


class DaemonNotRunningError(P2pdError):
    cause = Cause.DAEMON_NOT_RUNNING


class DaemonClient:
    def __init__(self, url: str, token: str, *, timeout: float = 60.0, http: httpx.Client | None = None) -> None:
        """``http``: a client to use instead of a new one (tests pass one bound to an in-process app)."""
        self.url = url.rstrip("/")
        self._http = http or httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"},
                                          timeout=timeout, trust_env=False)

    @classmethod
    def find(cls, home: Home | None = None) -> DaemonClient | None:
        """The running daemon's client, or None when there is none (no daemon.json, or /health does not answer)."""
        home = home or Home.default()
        info = home.read_daemon_info()
        if info is None:
            return None
        try:
            r = httpx.get(f"{info['url']}/health", timeout=2.0, trust_env=False)
            if r.status_code != 200 or r.json().get("ok") is not True:
                return None
            token = home.read_token()
        except (httpx.HTTPError, OSError, ValueError):
            return None
        return cls(info["url"], token)

    @classmethod
    def connect(cls, home: Home | None = None, *, why: str = "this command needs it") -> DaemonClient:
        client = cls.find(home)
        if client is None:
            raise DaemonNotRunningError(f"the p2pd daemon is not running ({why}): {START_HINT}")
        return client

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> DaemonClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None,
                timeout: float | None = None) -> Any:
        try:
            r = self._http.request(method, path, json=json, params=params,
                                   timeout=timeout if timeout is not None else self._http.timeout)
        except httpx.HTTPError as exc:
            raise DaemonNotRunningError(f"the daemon at {self.url} did not answer ({exc}): {START_HINT}") from None
        try:
            body = r.json()
        except ValueError:
            body = None
        if r.status_code >= 400:
            raise error_of(r.status_code, body)
        return body

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params={k: v for k, v in params.items() if v is not None} or None)

    def post(self, path: str, body: Any = None, *, timeout: float | None = None) -> Any:
        return self.request("POST", path, json=body, timeout=timeout)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)


def error_of(status: int, body: Any) -> P2pdError:
    """The error an HTTP error answer stands for."""
    fallback = f"the daemon answered HTTP {status}"
    if isinstance(body, dict) and isinstance(body.get("cause"), str):
        error = from_wire(body, fallback_message=fallback)
        if error.cause is Cause.UNAUTHORIZED:
            return P2pdError(f"the daemon refused the token: {error.message}", cause=Cause.UNAUTHORIZED)
        return error
    message = body.get("error") if isinstance(body, dict) else None
    if status == 401:
        return P2pdError(f"the daemon refused the token: {message or 'unauthorized'}", cause=Cause.UNAUTHORIZED)
    return _ERRORS.get(status, P2pdError)(message if isinstance(message, str) and message else fallback)
