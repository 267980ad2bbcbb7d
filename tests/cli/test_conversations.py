"""``p2pd sessions``, ``export``, ``import``, ``convert``, ``show`` (p2pd/cli/conversations.py), run as real
processes."""

from __future__ import annotations

import json
import os

import pytest

from p2pd.errors import ExitCode
from tests.agents.claude_code.helpers import Session
from tests.cli.helpers import SHORT, run


def claude_home_with(tmp_path, first_message):
    """A Claude Code home under ``tmp_path`` holding one two-message session that opens with ``first_message``."""
    home = tmp_path / "home"
    s = Session(cwd="/work/demo")
    s.user(first_message)
    s.assistant([{"type": "text", "text": "done"}])
    s.write(home / "projects" / "-work-demo")
    return home, s


@pytest.fixture
def claude_home(tmp_path):
    return claude_home_with(tmp_path, "please refactor the parser")


def test_sessions_json_and_table(claude_home):
    home, s = claude_home
    r = run("sessions", "--json", env={"CLAUDE_CONFIG_DIR": str(home)})
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data[0]["session_id"] == s.session_id and data[0]["title"] == "please refactor the parser"
    assert data[0]["messages"] == 2 and data[0]["cwd"] == "/work/demo"
    r = run("sessions", env={"CLAUDE_CONFIG_DIR": str(home)})
    assert r.returncode == 0 and s.session_id[:8] in r.stdout


def test_export_by_prefix_import_and_show(claude_home, tmp_path):
    home, s = claude_home
    out = tmp_path / "c.a2a.json"
    env = {"CLAUDE_CONFIG_DIR": str(home)}
    r = run("export", s.session_id[:6], "-o", str(out), env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["contextId"] == s.session_id
    r = run("export", "latest", "--compressed", "-o", str(tmp_path / "c.a2a.p2pd"), env=env)
    assert r.returncode == 0, r.stderr
    project = tmp_path / "proj"
    project.mkdir()
    r = run("import", str(tmp_path / "c.a2a.p2pd"), "--cwd", str(project), env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"cd {os.path.realpath(project)} && claude --resume ")
    new_id = r.stdout.split()[-1]
    assert list((home / "projects").rglob(f"{new_id}.jsonl"))
    r = run("show", str(out))
    assert r.returncode == 0 and "please refactor the parser" in r.stdout and "2 messages shown" in r.stdout


def test_convert_keep_ids_is_exact(tmp_path):
    doc = tmp_path / "s.a2a.json"
    back = tmp_path / "back.jsonl"
    assert run("convert", str(SHORT), str(doc)).returncode == 0
    r = run("convert", str(doc), str(back), "--keep-ids")
    assert r.returncode == 0, r.stderr
    src = [json.loads(x) for x in SHORT.read_text().splitlines()]
    assert [json.loads(x) for x in back.read_text().splitlines()] == src


def test_corrupt_blob_import_writes_nothing(tmp_path):
    blob_path = tmp_path / "c.a2a.p2pd"
    assert run("export", str(SHORT), "--compressed", "-o", str(blob_path)).returncode == 0
    data = bytearray(blob_path.read_bytes())
    data[100] ^= 1
    blob_path.write_bytes(bytes(data))
    home = tmp_path / "home"
    r = run("import", str(blob_path), "--cwd", str(tmp_path), env={"CLAUDE_CONFIG_DIR": str(home)})
    assert r.returncode == ExitCode.INVALID_INPUT and "checksum mismatch" in r.stderr
    assert not home.exists()


def test_malformed_lines_reported_and_strict_writes_nothing(tmp_path):
    s = Session()
    s.user("hi")
    s.raw("{not json")
    src = s.write(tmp_path)
    r = run("export", str(src), "-o", str(tmp_path / "o.a2a.json"))
    assert r.returncode == 0 and "line 2: not valid JSON" in r.stderr
    r = run("export", str(src), "--strict", "-o", str(tmp_path / "strict.a2a.json"))
    assert r.returncode == ExitCode.INVALID_INPUT and not (tmp_path / "strict.a2a.json").exists()


def test_titles_are_shown_not_interpreted(tmp_path):
    """A title is transcript text: rich markup in it prints as written, invisible characters as escapes."""
    home, _ = claude_home_with(tmp_path, "close the [/] tag and [bold]this[/bold] \u202eevil")
    r = run("sessions", env={"CLAUDE_CONFIG_DIR": str(home), "COLUMNS": "300"})
    assert r.returncode == 0, r.stderr
    assert "close the [/] tag and [bold]this[/bold] \\u202eevil" in r.stdout and "\u202e" not in r.stdout
