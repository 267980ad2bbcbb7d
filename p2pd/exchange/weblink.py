"""The browser client's link for a pairing code, and its QR code for the terminal.

The page (``web/``) is served by the signaling server itself, so its address follows from the signaling URL:
``ws://host:port/`` → ``http://host:port/``, ``wss://…`` → ``https://…``. ``P2PD_WEB_URL`` (or ``web_url`` in the
config file) overrides it, e.g. when a proxy serves the page elsewhere. The code travels in the URL
*fragment* (``…/#7-amber-river``): browsers never send the fragment to the server.
"""

from __future__ import annotations

import io
import os
from urllib.parse import urlsplit, urlunsplit

from p2pd.errors import InvalidInputError


def web_base(signal_url: str) -> str:
    """The page's address: ``$P2PD_WEB_URL``, else ``web_url`` from the config, else derived from the signal URL."""
    override = os.environ.get("P2PD_WEB_URL", "").strip()
    if not override:
        from p2pd.config import config_path, load_config

        value = load_config().get("web_url", "")
        if value and not isinstance(value, str):
            raise InvalidInputError(f"'web_url' in {config_path()} must be an http(s) URL")
        override = str(value or "").strip()
    if override:
        if not override.startswith(("http://", "https://")):
            raise InvalidInputError("the web page URL (P2PD_WEB_URL / web_url) must start with http:// or https://")
        return override if override.endswith("/") else override + "/"
    parts = urlsplit(signal_url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, parts.path or "/", "", ""))


def page_link(signal_url: str, code: str) -> str:
    """``http(s)://…/#<code>``: opening it starts receiving in the browser."""
    return f"{web_base(signal_url).split('#', 1)[0]}#{code}"


def qr_text(link: str) -> str:
    """The link as a QR code drawn with terminal block characters (segno)."""
    import segno

    buffer = io.StringIO()
    segno.make(link, error="m").terminal(out=buffer, compact=True, border=2)
    return buffer.getvalue()
