"""The console script's first step (p2pd/cli/launch.py): ``p2pd send FILE`` starts its packing process before the
command line is imported; every other command line runs as it is, with no spare process."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from p2pd.cli import launch
from p2pd.exchange import spare


@pytest.mark.parametrize(("args", "packs"), [
    (["send", "session.jsonl"], True),
    (["send", "session.jsonl", "--code", "7-abc-def"], True),
    (["--debug", "send", "latest"], True),
    (["send", "--redact", "session.jsonl"], True),
    (["send"], False),  # (argparse says what is missing)
    (["send", "--help"], False),
    (["send", "-h"], False),
    (["send", "session.jsonl", "--to", "laptop"], False),  # the daemon sends
    (["send", "session.jsonl", "--to=laptop"], False),
    (["send", "session.jsonl", "--link", "team"], False),
    (["send", "session.jsonl", "--link=team"], False),
    (["receive"], False),
    (["export", "send"], False),
    ([], False),
    (["--help"], False),
])
def test_which_command_lines_start_a_packing_process(args, packs):
    assert launch.packs_a_file(args) is packs


@pytest.fixture
def no_spare():
    yield
    spare.close()  # (a test's spare: its input closed, it ends)
    assert spare.spare() is None


def spare_when_main_runs(monkeypatch, args: list[str]) -> object:
    """Run the console script's entry on ``args`` with ``p2pd.cli.main.entry`` replaced: the spare it found."""
    seen: list[object] = []

    def main_entry() -> None:  # (the real one parses sys.argv and runs the command)
        seen.append(spare.spare())
        raise SystemExit(0)

    monkeypatch.setattr("p2pd.cli.main.entry", main_entry)
    monkeypatch.setattr(sys, "argv", ["p2pd", *args])
    with pytest.raises(SystemExit):
        launch.entry()
    assert len(seen) == 1  # the command ran, once
    return seen[0]


@pytest.mark.parametrize(("args", "started"), [
    (["send", "session.jsonl", "--code", "7-abc-def"], True),
    (["send", "session.jsonl", "--to", "laptop"], False),
    (["sessions"], False),
])
def test_the_spare_is_running_before_the_command_line_is_read(monkeypatch, no_spare, args, started):
    found = spare_when_main_runs(monkeypatch, args)
    assert (found is not None) is started
    if started:
        assert isinstance(found, subprocess.Popen) and found.poll() is None  # waiting for its job


def test_a_spare_that_cannot_start_leaves_the_command_to_run(monkeypatch, no_spare):
    # (a process table or memory exhausted: the send itself starts a process for its job and reports the error)
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr("p2pd.exchange.spare.subprocess.Popen", refuse)
    assert spare_when_main_runs(monkeypatch, ["send", "session.jsonl"]) is None


def test_the_launch_imports_nothing_of_the_command_line_before_the_spare_starts():
    # (in a fresh interpreter: which p2pd modules are loaded when prespawn runs)
    code = ("import sys\n"
            "from p2pd.exchange import spare\n"
            "def seen():\n"
            "    print(sorted(m for m in sys.modules if m.startswith('p2pd')))\n"
            "    raise SystemExit(0)\n"
            "spare.prespawn = seen\n"
            "sys.argv = ['p2pd', 'send', 'x.jsonl']\n"
            "from p2pd.cli import launch\n"
            "launch.entry()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert ast.literal_eval(r.stdout) == ["p2pd", "p2pd.cli", "p2pd.cli.launch", "p2pd.exchange", "p2pd.exchange.spare"]
