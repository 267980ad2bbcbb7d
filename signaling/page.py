"""Where the browser page (the client in ``web/``) is, and whether it can load.

An installed package carries the page in ``signaling/web/`` (copied there when the wheel is built: ``setup.py``);
a checkout has it in ``web/`` beside the ``signaling`` package, complete once ``npm ci`` has run there (its
postinstall writes ``web/vendor/``; the import map in ``index.html`` points into ``web/node_modules/``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_IMPORT_MAP = re.compile(rb'<script type="importmap">(.*?)</script>', re.DOTALL)


def default_web_dir() -> Path | None:
    """The installed package's page, else the checkout's ``web/``; ``None`` when neither has an ``index.html``."""
    for web in (_HERE / "web", _HERE.parent / "web"):
        if (web / "index.html").is_file():
            return web
    return None


def missing_parts(web: Path) -> list[str]:
    """What the page in ``web`` needs but lacks — its vendored modules (``vendor/``) and what its import map names
    (``node_modules/…``) — as paths relative to ``web``. Empty when the page can load."""
    if not (web / "index.html").is_file():
        return ["index.html"]
    missing = [] if (web / "vendor").is_dir() else ["vendor/"]
    match = _IMPORT_MAP.search((web / "index.html").read_bytes())
    try:
        imports = json.loads(match.group(1))["imports"] if match else {}
        targets = [str(t) for t in imports.values()] if isinstance(imports, dict) else []
    except (ValueError, KeyError, TypeError):
        targets = []
    return missing + [t.removeprefix("./") for t in targets if not (web / t).exists()]


def startup_notes(static_dir: Path | None, no_web: bool) -> list[str]:
    """Lines ``p2pd-signal`` prints on stderr when it starts without a working page — so a GET / answered
    426 (no page) or a page whose modules 404 is never a silent surprise."""
    if no_web:
        return []
    if static_dir is None:
        return ["p2pd-signal: warning: no browser page found (this installation has neither signaling/web/ nor a "
                "checkout's web/): GET / answers 426 and the links `p2pd send` prints will not open. Reinstall "
                "the package, pass --static-dir DIR, or --no-web to serve none knowingly"]
    missing = missing_parts(static_dir)
    if missing:
        return [f"p2pd-signal: warning: the browser page in {static_dir} lacks {', '.join(missing)}, so it will "
                f"not load: run `npm ci` in {static_dir}"]
    return []
