"""p2pd/cli/devices.py without a daemon: the device book listed, renamed and cut from the command line, names
(chosen by the other device) printed as written; ``links`` needs the daemon."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p2pd.cli.main import main
from p2pd.daemon.devices import DeviceBook
from p2pd.errors import ExitCode


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "p2pd-home"
    monkeypatch.setenv("P2PD_HOME", str(root))
    monkeypatch.setenv("COLUMNS", "250")
    return root


def test_devices_list_rename_remove(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["devices"]) == ExitCode.OK
    assert capsys.readouterr().err.startswith("No paired devices.")
    device = DeviceBook(home).add(public_key=bytes(range(32)), name="Lap [/] top [bold]", secret=b"s" * 32)
    assert main(["devices"]) == ExitCode.OK
    table = capsys.readouterr().out
    assert "Lap [/] top [bold]" in table and device.device_id in table and "daemon not running" in table
    assert main(["devices", "--json"]) == ExitCode.OK
    assert json.loads(capsys.readouterr().out)[0]["name"] == "Lap [/] top [bold]"
    assert main(["devices", "rename", device.device_id, "Desk", "[x]"]) == ExitCode.OK
    assert capsys.readouterr().err == f"Renamed {device.device_id} to Desk [x].\n"
    assert DeviceBook(home).get(device.device_id).name == "Desk [x]"
    with pytest.raises(SystemExit) as usage:  # a usage error, as argparse reports them: exit 2
        main(["devices", "rename", "Desk [x]"])
    assert usage.value.code == ExitCode.USAGE
    assert "rename needs DEVICE and NEW-NAME" in capsys.readouterr().err
    assert main(["devices", "remove", "Desk [x]"]) == ExitCode.OK
    assert capsys.readouterr().err.startswith(f"Removed Desk [x] ({device.device_id}); its key")
    assert DeviceBook(home).devices == {}
    assert main(["devices", "remove", "Desk [x]"]) == ExitCode.NOT_FOUND


def test_this_devices_name(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["devices", "name", "My", "box"]) == ExitCode.OK
    name, device_id, fingerprint = capsys.readouterr().out.rstrip("\n").split("\t")
    assert name == "My box" and device_id and fingerprint


def test_links_need_the_daemon(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["links"]) == ExitCode.ERROR
    assert "daemon is not running" in capsys.readouterr().err
