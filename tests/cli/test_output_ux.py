"""What the CLI prints (issue 17's "Progress and output" list): tables piped and at 80 columns, last activity, show's
pager and refusal, --json objects, option names, usage errors, -o FILE, hints, the demo's labels, messages."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pytest
from rich.console import Console

from p2pd.cli.main import error_line, main
from p2pd.cli.progress import Activity
from p2pd.errors import ExitCode
from p2pd.transfer.events import Failure
from p2pd.transfer.frames import Code
from tests.agents.claude_code.helpers import Session
from tests.cli.helpers import SHORT, run
from tests.cli.terminal import Terminal
from tests.transfer.gen import generate_conversation

LONG_TITLE = "please refactor the tokenizer so that the parser can report every position of an error"


def _home(tmp_path: Path, title: str = LONG_TITLE, cwd: str = "/work/a/rather/long/project/folder/name"
          ) -> tuple[Path, Session, Path]:
    home = tmp_path / "home"
    s = Session(cwd=cwd)
    s.user(title)
    s.assistant([{"type": "text", "text": "done"}])
    path = s.write(home / "projects" / "-work-demo")
    return home, s, path


def _env(home: Path, tmp_path: Path) -> dict[str, str]:
    return {"CLAUDE_CONFIG_DIR": str(home), "CODEX_HOME": str(tmp_path / "none"),
            "GEMINI_DIR": str(tmp_path / "none"), "P2PD_CONFIG": str(tmp_path / "none.toml")}


# ---------------------------------------------------------------- tables
def test_sessions_piped_are_tab_separated_full_values(tmp_path: Path) -> None:
    home, s, path = _home(tmp_path, "a title", cwd="/work/a\tb")
    r = run("sessions", env={**_env(home, tmp_path), "COLUMNS": "40"})
    assert r.returncode == 0, r.stderr
    header, *lines = r.stdout.splitlines()
    assert header.split("\t") == ["id", "agent", "project", "title", "messages", "bytes", "last_activity", "path"]
    assert len(lines) == 1
    fields = lines[0].split("\t")
    assert fields == [s.session_id, "claude-code", "/work/a\\x09b",  # a tab in a value is escaped
                      "a title", "2", str(path.stat().st_size), fields[6], str(path)]


@pytest.mark.parametrize("columns", [80, 120])
def test_sessions_on_a_terminal_keep_the_title_readable(tmp_path: Path, columns: int) -> None:
    home, s, _ = _home(tmp_path)
    title = json.loads(run("sessions", "--json", env=_env(home, tmp_path)).stdout)[0]["title"]
    assert len(title) > 60
    with Terminal("sessions", env=_env(home, tmp_path), columns=columns) as t:
        assert t.wait() == 0, t.text
    table = t.text[t.text.index("id "):]
    assert all(len(line) <= columns for line in table.splitlines()), table
    assert s.session_id[:8] in table
    words = iter(table.split())
    assert all(word in words for word in title.split()), table  # in order, folded over lines, never cut


def test_last_activity_is_the_last_messages_time_not_the_files(tmp_path: Path) -> None:
    home, s, path = _home(tmp_path)
    os.utime(path, (2_000_000_000, 2_000_000_000))  # 2033: a copy or a touch, not a new message
    r = run("sessions", "--json", env=_env(home, tmp_path))
    last = json.loads(r.stdout)[0]["last_activity"]
    assert last == s.lines[-1]["timestamp"].replace(".000Z", "Z"), last


# ---------------------------------------------------------------- show
def test_show_refuses_json_that_is_not_a_conversation(tmp_path: Path) -> None:
    bogus = tmp_path / "package.json"
    bogus.write_text('{"name": "left-pad", "version": "1.0.0"}')
    r = run("show", str(bogus))
    assert r.returncode == ExitCode.INVALID_INPUT
    assert "is not a conversation document" in r.stderr and "(untitled)" not in r.stdout


def test_show_pages_on_a_terminal_unless_told_not_to(tmp_path: Path) -> None:
    pager = tmp_path / "pager.sh"
    pager.write_text("#!/bin/sh\nsed 's/^/PAGED|/'\n")
    pager.chmod(0o755)
    env = {"PAGER": str(pager)}
    with Terminal("show", str(SHORT), env=env) as t:
        assert t.wait() == 0, t.text
    assert "PAGED|" in t.text and "mix phx.server" in t.text
    with Terminal("show", str(SHORT), "--no-pager", env=env) as t:
        assert t.wait() == 0, t.text
    assert "PAGED|" not in t.text and "mix phx.server" in t.text
    r = run("show", str(SHORT), env=env)  # not a terminal: no pager
    assert "PAGED|" not in r.stdout and "mix phx.server" in r.stdout


def _recording_pager(tmp_path: Path) -> Path:
    """A pager that notes when its first line came and when its input ended (seconds since the epoch)."""
    pager = tmp_path / "pager.sh"
    pager.write_text(f"#!/bin/sh\nread -r first\ndate +%s.%N > {tmp_path}/first\ncat > /dev/null\n"
                     f"date +%s.%N > {tmp_path}/eof\n")
    pager.chmod(0o755)
    return pager


def test_show_streams_into_the_pager_and_stops_when_it_is_quit(tmp_path: Path) -> None:
    """The pager is fed as the conversation is rendered (p2pd/cli/pager.py): its first page shows while the rest
    is still being made — rich's own pager held everything until the end (50 MB: 7.7 s of blank screen)."""
    session = tmp_path / "big.jsonl"
    session.write_bytes(generate_conversation(8_000_000, seed=3))
    with Terminal("show", str(session), env={"PAGER": str(_recording_pager(tmp_path))}) as t:
        assert t.wait(timeout=300) == 0, t.text
    first, eof = (float((tmp_path / name).read_text()) for name in ("first", "eof"))
    assert eof - first > 0.1, (first, eof)  # (rendering 8 MB takes seconds here; the whole text at once, ms)
    quitter = tmp_path / "quit.sh"
    quitter.write_text("#!/bin/sh\nhead -n 3 > /dev/null\n")  # the person reads a page and quits
    quitter.chmod(0o755)
    with Terminal("show", str(session), env={"PAGER": str(quitter)}) as t:
        assert t.wait(timeout=300) == 0, t.text
    assert "Traceback" not in t.text and "rror" not in t.text, t.text


HOSTILE = "\x1b[2J\x1b]0;pwned\x07 \u202eexe.txt\u202c \u2066iso\u2069 zero\u200bwidth \x9b31m"
_ACTING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def test_show_makes_a_transcripts_control_and_bidi_characters_visible(tmp_path: Path) -> None:
    """A received conversation is peer text: in the title, the summary, a prompt, an agent's text, a tool call and
    its result, an escape sequence or a bidi override must show as an escape, not act on the terminal (clear it,
    retitle it, reorder what is read)."""
    s = Session(cwd=f"/w/{HOSTILE}")
    s.user(f"please {HOSTILE}")
    s.assistant([{"type": "text", "text": f"ok {HOSTILE}"},
                 {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": f"ls {HOSTILE}"}}])
    s.user([{"type": "tool_result", "tool_use_id": "t1", "content": f"out\n{HOSTILE}\nmore"}])
    path = s.write(tmp_path / "projects" / "-w")
    for extra in ((), ("--full",)):
        r = run("show", str(path), "--no-pager", *extra, env={"COLUMNS": "300"})
        assert r.returncode == 0, r.stderr
        assert _ACTING.search(r.stdout) is None, [m.group() for m in _ACTING.finditer(r.stdout)]
        assert r.stdout.count("\\x1b]0;pwned\\x07") >= 5 and r.stdout.count("\\u202eexe.txt\\u202c") >= 5, r.stdout
    assert "\nmore\n" in r.stdout  # (--full keeps the result's own lines)


def test_the_team_board_makes_its_strings_visible() -> None:
    from p2pd.conversation.render import render_teams

    state = {"teams": {"t": {"name": f"team {HOSTILE}", "status": "active"}},
             "members": {"m": {"name": f"[bold]m {HOSTILE}", "team": HOSTILE, "agentType": HOSTILE,
                               "status": f"[red]{HOSTILE}"}},
             "tasks": {"1": {"id": "1", "subject": HOSTILE, "status": HOSTILE, "owner": HOSTILE,
                             "blockedBy": [HOSTILE, "[link=x]"], "blocks": [HOSTILE]}},
             "timeline": [{"at": HOSTILE, "from": HOSTILE, "to": HOSTILE, "type": HOSTILE, "content": HOSTILE}]}
    buf = io.StringIO()
    render_teams(Console(file=buf, width=400, force_terminal=False, color_system=None), state, full=True)
    text = buf.getvalue()
    assert _ACTING.search(text) is None, text
    assert "[bold]m" in text and "[link=x]" in text  # (markup in a name is shown, not applied)
    assert text.count("\\u202eexe.txt") >= 10, text


# ---------------------------------------------------------------- --json
def test_export_import_and_show_print_one_json_object(tmp_path: Path) -> None:
    out = tmp_path / "c.a2a.json"
    r = run("export", str(SHORT), "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["file"] == str(out) and data["messages"] == 5 and data["bytes"] == out.stat().st_size
    r = run("import", str(out), "--cwd", str(tmp_path), "--json", env={"CLAUDE_CONFIG_DIR": str(tmp_path / "c")})
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["agent"] == "claude-code" and Path(data["path"]).is_file() and "claude --resume" in \
        data["resume_command"]
    r = run("show", str(out), "--json")
    assert json.loads(r.stdout)["format"] == "p2pd.conversation"
    r = run("show", str(tmp_path / "missing.a2a.json"), "--json")  # a failure is the object too
    assert r.returncode == ExitCode.NOT_FOUND
    assert json.loads(r.stdout)["cause"] == "not_found" and json.loads(r.stdout)["exit_code"] == 3


def test_send_without_a_peer_in_json_and_the_hints(tmp_path: Path) -> None:
    env = {"P2PD_CONFIG": str(tmp_path / "none.toml"), "P2PD_SIGNAL": "", "P2PD_REDACT": "0"}
    r = run("send", str(SHORT), "--timeout", "2", "--connect-timeout", "2", "--fallback-dir", str(tmp_path),
            "--json", env=env)
    assert r.returncode == ExitCode.FALLBACK_WRITTEN, r.stderr
    data = json.loads(r.stdout)
    assert data["sent"] is False and Path(data["fallback_file"]).is_file() and data["redacted"] is False
    assert data["import_command"] == f"p2pd import {Path(data['fallback_file']).name}"
    assert data["session"]["session_id"] == "55604662-cf2a-4331-851a-ec234028f8ca"
    assert r.stderr.count("no signaling server is configured") == 1 and "--signal URL" in r.stderr
    assert "the file is not redacted" in r.stderr
    # the chosen session is named before anything else happens
    assert r.stderr.index("Sending mix phx.server") < r.stderr.index("No peer connection")
    r = run("send", str(SHORT), "--signal", "ws://127.0.0.1:9/", "--timeout", "2", "--redact",
            "--fallback-dir", str(tmp_path))
    assert "no signaling server is configured" not in r.stderr and "not redacted" not in r.stderr
    assert r.stderr.count("signaling server unreachable") == 1, r.stderr  # said once, not twice


# ---------------------------------------------------------------- options
def test_agent_option_and_the_old_to_spelling(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    assert main(["import", str(SHORT), "--agent", "claude-code", "--cwd", str(tmp_path), "--dry-run"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["import", str(SHORT), "--to", "claude-code", "--cwd", str(tmp_path), "--dry-run"]) == 0
    assert "warning: --to is now --agent on `p2pd import`" in capsys.readouterr().err
    assert main(["convert", str(SHORT), str(tmp_path / "x.a2a.json"), "--to", "a2a"]) == 0
    assert "--to is now --format" in capsys.readouterr().err
    help_text = run("receive", "--help").stdout
    assert "--agent" in help_text and "--to" not in help_text


@pytest.mark.parametrize("argv", [["devices", "rename"], ["devices", "rename", "laptop"], ["devices", "remove"]])
def test_missing_arguments_are_usage_errors(tmp_path: Path, argv: list[str]) -> None:
    r = run(*argv, env={"P2PD_HOME": str(tmp_path / "home")})
    assert r.returncode == ExitCode.USAGE, r.stderr
    assert r.stderr.startswith("usage: p2pd devices")


def test_receive_output_ending_in_a2a_json_is_the_file(tmp_path: Path) -> None:
    doc = tmp_path / "c.a2a.json"
    assert run("export", str(SHORT), "-o", str(doc)).returncode == 0
    target = tmp_path / "out" / "mine.a2a.json"
    (tmp_path / "out").mkdir()
    r = run("receive", "--file", str(doc), "-o", str(target))
    assert r.returncode == 0, r.stderr
    assert target.is_file() and not target.is_dir() and list((tmp_path / "out").iterdir()) == [target]
    assert r.stdout.strip() == str(target)
    r = run("receive", "--file", str(doc), "-o", str(target))  # never over an existing file
    assert r.returncode == ExitCode.CONFLICT and "exists" in r.stderr


# ---------------------------------------------------------------- progress
def _terminal_console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=True, width=80, color_system=None), buffer


def test_the_transfer_bar_shows_percentage_bytes_rate_and_time_left() -> None:
    console, buffer = _terminal_console()
    now = [100.0]
    bar = Activity(console, clock=lambda: now[0])
    for done in (0, 1_000_000, 2_000_000):  # one MB a second
        bar.transfer("sending", done, 3_000_000)
        now[0] += 1.0
    bar._progress.refresh()  # type: ignore[union-attr]  # what the screen shows at this moment
    shown = buffer.getvalue()
    assert "sending" in shown and "67%" in shown and "2.0 MB/3.0 MB" in shown  # the units of every other line
    assert "1.0 MB/s" in shown and "eta 0:00:01" in shown, shown
    assert "acknowledged" not in shown
    bar.stop()


def test_a_long_step_shows_its_name_and_the_time_spent() -> None:
    console, buffer = _terminal_console()
    step = Activity(console)
    step.step("decompressing and checking the conversation")
    step.stop()
    assert "decompressing and checking the conversation" in buffer.getvalue()
    assert re.search(r"0:00:0\d", buffer.getvalue())
    quiet, silent = Console(file=io.StringIO(), force_terminal=False), io.StringIO()
    Activity(quiet).step("nothing on a pipe")
    assert silent.getvalue() == ""


# ---------------------------------------------------------------- messages
def test_a_decline_reads_once_and_peer_words_are_quoted_once() -> None:
    plain = error_line(Failure(Code.DECLINED, "", True).exception())
    assert plain == "[bold red]error:[/] the receiver declined the offer; nothing was sent"
    worded = error_line(Failure(Code.DECLINED, "not today", True).exception())
    assert worded.count("not today") == 1 and "(declined)" not in worded


def test_the_demo_labels_each_sides_lines() -> None:
    r = run("demo", str(SHORT))
    assert r.returncode == 0, r.stderr
    side_lines = [line for line in r.stderr.splitlines() if line.startswith("   ")]
    assert side_lines and all(re.match(r"   (sender|receiver): ", line) for line in side_lines), r.stderr
    assert any(line.startswith("   sender: Sent ") for line in side_lines)
    assert any(line.startswith("   receiver: Received ") for line in side_lines)
