"""``p2pd serve --print-systemd-unit``: ExecStart runs the p2pd that printed the unit (issue 17: it hard-coded
``%h/.local/bin/p2pd``, wrong for any other install). From an installed wheel: tests/test_wheel.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from p2pd.daemon.serve import p2pd_command, systemd_unit


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_program_being_run_is_used_by_its_absolute_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    program = executable(tmp_path / "bin" / "p2pd")
    assert p2pd_command(str(program)) == str(program)
    monkeypatch.chdir(tmp_path)
    assert p2pd_command("bin/p2pd") == str(program)  # made absolute: systemd has another working directory


def test_python_m_p2pd_uses_the_p2pd_beside_the_interpreter_or_the_interpreter(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    main = str(Path(__file__).resolve().parents[2] / "p2pd" / "__main__.py")
    python = executable(tmp_path / "venv" / "bin" / "python")
    monkeypatch.setattr(sys, "executable", str(python))
    assert p2pd_command(main) == f"{python} -m p2pd"
    script = executable(tmp_path / "venv" / "bin" / "p2pd")
    assert p2pd_command(main) == str(script)


def test_paths_systemd_would_expand_or_split_are_escaped(tmp_path: Path) -> None:
    program = executable(tmp_path / "my tools" / "100%" / "$HOME" / "p2pd")
    word = p2pd_command(str(program))
    assert word == '"' + str(program).replace("%", "%%").replace("$", "$$") + '"'


def test_the_unit_runs_that_command() -> None:
    unit = systemd_unit("/opt/p2pd/bin/p2pd")
    assert "\nExecStart=/opt/p2pd/bin/p2pd serve\n" in unit and "@P2PD@" not in unit
    assert "mkdir -p ~/.config/systemd/user" in unit and "daemon-reload" in unit


def test_print_systemd_unit_from_a_venv_names_its_p2pd(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "p2pd", "serve", "--print-systemd-unit"], capture_output=True,
                       text=True, timeout=60, env={**os.environ, "P2PD_HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("ExecStart=")]
    command = line.removeprefix("ExecStart=").removesuffix(" serve")
    beside = Path(sys.executable).parent / "p2pd"
    assert command == (str(beside) if beside.is_file() else f"{sys.executable} -m p2pd")


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_accepts_the_unit_and_finds_the_program(tmp_path: Path) -> None:
    program = executable(tmp_path / "my tools" / "100%" / "p2pd")
    unit = tmp_path / "p2pd.service"
    unit.write_text(systemd_unit(p2pd_command(str(program))))
    ok = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    program.unlink()  # the check can fail: a unit whose program is gone is refused
    gone = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert gone.returncode != 0 and "not executable" in gone.stderr
