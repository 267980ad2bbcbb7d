"""Where a command's big work files go (p2pd/support/workroom.py): the temporary folder, unless it lives in RAM
(a tmpfs, as /tmp is on Debian 13, Fedora and Arch), then the user's cache folder.

The rules read a mount table as text (sans I/O). The field test mounts a real, small tmpfs as ``$TMPDIR`` (root,
as CI has; elsewhere skipped with the reason) and runs ``p2pd import`` and ``p2pd send`` (no peer) of a session
bigger than it, as a user on such a machine would: both used to fail for want of room there."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from p2pd.errors import ExitCode
from p2pd.support import staging, workroom
from p2pd.support.workroom import filesystem_of, memory_backed
from tests.full_disk import FullDisk
from tests.transfer.gen import generate_conversation

ROOT = Path(__file__).resolve().parents[2]

MOUNTS = "\n".join([
    "22 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw",
    "30 22 0:26 / /tmp rw,nosuid,nodev shared:12 - tmpfs tmpfs rw,size=4096k",
    "31 30 252:2 / /tmp/disk rw,relatime shared:13 - xfs /dev/vdb rw",
    "32 22 0:27 / /mnt/my\\040ram rw - ramfs none rw",
    "33 22 252:3 / /srv rw - ext4 /dev/vdc rw",
    "34 22 0:28 / /srv rw - tmpfs tmpfs rw",  # mounted over /srv later: it is what /srv is now
    "35 22 0:29 / /opt rw shared:5 master:2 - tmpfs tmpfs rw",  # (optional fields before the separator)
    "garbage line",
])


@pytest.mark.parametrize(("path", "fstype"), [
    ("/", "ext4"), ("/home/me", "ext4"), ("/tmp", "tmpfs"), ("/tmp/p2pd-x", "tmpfs"), ("/tmp/disk/a", "xfs"),
    ("/tmpfoo", "ext4"), ("/mnt/my ram/x", "ramfs"), ("/srv/a", "tmpfs"), ("/opt", "tmpfs"),
])
def test_the_mount_a_path_is_on(path: str, fstype: str) -> None:
    assert filesystem_of(path, MOUNTS) == fstype
    assert memory_backed(path, MOUNTS) is (fstype in ("tmpfs", "ramfs"))


def test_nothing_said_is_not_memory() -> None:
    assert filesystem_of("/x", "") is None and not memory_backed("/x", "")


@pytest.fixture
def ram_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``$TMPDIR`` on a real 2 MiB tmpfs; the cache folder ($XDG_CACHE_HOME) on disk."""
    ram = tmp_path / "ram"
    ram.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(ram)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"a tmpfs cannot be mounted here (mount: {done.stderr.strip() or done.returncode})")
    monkeypatch.setenv("TMPDIR", str(ram))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", None)  # (gettempdir reads $TMPDIR again)
    try:
        yield ram
    finally:
        subprocess.run(["umount", "-l", str(ram)], check=False, capture_output=True)


def test_work_goes_to_the_cache_when_the_temporary_folder_is_in_ram(ram_tmpdir: Path, tmp_path: Path) -> None:
    assert tempfile.gettempdir() == str(ram_tmpdir)
    root = workroom.work_root()
    assert root == tmp_path / "cache" / "p2pd" / "work" and root.is_dir()
    assert oct(root.stat().st_mode & 0o777) == "0o700"
    assert workroom.work_roots() == [ram_tmpdir, root]
    folder = workroom.work_folder(workroom.SPOOL)
    assert folder.parent == root and folder.name.startswith(workroom.SPOOL)


def test_work_stays_in_a_temporary_folder_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    table = Path("/proc/self/mountinfo").read_text()
    if memory_backed(os.path.realpath(tmp_path), table):
        pytest.skip("this machine's test folder is itself in RAM")
    assert workroom.work_root() == Path(os.path.realpath(tmp_path)) and workroom.work_roots() == [workroom.work_root()]


def test_what_killed_runs_left_is_swept_in_both_places(ram_tmpdir: Path) -> None:
    old = 1_000_000_000.0  # (2001: long untouched)
    left = [root / f"{prefix}left" for root in workroom.work_roots() for prefix in workroom.PREFIXES]
    for folder in left:
        folder.mkdir()
        (folder / "spool").write_bytes(b"x")
        os.utime(folder / "spool", (old, old))
        os.utime(folder, (old, old))
    live = workroom.work_folder(workroom.SEND)
    held = staging.hold(live)
    try:
        os.utime(live, (old, old))
        assert workroom.sweep_stale_work() == len(left)
        assert not any(f.exists() for f in left) and live.exists()  # a live run's folder stays
    finally:
        os.close(held)


def _env(home: Path) -> dict[str, str]:
    """This test's environment ($TMPDIR and $XDG_CACHE_HOME as the fixture set them), its homes under ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("P2PD_", "CLAUDE_", "CODEX_"))}
    env.update(PYTHONPATH=str(ROOT), HOME=str(home), P2PD_HOME=str(home / "p2pd"), P2PD_CONFIG=str(home / "none.toml"),
               CLAUDE_CONFIG_DIR=str(home / "claude"), CODEX_HOME=str(home / "codex"), TERM="dumb")
    return env


def _p2pd(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "p2pd", *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_a_session_bigger_than_a_tmpfs_temporary_folder_imports_and_sends(ram_tmpdir: Path, tmp_path: Path) -> None:
    session = tmp_path / "big.jsonl"
    session.write_bytes(generate_conversation(6_000_000, seed=4))  # (3 times the tmpfs)
    env = _env(tmp_path)
    imported = _p2pd("import", str(session), "--cwd", str(tmp_path), env=env, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert list((tmp_path / "claude" / "projects").rglob("*.jsonl"))
    sent = _p2pd("send", str(session), "--signal", "ws://127.0.0.1:9/", "--timeout", "2", "--connect-timeout", "2",
                 "--fallback-dir", str(tmp_path / "fallback"), env=env, cwd=tmp_path)
    assert sent.returncode == ExitCode.FALLBACK_WRITTEN, sent.stderr  # (no peer: the file was written)
    assert [f.name.endswith(".a2a.json") for f in (tmp_path / "fallback").iterdir()] == [True]
    shown = _p2pd("show", str(session), "--json", env=env, cwd=tmp_path)
    assert shown.returncode == 0 and shown.stdout.startswith("{"), shown.stderr
    assert list(ram_tmpdir.iterdir()) == []
    assert list((tmp_path / "cache" / "p2pd" / "work").iterdir()) == []  # each run removed its own


def test_no_room_for_the_work_is_a_storage_error_naming_where(ram_tmpdir: Path, tmp_path: Path) -> None:
    """The work folder's disk is full: each command says so, with the folder, and the storage exit code —
    never an "unexpected OSError" —, and leaves nothing there."""
    disk = FullDisk(tmp_path / "cache" / "p2pd" / "work")
    try:
        session = tmp_path / "s.jsonl"
        session.write_bytes(generate_conversation(1_000_000, seed=2))
        env = _env(tmp_path)
        runs = {"import": _p2pd("import", str(session), "--cwd", str(tmp_path), env=env, cwd=tmp_path),
                "send": _p2pd("send", str(session), "--signal", "ws://127.0.0.1:9/", "--timeout", "2",
                              "--connect-timeout", "2", "--fallback-dir", str(tmp_path / "fb"), env=env, cwd=tmp_path),
                "show --json": _p2pd("show", str(session), "--json", env=env, cwd=tmp_path)}
        for name, run in runs.items():
            assert run.returncode == ExitCode.STORAGE, (name, run.stderr)
            assert str(disk.folder) in run.stderr and "No space left on device" in run.stderr, (name, run.stderr)
            assert "unexpected" not in run.stderr, (name, run.stderr)
        assert disk.files() == [] and list(ram_tmpdir.iterdir()) == []
    finally:
        disk.unmount()
