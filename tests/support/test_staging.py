"""Staging folders killed processes leave behind are swept by age at start-up, never one a live process holds:
send work folders (``p2pd-send-*``), import staging (``.p2pd-import-*``) and receive partials (``.p2pd-partial``)
— with real ``p2pd`` processes killed by SIGKILL."""

from __future__ import annotations

import base64
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from p2pd.agents.claude_code.importer import IMPORT_STAGE_PREFIX, sweep_stale_imports
from p2pd.agents.sources import load_file
from p2pd.conversation.document_io import write_document
from p2pd.conversation.model import Message, Part
from p2pd.daemon.housekeeping import sweep_stale_staging
from p2pd.exchange.packing import STAGING_PREFIX
from p2pd.support.staging import hold, sweep
from tests.corpus import claude_code_files
from tests.pipe_lines import read_until
from tests.signal_process import signal_server

ROOT = Path(__file__).resolve().parents[2]
SMALL = next(f for f in claude_code_files(include_subagents=False) if f.name == "short.jsonl")
OLD = 2 * 3600.0


def age(folder: Path, seconds: float = OLD) -> None:
    """Make everything in ``folder`` look untouched for ``seconds``."""
    then = time.time() - seconds
    for root, dirs, files in os.walk(folder):
        for name in (*dirs, *files):
            os.utime(os.path.join(root, name), (then, then), follow_symlinks=False)
    os.utime(folder, (then, then))


def test_sweep_removes_stale_folders_only(tmp_path: Path) -> None:
    stale, fresh, held, other = (tmp_path / n for n in ("p2pd-send-a", "p2pd-send-b", "p2pd-send-c", "keep-d"))
    for folder in (stale, fresh, held, other):
        (folder / "sub").mkdir(parents=True)
        (folder / "sub" / "blob").write_bytes(b"x")
    fd = hold(held)
    for folder in (stale, held, other):
        age(folder)
    (tmp_path / "p2pd-send-link").symlink_to(other)
    try:
        assert sweep(tmp_path, "p2pd-send-*") == 1
    finally:
        os.close(fd)
    assert not stale.exists() and fresh.exists() and held.exists() and other.exists()
    age(fresh)
    os.utime(fresh / "sub" / "blob")  # one file changed lately: the folder is in use
    assert sweep(tmp_path, "p2pd-send-*") == 1  # held: its holder let go; fresh is kept
    assert not held.exists() and fresh.exists()


def _env(tmp_path: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("P2PD_", "CLAUDE_"))}
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {**env, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path / "tmp"), "P2PD_SIGNAL": url,
            "P2PD_CONFIG": str(tmp_path / "none.toml"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
            "P2PD_ICE_HOST_ADDRESSES": "127.0.0.1", "HOME": str(tmp_path)}


def _started_sender(env: dict[str, str], cwd: Path, source: Path = SMALL) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "p2pd", "send", str(source), "--timeout", "60"], env=env,
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    assert proc.stderr is not None
    for line in proc.stderr:
        if "Code:" in line:
            return proc
    raise AssertionError("the sender never showed its code")


def test_a_killed_senders_work_folder_is_swept_by_the_next_send_but_a_live_ones_is_kept(tmp_path: Path) -> None:
    with signal_server() as server:
        env = _env(tmp_path, server.url)
        temp = tmp_path / "tmp"
        killed = _started_sender(env, tmp_path)
        killed.send_signal(signal.SIGKILL)
        killed.wait(10)
        left = list(temp.glob("p2pd-send-*"))
        assert len(left) == 1, "the killed send left its work folder"  # (its packing starts after the code)
        live = _started_sender(env, tmp_path)
        try:
            live_dirs = [d for d in temp.glob("p2pd-send-*") if d != left[0]]
            assert len(live_dirs) == 1 and left[0].exists()  # too recent to be swept yet
            for folder in (left[0], live_dirs[0]):
                age(folder)
            third = _started_sender(env, tmp_path)  # its start-up sweeps
            third.kill()
            third.wait(10)
            assert not left[0].exists(), "the killed send's folder is gone"
            assert live_dirs[0].exists(), "the live send's folder is kept, however old it looks"
            assert live.poll() is None
        finally:
            live.kill()
            live.wait(10)


def _big_session(tmp_path: Path) -> Path:
    doc = load_file(SMALL)
    filler = base64.b64encode(os.urandom(24_000_000)).decode("ascii")  # ~32 MB that lz4 cannot shrink
    doc.messages.append(Message(message_id="filler", role="ROLE_USER", parts=[Part(text=filler)]))
    path = tmp_path / "big.a2a.json"
    write_document(doc, path)
    return path


@pytest.mark.slow
def test_a_killed_receivers_staging_is_swept_by_the_next_receive_into_that_folder(tmp_path: Path) -> None:
    """Between two p2pd the transfer is streamed (SPEC §12: no resume, it restarts from zero): a receiver killed
    mid-stream leaves its hidden staging file in the output folder; the next receive there removes it once it
    is an hour old (a live receive writes it at every chunk), never a fresh one."""
    with signal_server() as server:
        env = _env(tmp_path, server.url)
        inbox = tmp_path / "inbox"
        sender = subprocess.Popen([sys.executable, "-m", "p2pd", "send", str(_big_session(tmp_path)), "--code",
                                   "4246-amber-lotus", "--timeout", "60"], env=env, cwd=tmp_path,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                  stdin=subprocess.DEVNULL)
        assert sender.stderr is not None
        read_until(sender.stderr, re.compile("Code:"), timeout=60)
        receiver = subprocess.Popen([sys.executable, "-m", "p2pd", "receive", "4246-amber-lotus", "--yes", "-o",
                                     str(inbox)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    stdin=subprocess.DEVNULL)

        def staged() -> list[Path]:
            return [p for p in inbox.glob(f"{STAGING_PREFIX}*") if p.stat().st_size > 0]

        try:
            deadline = time.monotonic() + 60
            while not staged() and time.monotonic() < deadline and receiver.poll() is None:
                time.sleep(0.02)
            receiver.send_signal(signal.SIGKILL)
            receiver.wait(10)
        finally:
            sender.kill()
            sender.wait(10)
        left = staged()
        assert len(left) == 1, "the kill left the staging file"
        again = subprocess.run([sys.executable, "-m", "p2pd", "receive", "4246-amber-lotus", "--yes", "-o",
                                str(inbox), "--timeout", "3"], env=env, capture_output=True, text=True, timeout=60)
        assert again.returncode != 0 and left[0].exists()  # fresh: it could be a live receive's
        past = time.time() - 2 * 3600
        os.utime(left[0], (past, past))
        again = subprocess.run([sys.executable, "-m", "p2pd", "receive", "4246-amber-lotus", "--yes", "-o",
                                str(inbox), "--timeout", "3"], env=env, capture_output=True, text=True, timeout=60)
        assert again.returncode != 0 and not left[0].exists(), again.stderr
        assert not list(inbox.glob(".p2pd-*")), list(inbox.iterdir())


def test_import_stages_left_by_a_killed_import_are_swept_at_daemon_start(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    projects = tmp_path / "claude" / "projects"
    (projects / "-p").mkdir(parents=True)
    # a real import process killed while it held its staging folder (as _write_staged does)
    code = ("import os, sys, tempfile; from pathlib import Path; from p2pd.support.staging import hold; "
            f"s = Path(tempfile.mkdtemp(prefix='{IMPORT_STAGE_PREFIX}x.', dir=sys.argv[1])); hold(s); "
            "(s / 'x.jsonl').write_text('{}'); print(s, flush=True); os.kill(os.getpid(), 9)")
    done = subprocess.run([sys.executable, "-c", code, str(projects / "-p")], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert done.returncode == -signal.SIGKILL
    stage = Path(done.stdout.strip())
    assert stage.is_dir()
    assert sweep_stale_imports(projects) == 0 and stage.exists()  # fresh
    age(stage)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    assert sweep_stale_staging() == 1 and not stage.exists() and (projects / "-p").is_dir()
