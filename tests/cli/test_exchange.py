"""p2pd/cli/exchange.py: ``receive --file`` (the sender's fallback) in-process, the sender's fallback file when no
peer comes, and ``demo`` — the main job across three real processes."""

from __future__ import annotations

import errno
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from p2pd.cli.main import main
from p2pd.errors import ExitCode
from tests.agents.claude_code.helpers import Session
from tests.cli.helpers import SHORT, run
from tests.full_disk import FullDisk


def test_receive_a_fallback_file_and_import_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    s = Session(cwd=str(tmp_path))
    s.user("title with [/] markup \u202eand bidi")
    s.assistant([{"type": "text", "text": "ok"}])
    doc = tmp_path / "c.a2a.json"
    assert main(["export", str(s.write(tmp_path / "src")), "-o", str(doc)]) == ExitCode.OK
    capsys.readouterr()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    inbox = tmp_path / "inbox"
    assert main(["receive", "--file", str(doc), "-o", str(inbox), "--import", "--cwd", str(tmp_path)]) == ExitCode.OK
    captured = capsys.readouterr()
    assert "Read title with [/] markup \\u202eand bidi (2 messages) → " in captured.err
    assert "\u202e" not in captured.err
    assert list(inbox.glob("*.a2a.json"))
    assert captured.out.startswith(f"cd {tmp_path.resolve()} && claude --resume ")


@pytest.mark.parametrize("given", ["session", "pretty"])
def test_receive_file_of_a_session_or_pretty_writes_the_document_without_holding_it(tmp_path: Path,
                                                                                   given: str) -> None:
    """``receive --file`` given a session file, or asked for ``--pretty``, writes the document the packing
    process's way (it used to load it whole): the same conversation, nothing staged left behind."""
    from p2pd.agents.sources import load_file

    source = SHORT
    if given == "pretty":
        source = tmp_path / "c.a2a.json"
        assert run("export", str(SHORT), "-o", str(source)).returncode == 0
    inbox = tmp_path / "inbox"
    r = run("receive", "--file", str(source), "-o", str(inbox), *(["--pretty"] if given == "pretty" else []))
    assert r.returncode == 0, r.stderr
    written = list(inbox.iterdir())
    assert len(written) == 1 and written[0].name.endswith(".a2a.json"), written
    assert written[0].read_text().startswith("{\n  " if given == "pretty" else '{"')
    doc = load_file(SHORT)
    got, whole = json.loads(written[0].read_bytes()), doc.to_json_dict()
    for d in (got, whole):
        d.pop("exportedAt", None)
    assert got == whole
    assert str(written[0]) in r.stdout and f"({doc.counts.messages} messages)" in r.stderr, r.stderr


def test_send_without_a_peer_writes_the_fallback(tmp_path: Path) -> None:
    r = run("send", str(SHORT), "--signal", "ws://127.0.0.1:9/", "--timeout", "2", "--fallback-dir", str(tmp_path))
    assert r.returncode == ExitCode.FALLBACK_WRITTEN, r.stderr
    written = list(tmp_path.glob("*.a2a.json"))
    assert len(written) == 1 and r.stdout == f"p2pd import {written[0].name}\n"
    assert "No peer connection" in r.stderr


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[FullDisk]:
    disk = FullDisk(tmp_path / "full")
    try:
        yield disk
    finally:
        disk.unmount()


def test_a_full_disk_is_named_as_such_and_nothing_half_written_is_left(full_disk: FullDisk,
                                                                        tmp_path: Path) -> None:
    """Writes this machine refuses (ENOSPC from a real full disk, a missing folder) are storage errors naming what
    could not be written; they used to be "unexpected OSError … (run with --debug)"."""
    target = full_disk.folder / "x.a2a.json"
    for args in (("export", str(SHORT), "-o", str(target)), ("export", str(SHORT), "--pretty", "-o", str(target)),
                 ("convert", str(SHORT), str(target))):
        r = run(*args)
        assert (r.returncode, r.stderr) == (ExitCode.STORAGE, f"error: cannot write {target}: No space left on "
                                                              "device\n"), args
    missing = tmp_path / "no" / "such" / "x.a2a.json"
    r = run("export", str(SHORT), "-o", str(missing), "--json")
    assert json.loads(r.stdout)["cause"] == "storage" and json.loads(r.stdout)["details"]["errno"] == errno.ENOENT
    assert f"cannot write {missing}: No such file or directory" in r.stderr
    # no peer, and no room for the fallback file either: both are said, and the session is where it was
    r = run("send", str(SHORT), "--signal", "ws://127.0.0.1:9/", "--timeout", "2", "--fallback-dir",
            str(full_disk.folder))
    assert r.returncode == ExitCode.STORAGE, r.stderr
    assert "no peer connection (signaling server unreachable" in r.stderr
    assert f"cannot write the fallback file into {full_disk.folder}: No space left on device" in r.stderr
    # a received document that cannot be imported: the agent's folder is on the full disk
    doc = tmp_path / "short.a2a.json"
    assert run("export", str(SHORT), "-o", str(doc)).returncode == 0
    for agent, home in (("claude-code", "CLAUDE_CONFIG_DIR"), ("codex", "CODEX_HOME")):
        r = run("import", str(doc), "--agent", agent, "--cwd", str(tmp_path), env={home: str(full_disk.folder)})
        assert r.returncode == ExitCode.STORAGE and "No space left on device" in r.stderr, (agent, r.stderr)
        assert f"cannot write the session into {full_disk.folder}" in r.stderr, r.stderr
    assert [p for p in full_disk.files() if p.is_file()] == []


def test_demo_runs_the_main_job(tmp_path: Path) -> None:
    r = run("demo", str(SHORT))
    assert r.returncode == 0, r.stderr
    assert "SHA-256 verified" in r.stderr and "signaling server: ws://127.0.0.1:" in r.stderr
    m = re.fullmatch(r"cd (\S+) && claude --resume (\S+)", r.stdout.strip())
    assert m is not None, r.stdout
    cwd, session_id = m.groups()
    home = Path(cwd).parent / "claude-home"
    assert list(home.rglob(f"{session_id}.jsonl"))
