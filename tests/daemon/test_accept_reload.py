"""The ``[accept]`` policy is read again without a restart: when the config file changes (looked at on each
offer) and on SIGHUP; a changed file that does not parse keeps the previous policy. Unit tests of
``PolicySource`` and one with two real daemons."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from p2pd.daemon.accept_policy import AcceptPolicy, PolicySource
from p2pd.errors import InvalidInputError
from tests.daemon.conftest import SESSION_ID, Daemon, PairMaker, wait_for


def test_the_policy_follows_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    monkeypatch.setenv("P2PD_CONFIG", str(config))
    source = PolicySource()
    assert source.current() == AcceptPolicy()  # no file: take everything
    config.write_text("[accept]\nmax_size = 1000\n")
    assert source.current() == AcceptPolicy(max_size=1000)
    config.write_text("[accept]\nmax_size = oops\n")  # broken: the previous one stays
    assert source.current() == AcceptPolicy(max_size=1000)
    config.write_text("[accept]\nask = true\n")
    assert source.current() == AcceptPolicy(ask=True)
    config.unlink()
    assert source.current() == AcceptPolicy()


def test_reload_reads_an_unchanged_looking_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    monkeypatch.setenv("P2PD_CONFIG", str(config))
    config.write_text("[accept]\nmax_size = 1000\n")
    source = PolicySource()
    stamp = config.stat()
    config.write_text("[accept]\nmax_size = 2000\n")  # same size, same time: looks unchanged
    os.utime(config, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert source.current() == AcceptPolicy(max_size=1000)
    source.reload()
    assert source.current() == AcceptPolicy(max_size=2000)


def test_a_bad_file_at_start_up_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    monkeypatch.setenv("P2PD_CONFIG", str(config))
    config.write_text("[accept]\nmax_size = -5\n")
    with pytest.raises(InvalidInputError):
        PolicySource()
    assert PolicySource(AcceptPolicy(ask=True)).current() == AcceptPolicy(ask=True)  # fixed: no file read


def _send(a: Daemon) -> dict:  # type: ignore[type-arg]
    with a.client() as c:
        tid = c.post("/send", json={"session": SESSION_ID, "to": {"device": "laptop"}}).json()["id"]
        return wait_for(lambda: (r := c.get(f"/transfers/{tid}").json())["state"] in ("done", "failed") and r,
                        timeout=90, what="the send finished")  # type: ignore[no-any-return]


@pytest.mark.slow
def test_a_running_daemon_applies_a_changed_accept_section(paired: PairMaker) -> None:
    a, b = paired(names=("desk", "laptop"), b_config="[accept]\nmax_size = 1000\n", wait_online=True)
    refused = _send(a)
    assert (refused["state"], refused["cause"]) == ("failed", "declined"), refused  # over its size limit
    config = b.base / "config.toml"
    config.write_text("[accept]\nmax_size = 100_000_000\n")  # changed on disk: no restart, no signal
    taken = _send(a)
    assert taken["state"] == "done", taken
    stamp = config.stat()
    config.write_text('[accept]\ndevices = ["xxxxxxxx"]\n')  # same size and time: only SIGHUP makes it count
    assert config.stat().st_size == stamp.st_size
    os.utime(config, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert b.process is not None
    b.process.send_signal(signal.SIGHUP)
    not_allowed = _send(a)
    assert (not_allowed["state"], not_allowed["cause"]) == ("failed", "not_allowed"), not_allowed
    assert b.process.poll() is None  # SIGHUP did not stop it
