"""p2pd/config.py: the receive caps (receive_max_size, min_rate, rate_window) from the environment, the config
file or the transfer layer's defaults — used by ``p2pd receive`` and by the daemon."""

from __future__ import annotations

from pathlib import Path

import pytest

from p2pd.blob.container import DEFAULT_MAX_RAW_SIZE
from p2pd.config import ReceiveLimits, receive_limits
from p2pd.errors import InvalidInputError
from p2pd.transfer.receiving import MIN_RATE, RATE_WINDOW


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config.toml"
    monkeypatch.setenv("P2PD_CONFIG", str(path))
    for name in ("P2PD_RECEIVE_MAX_SIZE", "P2PD_MIN_RATE", "P2PD_RATE_WINDOW"):
        monkeypatch.delenv(name, raising=False)
    return path


def test_defaults_are_the_transfer_layers(config: Path) -> None:
    assert receive_limits() == ReceiveLimits(DEFAULT_MAX_RAW_SIZE, MIN_RATE, RATE_WINDOW)


def test_file_then_environment(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config.write_text("receive_max_size = 5000\nmin_rate = 0\nrate_window = 5.5\n")
    assert receive_limits() == ReceiveLimits(5000, 0.0, 5.5)
    monkeypatch.setenv("P2PD_MIN_RATE", "100")
    monkeypatch.setenv("P2PD_RECEIVE_MAX_SIZE", "7000")
    assert receive_limits() == ReceiveLimits(7000, 100.0, 5.5)


@pytest.mark.parametrize("text", ["receive_max_size = 0", "receive_max_size = 1.5", "receive_max_size = true",
                                  "min_rate = -1", "min_rate = 'fast'", "rate_window = 0"])
def test_bad_values_are_one_clear_error_naming_the_key(config: Path, text: str) -> None:
    config.write_text(text + "\n")
    with pytest.raises(InvalidInputError, match=text.split()[0]):
        receive_limits()


async def test_the_daemon_network_takes_the_configured_caps_and_policy(config: Path, tmp_path: Path) -> None:
    from p2pd.daemon.accept_policy import AcceptPolicy
    from p2pd.daemon.identity import load_identity
    from p2pd.daemon.network import DeviceNetwork
    from p2pd.daemon.running import RunningTransfers
    from p2pd.daemon.store import Store

    config.write_text("min_rate = 123\nrate_window = 7\nreceive_max_size = 9999\n[accept]\nask = true\n")

    class Host:
        store = Store(tmp_path / "state.sqlite3")
        running = RunningTransfers()

    net = DeviceNetwork(tmp_path, load_identity(tmp_path), Host(), "ws://127.0.0.1:9/",  # type: ignore[arg-type]
                        connect_timeout=5)
    assert net.transfers.limits == ReceiveLimits(9999, 123.0, 7.0)
    assert net.transfers.policy == AcceptPolicy(ask=True)
