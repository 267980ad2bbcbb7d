"""The top level (p2pd/cli/main.py): every command is registered, errors are one line chosen by their type, peer
text is shown escaped, exit codes are the documented ones; ``python -m p2pd`` and the console script work."""

from __future__ import annotations

import importlib
import re
import sys
import tomllib
from pathlib import Path

import pytest

from p2pd import __version__
from p2pd.cli import launch
from p2pd.cli.main import build_parser, error_line, exit_code, main, report
from p2pd.errors import CLASS_BY_CAUSE, Cause, ExitCode, P2pdError, Party, PeerGoneError, SignalingError
from tests.cli.helpers import run

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = {"sessions", "export", "import", "convert", "show", "send", "receive", "demo", "serve", "transfers",
            "inbox", "handoffs", "hook", "pair", "devices", "links", "completion", "gc", "man", "delegate",
            "delegations", "session-links"}


@pytest.mark.parametrize(("args", "code", "words"), [
    (["export", "nonexistent-session-id"], ExitCode.NOT_FOUND, "no Claude Code sessions"),
    (["import", "/nonexistent/x.a2a.json"], ExitCode.NOT_FOUND, "not found"),
    (["show", "/nonexistent/file.a2a.json"], ExitCode.NOT_FOUND, "not found"),
])
def test_errors_are_one_line_with_exit_code(tmp_path, args, code, words):
    r = run(*args, env={"CLAUDE_CONFIG_DIR": str(tmp_path / "empty")})
    assert r.returncode == code
    assert words in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_debug_shows_traceback(tmp_path):
    r = run("--debug", "show", str(tmp_path / "missing.json"))
    assert r.returncode != 0 and "Traceback" in r.stderr


def test_every_command_is_registered() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(sub.choices) == COMMANDS  # type: ignore[arg-type]


def test_usage_error_is_exit_code_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["no-such-command"])
    assert raised.value.code == ExitCode.USAGE
    assert "invalid choice" in capsys.readouterr().err


@pytest.mark.parametrize("cause", list(Cause))
def test_exit_code_is_the_error_classes(cause: Cause) -> None:
    exc = CLASS_BY_CAUSE[cause]("something failed", cause=cause)
    assert exit_code(exc) == int(type(exc).exit_code)
    assert exit_code(P2pdError("x", exit_code=ExitCode.DECLINED)) == ExitCode.DECLINED


def test_exit_codes_match_the_readme() -> None:
    table = (ROOT / "README.md").read_text(encoding="utf-8").split("### Exit codes", 1)[1].split("\n\n## ", 1)[0]
    documented = {int(m) for m in re.findall(r"^\| (\d+) \|", table, re.M)}
    assert documented == {int(c) for c in ExitCode}


def test_unexpected_errors_are_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert report(ValueError("bad\nvalue [red]")) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert err == "error: unexpected ValueError: bad value [red] (run with --debug)\n"


def test_message_markup_is_printed_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    assert report(P2pdError("cannot read [/] [bold]x[/bold]", exit_code=ExitCode.NOT_FOUND)) == ExitCode.NOT_FOUND
    assert capsys.readouterr().err == "error: cannot read [/] [bold]x[/bold]\n"


@pytest.mark.parametrize(("exc", "speaker"), [
    (PeerGoneError("the peer closed the transfer", peer_text="bye [/] \u202eevil\x1b[2J\nline 2"), "the peer"),
    (SignalingError("the server refused", cause=Cause.SIGNALING_REFUSED, peer_text="bye [/] \u202eevil\x1b[2J\n"
                    "line 2"), "the signaling server"),
    (P2pdError("odd", party=Party.NETWORK, peer_text="bye [/] \u202eevil\x1b[2J\nline 2"), "the other side"),
])
def test_peer_text_is_shown_through_visible(capsys: pytest.CaptureFixture[str], exc: P2pdError,
                                            speaker: str) -> None:
    assert report(exc) == exc.exit_code
    err = capsys.readouterr().err
    assert err == f"error: {exc} ({speaker} said: “bye [/] \\u202eevil\\x1b[2J\\x0aline 2”)\n"
    assert "peer" not in error_line(P2pdError("x", party=Party.PEER))  # no peer text: nothing about it
    assert "said" not in error_line(P2pdError("x", party=Party.PEER, peer_text=""))


def test_main_maps_an_error_raised_by_a_command(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    def declined(*_: object) -> int:
        raise P2pdError("declined by the receiver", exit_code=ExitCode.DECLINED, party=Party.PEER, peer_text="no")

    monkeypatch.setattr("p2pd.cli.conversations.cmd_show", declined)
    assert main(["show", str(tmp_path)]) == ExitCode.DECLINED
    assert capsys.readouterr().err == "error: declined by the receiver (the peer said: “no”)\n"
    with pytest.raises(P2pdError):
        main(["--debug", "show", str(tmp_path)])


def test_python_dash_m_and_the_console_script() -> None:
    r = run("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"p2pd {__version__}"
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    module, _, func = scripts["p2pd"].partition(":")
    assert getattr(importlib.import_module(module), func) is launch.entry  # (tests/cli/test_launch.py)
    assert sys.modules["p2pd.cli.main"].main is main
