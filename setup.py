"""Build hook: the wheel carries the browser page, so an installed ``p2pd-signal`` serves it with no npm anywhere.

Everything else about the package is in ``pyproject.toml``. When a wheel is built, ``build_py`` copies the page
from ``web/`` into ``signaling/web/`` of the build (``signaling.server.default_web_dir`` looks there first):

- every file of ``web/`` but its development parts (``tests/``, ``tools/``, ``node_modules/``, the npm manifests,
  the README, dot files) — so ``index.html``, ``style.css``, the favicon, ``src/*.js`` and ``vendor/*.js`` (written
  by ``npm ci``'s postinstall);
- of ``node_modules/``, only the packages the page's import map names (``@noble/curves``, ``@noble/hashes``):
  their ES modules (``*.js`` outside ``src/``), ``package.json`` and ``LICENSE``.

A build without ``web/vendor/`` or a mapped package stops with what to run (``npm ci`` in ``web/``) instead of
making a wheel whose page cannot load. Editable installs copy nothing: the checkout's ``web/`` is found in place.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

WEB = Path(__file__).resolve().parent / "web"
DEVELOPMENT = {"tests", "tools", "node_modules", "package.json", "package-lock.json", "README.md"}
IMPORT_MAP = re.compile(r'<script type="importmap">(.*?)</script>', re.DOTALL)


def page_files(web: Path) -> dict[str, Path]:
    """The page's files as ``{path inside the page: source file}``."""
    files: dict[str, Path] = {}
    for path in sorted(web.rglob("*")):
        rel = path.relative_to(web)
        if path.is_file() and rel.parts[0] not in DEVELOPMENT and not any(p.startswith(".") for p in rel.parts):
            files[rel.as_posix()] = path
    if not (web / "vendor").is_dir():
        raise SystemExit(f"the browser page's vendored modules are missing ({web / 'vendor'}): run `npm ci` in "
                         f"{web} before building the wheel")
    match = IMPORT_MAP.search((web / "index.html").read_text(encoding="utf-8"))
    targets = json.loads(match.group(1))["imports"].values() if match else []
    for target in targets:
        package = (web / target).resolve()
        if not package.is_relative_to(web / "node_modules") or not (package / "package.json").is_file():
            raise SystemExit(f"the page's import map points at {target}, which is not installed: run `npm ci` in "
                             f"{web} before building the wheel")
        for path in sorted(package.rglob("*")):
            rel = path.relative_to(package)
            runtime = (path.suffix == ".js" and rel.parts[0] != "src") or rel.as_posix() in ("package.json", "LICENSE")
            if path.is_file() and runtime:
                files[path.relative_to(web).as_posix()] = path
    return files


class BuildWithPage(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        if not (WEB / "index.html").is_file():
            raise SystemExit(f"the browser page is not in this source tree ({WEB}): build from a checkout")
        target = Path(self.build_lib) / "signaling" / "web"
        shutil.rmtree(target, ignore_errors=True)
        for rel, source in page_files(WEB).items():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target / rel)


setup(cmdclass={"build_py": BuildWithPage})
