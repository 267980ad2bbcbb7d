"""Installs the pinned agent programs when needed, and runs the selected cases in parallel ahead of the tests.

Every case is an independent import plus one program run in its own home folder with its own stand-in, so the
session fixture :func:`real_runs` submits all selected cases (and the controls they compare against) to a thread
pool at once; each test then waits for its own case. ``P2PD_REALCLIENTS_JOBS`` sets the number of parallel runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.realclients import programs
from tests.realclients.cases import Case, Control, Outcome, make_index_template, needs_control, run_case, run_control
from tests.realclients.programs import Run


def _install() -> str | None:
    """``npm ci`` from the committed lock when the install is missing or older than the lock; why not, or None."""
    lock = programs.HERE / "package-lock.json"
    stamp = programs.HERE / "node_modules" / ".package-lock.json"
    if programs.missing() is None and stamp.exists() and stamp.stat().st_mtime >= lock.stat().st_mtime:
        return None
    npm = shutil.which("npm")
    if npm is None:
        return "npm is not installed, so Claude Code and Codex CLI cannot be installed"
    r = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=programs.HERE,
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        return f"npm ci could not install Claude Code and Codex CLI: {(r.stderr or r.stdout).strip()[-500:]}"
    return programs.missing()


class RealRuns:
    """The futures of the selected cases, of their controls, and of the Codex index template."""

    def __init__(self, base: Path, cases: list[Case], workers: int) -> None:
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="realclient")
        self.template: Future[tuple[Path, Run]] = self.pool.submit(make_index_template, base)
        sources = sorted({c.source for c in cases if needs_control(c)})
        self.controls: dict[Path, Future[Control]] = {s: self.pool.submit(run_control, s, base) for s in sources}
        self.cases: dict[str, Future[Outcome]] = {c.id: self.pool.submit(self._case, c, base) for c in cases}

    def _case(self, case: Case, base: Path) -> Outcome:
        template = self.template.result()[0] if case.index else None
        return run_case(case, base, template)

    def index_template(self) -> tuple[Path, Run]:
        return self.template.result()

    def control(self, source: Path) -> Control:
        return self.controls[source].result()

    def outcome(self, case: Case) -> Outcome:
        return self.cases[case.id].result()


@pytest.fixture(scope="session")
def real_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealRuns]:
    why = _install()
    if why:
        pytest.skip(why)
    selected = [item.callspec.params["case"] for item in request.session.items
                if hasattr(item, "callspec") and isinstance(item.callspec.params.get("case"), Case)]
    workers = int(os.environ.get("P2PD_REALCLIENTS_JOBS") or max(2, 2 * (os.cpu_count() or 1)))
    runs = RealRuns(tmp_path_factory.mktemp("realclients"), selected, workers)
    yield runs
    runs.pool.shutdown(wait=True, cancel_futures=True)
