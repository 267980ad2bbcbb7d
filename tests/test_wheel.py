"""The package as a user installs it (issue 17): build the sdist and the wheel from this checkout, install the
wheel into a fresh virtualenv outside the repository (its dependencies from the package index), and run what a
new user runs — ``p2pd demo`` with the sample session the package ships, ``p2pd-signal`` serving the browser page
the wheel carries (every module the page imports answers 200, so it loads with no npm on the machine), and
``p2pd serve --print-systemd-unit`` naming the venv's own ``p2pd``.

Takes about a minute (``pytest -m wheel`` runs it alone); needs the package index (or pip's configured
find-links) for the dependencies and the build tools, and a checkout where ``npm ci`` ran in ``web/``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from tests.pipe_lines import read_until

pytestmark = [pytest.mark.wheel, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
DIST = "p2pd-handover"
# what a module imports: `import … from '…'` / `export … from '…'` and `import '…'` at the start of a line, and
# `import('…')` anywhere (the page loads some modules on demand)
_IMPORT = re.compile(r"""^\s*(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]"""
                     r"""|^\s*import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)""", re.MULTILINE)
_IMPORT_MAP = re.compile(r'<script type="importmap">(.*?)</script>', re.DOTALL)


def sh(*args: str | Path, timeout: float = 600, **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout,
                            **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, f"{args}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def user_env(tmp: Path) -> dict[str, str]:
    """A user's environment: nothing pointing into the checkout, config and homes in ``tmp``."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "P2PD_SIGNAL", "P2PD_CONFIG", "P2PD_HOME")}
    return {**env, "HOME": str(tmp / "home"), "P2PD_CONFIG": str(tmp / "home" / "none.toml"),
            "P2PD_HOME": str(tmp / "home" / "p2pd"), "PYTHONDONTWRITEBYTECODE": "1"}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """(the venv's bin folder, a user's environment) with the freshly built wheel installed there."""
    tmp = tmp_path_factory.mktemp("wheel")
    (tmp / "home").mkdir()
    started = time.monotonic()
    sh(sys.executable, "-m", "venv", tmp / "builder")
    sh(tmp / "builder" / "bin" / "python", "-m", "pip", "install", "-q", "build")
    sh(tmp / "builder" / "bin" / "python", "-m", "build", "--outdir", tmp / "dist", ROOT)
    (wheel,) = (tmp / "dist").glob("p2pd_handover-*.whl")
    (sdist,) = (tmp / "dist").glob("p2pd_handover-*.tar.gz")
    with tarfile.open(sdist) as tar:
        carried = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    # the wheel's source
    assert {"web/tools/wheel_page.py", "web/index.html", "web/vendor/lz4js.js", "web/src/ui.js"} <= carried
    built = time.monotonic()
    sh(sys.executable, "-m", "venv", tmp / "venv")
    sh(tmp / "venv" / "bin" / "python", "-m", "pip", "install", "-q", wheel, cwd=tmp)
    print(f"\nwheel {wheel.name} ({wheel.stat().st_size / 1024:.0f} KiB): built in {built - started:.1f} s, "
          f"installed with its dependencies in {time.monotonic() - built:.1f} s")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    assert {"signaling/web/index.html", "signaling/web/vendor/lz4js.js", "p2pd/cli/demo_session.jsonl"} <= names
    assert not any(n.startswith(("tests/", "web/")) or n.endswith((".ts", ".map")) for n in names)
    assert "signaling/web/node_modules/@noble/curves/LICENSE" in names  # the licenses of what is shipped
    yield tmp / "venv" / "bin", user_env(tmp)


def test_the_venv_runs_the_installed_packages(installed: tuple[Path, dict[str, str]]) -> None:
    bin_dir, env = installed
    r = sh(bin_dir / "python", "-c", "import importlib.metadata as m, p2pd, signaling; "
           f"print(m.version('{DIST}')); print(p2pd.__file__); print(signaling.__file__)", env=env, cwd=env["HOME"])
    version, *files = r.stdout.split()
    assert version and all(Path(f).is_relative_to(bin_dir.parent) for f in files), files


def test_demo_hands_over_the_shipped_sample(installed: tuple[Path, dict[str, str]]) -> None:
    bin_dir, env = installed
    r = sh(bin_dir / "p2pd", "demo", env=env, cwd=env["HOME"], timeout=300)
    assert "sample shipped with p2pd" in r.stderr and "SHA-256 verified" in r.stderr, r.stderr
    assert re.fullmatch(r"cd \S+ && claude --resume [0-9a-f-]{36}", r.stdout.strip()), r.stdout


def test_signal_serves_the_page_and_every_module_it_imports(installed: tuple[Path, dict[str, str]]) -> None:
    bin_dir, env = installed
    server = subprocess.Popen([bin_dir / "p2pd-signal", "--port", "0"], env=env, cwd=env["HOME"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        served, said = read_until(server.stdout, re.compile(r"serves the browser client from"), timeout=60)
        assert served, said  # a silent or stuck server fails within the minute, it does not hang the run
        url = re.search(r"listening on ws://(\S+?)/?$", said, re.M)
        assert url, said
        assert "site-packages/signaling/web" in said, said
        base = f"http://{url.group(1)}/"
        status, kind, html = fetch(base)
        assert status == 200 and kind.startswith("text/html") and "<script type=\"module\"" in html
        imports = _IMPORT_MAP.search(html)
        assert imports is not None
        mapped: dict[str, str] = json.loads(imports.group(1))["imports"]
        seen = page_modules(base, urljoin(base, "src/ui.js"), mapped)
        assert len(seen) > 20 and any("/vendor/" in u for u in seen) and any("@noble" in u for u in seen)
        for path in ("style.css", "favicon.svg"):
            assert fetch(urljoin(base, path))[0] == 200, path
    finally:
        server.terminate()
        server.wait(timeout=30)


def fetch(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, "", ""


def page_modules(base: str, entry: str, mapped: dict[str, str]) -> set[str]:
    """Every ES module reachable from ``entry`` as the browser resolves it (relative URLs, the import map), each
    fetched: a 404 anywhere fails the test with the importing module named."""
    seen: set[str] = set()
    todo = [(entry, "index.html")]
    while todo:
        url, importer = todo.pop()
        if url in seen:
            continue
        seen.add(url)
        status, kind, text = fetch(url)
        assert status == 200 and kind.startswith("text/javascript"), f"{url} (imported by {importer}): {status}"
        for spec in ("".join(groups) for groups in _IMPORT.findall(text)):
            if spec.startswith(("./", "../", "/")):
                target = urljoin(url, spec)
            elif spec in mapped:
                target = urljoin(base, mapped[spec])
            else:
                prefix = next((p for p in mapped if p.endswith("/") and spec.startswith(p)), None)
                assert prefix is not None, f"{url} imports {spec!r}, which the import map does not resolve"
                target = urljoin(base, mapped[prefix] + spec[len(prefix):])
            assert urlsplit(target).netloc == urlsplit(base).netloc
            todo.append((target, url))
    return seen


def test_the_systemd_unit_runs_the_venvs_p2pd(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    bin_dir, env = installed
    r = sh(bin_dir / "p2pd", "serve", "--print-systemd-unit", env=env, cwd=env["HOME"])
    assert f"\nExecStart={bin_dir / 'p2pd'} serve\n" in r.stdout, r.stdout
    if shutil.which("systemd-analyze"):
        unit = tmp_path / "p2pd.service"
        unit.write_text(r.stdout)
        sh("systemd-analyze", "verify", unit)


def test_the_installed_p2pd_prints_its_manual_page_and_completion(installed: tuple[Path, dict[str, str]]) -> None:
    bin_dir, env = installed
    page = sh(bin_dir / "p2pd", "man", env=env, cwd=env["HOME"]).stdout
    assert page.startswith(".TH P2PD 1 ") and ".SS p2pd send\n" in page and page.isascii()
    script = sh(bin_dir / "p2pd", "completion", "bash", env=env, cwd=env["HOME"]).stdout
    assert script.rstrip().endswith("complete -o default -F _p2pd p2pd")
