"""Build hook (named in pyproject.toml's ``[tool.setuptools.cmdclass]``): the wheel carries the browser page, so
an installed ``p2pd-signal`` serves it with no npm anywhere.

Everything else about the package is in ``pyproject.toml``. When a wheel is built, ``build_py`` copies the page
from ``web/`` into ``signaling/web/`` of the build (``signaling.page.default_web_dir`` looks there first):

- every file of ``web/`` but its development parts (``tests/``, ``tools/``, ``node_modules/``, the npm manifests,
  the README, dot files) — so ``index.html``, ``style.css``, the favicon, ``src/*.js`` and ``vendor/*.js`` (written
  by ``npm ci``'s postinstall);
- of ``node_modules/``, the ES modules the page loads — followed from its ``<script type="module">`` through every
  static import, re-export and literal ``import('…')``, resolved as the browser does (relative URLs, the import map
  in ``index.html``) — and each package's ``package.json`` and license files.

The source distribution carries the same files under ``web/`` (``sdist`` adds them), so a wheel built from it is
the same. A build whose page is incomplete (no ``web/vendor/``, a module that is not there: ``npm ci`` has not run)
stops saying so instead of making a wheel whose page cannot load. Editable installs copy nothing: the checkout's
``web/`` is found in place.
"""

from __future__ import annotations

import json
import posixpath
import re
import shutil
from pathlib import Path

from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

WEB = Path(__file__).resolve().parents[1]
HOOK = "web/tools/wheel_page.py"  # this file: the sdist carries it, so a wheel can be built from the sdist
DEVELOPMENT = {"tests", "tools", "node_modules", "package.json", "package-lock.json", "README.md"}
IMPORT_MAP = re.compile(r'<script type="importmap">(.*?)</script>', re.DOTALL)
MODULE_SCRIPT = re.compile(r'<script type="module" src="([^"]+)"')
# `import … from '…'` / `export … from '…'` / `import '…'` at the start of a line, and `import('…')` anywhere
IMPORT = re.compile(r"""^\s*(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]"""
                    r"""|^\s*import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)""", re.MULTILINE)
LICENSE = re.compile(r"^(LICEN[CS]E|COPYING)", re.IGNORECASE)


def incomplete(web: Path, what: str) -> SystemExit:
    return SystemExit(f"the browser page in {web} is incomplete ({what}): run `npm ci` in {web} before building")


def resolve(spec: str, importer: str, import_map: dict[str, str]) -> str:
    """The page-relative path a module specifier in ``importer`` (page-relative) names, as the browser resolves it."""
    if spec.startswith(("./", "../")):
        return posixpath.normpath(posixpath.join(posixpath.dirname(importer), spec))
    if spec.startswith("/"):
        return spec.lstrip("/")
    if spec in import_map:
        return posixpath.normpath(import_map[spec])
    prefix = max((k for k in import_map if k.endswith("/") and spec.startswith(k)), key=len, default=None)
    if prefix is None:
        raise SystemExit(f"{importer} imports {spec!r}, which the import map in index.html does not resolve")
    return posixpath.normpath(import_map[prefix] + spec[len(prefix):])


def page_modules(web: Path) -> set[str]:
    """Every module the page loads, as paths relative to ``web``."""
    html = (web / "index.html").read_text(encoding="utf-8")
    match = IMPORT_MAP.search(html)
    import_map: dict[str, str] = json.loads(match.group(1))["imports"] if match else {}
    todo = [(posixpath.normpath(src), "index.html") for src in MODULE_SCRIPT.findall(html)]
    seen: set[str] = set()
    while todo:
        rel, importer = todo.pop()
        if rel in seen:
            continue
        if rel.startswith("../") or not (web / rel).is_file():
            raise incomplete(web, f"{importer} imports {rel}, which is not there")
        seen.add(rel)
        for groups in IMPORT.findall((web / rel).read_text(encoding="utf-8")):
            todo.append((resolve("".join(groups), rel, import_map), rel))
    return seen


def page_files(web: Path) -> list[str]:
    """The page's files, relative to ``web``."""
    if not (web / "index.html").is_file():
        raise SystemExit(f"the browser page is not in this source tree ({web}): build from a checkout")
    if not (web / "vendor").is_dir():
        raise incomplete(web, "no vendor/")
    files = {p.relative_to(web).as_posix() for p in web.rglob("*") if p.is_file()}
    own = {f for f in files if f.split("/")[0] not in DEVELOPMENT and not any(p.startswith(".") for p in f.split("/"))}
    modules = page_modules(web)
    packages = {"/".join(m.split("/")[: 3 if m.split("/")[1].startswith("@") else 2])
                for m in modules if m.startswith("node_modules/")}
    extras = {f"{package}/{p.name}" for package in packages for p in (web / package).iterdir()
              if p.is_file() and (p.name == "package.json" or LICENSE.match(p.name))}
    return sorted(own | modules | extras)


class BuildWithPage(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "signaling" / "web"
        shutil.rmtree(target, ignore_errors=True)
        for rel in page_files(WEB):
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(WEB / rel, target / rel)


class SdistWithPage(sdist):
    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        page = [f"web/{rel}" for rel in page_files(WEB)] + [HOOK]
        kept = [f for f in files if not f.startswith("tests/")]  # the sdist is the package, not its test suite
        super().make_release_tree(base_dir, [*kept, *(f for f in page if f not in kept)])
