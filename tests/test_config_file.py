"""p2pd/config_file.py: the config file is checked with pydantic — an unknown key or a bad value is one error
naming the key (issue 17: ``signall = …`` was silently ignored), and every key p2pd reads is declared."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from p2pd.config import load_config
from p2pd.config_file import KEYS, validate
from p2pd.errors import ExitCode, InvalidInputError

ROOT = Path(__file__).resolve().parent.parent
PATH = Path("/home/u/.config/p2pd/config.toml")


def problem(data: dict[str, object]) -> str:
    with pytest.raises(InvalidInputError) as caught:
        validate(data, PATH)
    text = str(caught.value)
    assert text.startswith(f"config file {PATH}: ")
    return text.removeprefix(f"config file {PATH}: ")


# A file with every key, each value valid.
FULL_VALID = {"redact": True, "signal": "wss://example.org/", "web_url": "https://example.org/",
              "ice_servers": [{"urls": "stun:example.org:3478"},
                              {"urls": ["turn:example.org:3478"], "username": "u", "credential": "c"}],
              "relay_only": False, "connect_timeout": 10, "receive_max_size": 1 << 30, "min_rate": 4096,
              "rate_window": 60.0, "port": 0, "host": "127.0.0.1", "allow_remote": False,
              "cors_origins": ["http://app.example"], "accept_handoffs": True, "handoff_agent": "codex",
              "handoff_claim_timeout": 600, "partial_max_age_hours": 24, "partial_max_mb": 100,
              "outbox_max_age_hours": 24, "outbox_max_mb": 100, "accept": {"max_size": 5},
              "session_links": {"rate_per_minute": 10, "queue_max_age_hours": 1.5},
              "delegate_command": ["claude", "--resume", "{session}"]}


def test_a_full_valid_file_passes() -> None:
    data = dict(FULL_VALID)
    assert set(data) == set(KEYS)
    assert validate(data, PATH) is data
    assert validate({}, PATH) == {}


def test_unknown_keys_are_named_with_the_closest_known_one() -> None:
    assert problem({"signall": "ws://x"}) == "unknown key 'signall' (did you mean 'signal'?)"
    assert problem({"prot": 1, "redakt": True}) == ("unknown key 'prot' (did you mean 'port'?); "
                                                    "unknown key 'redakt' (did you mean 'redact'?)")
    assert problem({"colour": "blue"}).startswith("unknown key 'colour' (the keys are redact, signal, ")
    assert problem({"ice_servers": [{"urls": "stun:x", "usrname": "u"}]}) == "unknown key 'ice_servers.0.usrname'"


@pytest.mark.parametrize(("data", "said"), [
    ({"port": "8737"}, "'port' must be a valid integer, not '8737'"),
    ({"port": 70000}, "'port' must be less than or equal to 65535, not 70000"),
    ({"signal": "http://example.org"}, "'signal' must be a ws:// or wss:// URL, not 'http://example.org'"),
    ({"redact": "yes"}, "'redact' must be a valid boolean, not 'yes'"),
    ({"connect_timeout": 0}, "'connect_timeout' must be greater than 0, not 0"),
    ({"cors_origins": ["*"]}, "'cors_origins.0' must be origins such as https://app.example (no '*'), not '*'"),
    ({"handoff_agent": "cursor"}, "'handoff_agent' must be one of claude-code, codex, not 'cursor'"),
    ({"ice_servers": [{"urls": []}]}, "'ice_servers.0.urls' must have at least 1 item, not []"),
    ({"ice_servers": [{"username": "u"}]}, "'ice_servers.0.urls' is required"),
    ({"outbox_max_mb": -1}, "'outbox_max_mb' must be greater than 0, not -1"),
])
def test_bad_values_name_the_key_and_the_rule(data: dict[str, object], said: str) -> None:
    assert problem(data) == said


def test_every_key_p2pd_reads_or_documents_is_declared() -> None:
    read = set()
    for path in (ROOT / "p2pd").rglob("*.py"):
        read |= set(re.findall(r'(?:load_config\(\)|\bconf)\.get\(\s*"([a-z_]+)"', path.read_text(encoding="utf-8")))
    documented = set(re.findall(r"^\| `([a-z_]+)`", (ROOT / "p2pd" / "config.py").read_text(encoding="utf-8"),
                                re.MULTILINE))
    assert read and documented
    assert (read | documented) - set(KEYS) == set()


def test_load_config_checks_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    monkeypatch.setenv("P2PD_CONFIG", str(config))
    config.write_text('signal = "ws://example.org:8765"\n[accept]\nmax_size = 10\n')
    assert load_config() == {"signal": "ws://example.org:8765", "accept": {"max_size": 10}}
    config.write_text('signall = "ws://example.org:8765"\n')
    with pytest.raises(InvalidInputError, match="did you mean 'signal'"):
        load_config()


def test_a_typo_in_the_config_stops_the_command(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('redakt = true\n')
    r = subprocess.run([sys.executable, "-m", "p2pd", "export", str(tmp_path / "missing.jsonl")],
                       capture_output=True, text=True, timeout=60,
                       env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "P2PD_CONFIG": str(config),
                            "PYTHONPATH": str(ROOT)})
    assert r.returncode == ExitCode.INVALID_INPUT, r.stderr
    assert f"config file {config}: unknown key 'redakt' (did you mean 'redact'?)" in " ".join(r.stderr.split())


def test_the_delegate_command_table_has_an_entry_per_import_target() -> None:
    from p2pd.agents.registry import import_targets
    from p2pd.config_file import DelegateCommands

    assert tuple(f.alias or name for name, f in DelegateCommands.model_fields.items()) == import_targets()
