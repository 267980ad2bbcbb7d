"""p2pd/config_quick.py: the msgspec quick check of the config file never takes what the pydantic model refuses,
declares the model's keys, and lets a valid file load without importing pydantic."""

from __future__ import annotations

import datetime
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from p2pd.config_file import ConfigFile, DelegateCommands, IceServer, SessionLinksTable, validate
from p2pd.config_quick import QuickConfig, QuickDelegateCommands, QuickIceServer, QuickSessionLinks, fits
from p2pd.errors import InvalidInputError
from tests.seeds import seeded
from tests.test_config_file import FULL_VALID

ROOT = Path(__file__).resolve().parent.parent
PATH = Path("/home/u/.config/p2pd/config.toml")
FULL = FULL_VALID


def _model_takes(data: dict[str, Any]) -> bool:
    try:
        validate(data, PATH)
    except InvalidInputError:
        return False
    return True


@pytest.mark.parametrize(("struct", "model"), [(QuickConfig, ConfigFile), (QuickIceServer, IceServer),
                                               (QuickSessionLinks, SessionLinksTable),
                                               (QuickDelegateCommands, DelegateCommands)])
def test_the_structs_declare_the_models_keys(struct: Any, model: Any) -> None:
    """A key added to the model and not here would make every file using it "not sure" (slow, still right)."""
    assert [f.encode_name for f in msgspec.structs.fields(struct)] == [
        f.alias or name for name, f in model.model_fields.items()]


def test_the_usual_files_fit() -> None:
    assert fits(FULL) and _model_takes(FULL)
    assert fits({}) and fits({"signal": "ws://127.0.0.1:8765/"}) and fits({"delegate_command": "claude -r x"})


# Values per key, good and bad for the model (types, bounds, patterns, lengths, NaN and infinities, what TOML
# gives that is no JSON: dates); a file is a few keys with one of them each, sometimes a nested mutation.
_ANY = [True, False, 0, 1, -1, 0.0, 1.5, -0.5, math.inf, -math.inf, math.nan, 1 << 40, (1 << 40) + 1, 70000,
        65535, 3600, 3600.0001, 0.1, 0.09, 86400, 86401, "", "x", "yes", "8737", "ws://x", "wss://h/p",
        "ws://", "ws://a b", "ws://x\n", "wss://ok\u00a0", "wss://ünï", "ws://a\x1cb", "http://x", "https://x",
        "https://x\n", "*", "http://a*", "codex", "claude-code", "cursor", "stun:x", [], [""], ["x"], ["*"],
        ["x", 1], [1], {}, {"urls": "stun:x"}, {"urls": []}, {"urls": ["a"], "username": 1},
        {"urls": "a", "usrname": "u"}, {"username": "u"}, {"max_size": 5}, {"rate_per_minute": 0},
        {"rate_per_minute": 100_000}, {"queue_max_age_hours": 0}, {"queue_max_age_hours": math.inf},
        {"backlog": 1}, {"codex": ["codex", "exec"]}, {"claude-code": "claude -p", "codex": "codex"},
        {"claude_code": ["x"]}, {"cursor": ["x"]}, {"codex": []}, {"codex": [""]}, {"codex": 1},
        datetime.date(2026, 1, 1), datetime.datetime(2026, 1, 1, 12), datetime.time(1, 2)]


def _value(rng: random.Random) -> Any:
    value = rng.choice(_ANY)
    if rng.random() < 0.15:  # a list of servers or of strings, sometimes with a bad item
        value = [rng.choice(_ANY) for _ in range(rng.randint(1, 3))]
    return value


def test_it_never_takes_what_the_model_refuses() -> None:
    seed, rng = seeded()
    keys = [*ConfigFile.model_fields, "signall", "colour"]
    fitted = refused = 0
    for _ in range(6000):
        data = {rng.choice(keys): _value(rng) for _ in range(rng.randint(1, 3))}
        if fits(data):
            fitted += 1
            assert _model_takes(data), f"seed {seed}: the quick check took {data!r}, the model refuses it"
        else:
            refused += 1
    assert fitted > 100 and refused > 1000, (seed, fitted, refused)  # (both ways exercised)


@pytest.mark.parametrize("data", [
    {"port": "8737"}, {"port": 70000}, {"port": True}, {"signal": "http://example.org"}, {"signal": "ws://x\n"},
    {"redact": "yes"}, {"connect_timeout": 0}, {"connect_timeout": math.nan}, {"cors_origins": ["*"]},
    {"handoff_agent": "cursor"}, {"ice_servers": [{"urls": []}]}, {"ice_servers": [{"username": "u"}]},
    {"outbox_max_mb": -1}, {"signall": "ws://x"}, {"session_links": {"rate_per_minute": 0}},
    {"delegate_command": []}, {"delegate_command": [""]}, {"receive_max_size": 1.5}])
def test_what_the_model_refuses_does_not_fit(data: dict[str, Any]) -> None:
    assert not _model_takes(data)
    assert not fits(data)


def test_a_valid_file_loads_without_pydantic(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('signal = "wss://signal.example/"\nconnect_timeout = 20\n[session_links]\nrate_per_minute = 5\n')
    code = ("import json, sys; from p2pd.config import load_config; "
            "print(json.dumps([load_config(), 'pydantic' in sys.modules]))")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "P2PD_CONFIG": str(config)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [{"signal": "wss://signal.example/", "connect_timeout": 20,
                                     "session_links": {"rate_per_minute": 5}}, False]
    config.write_text('signall = "wss://signal.example/"\n')  # a typo: the model's error, naming the key
    r = subprocess.run([sys.executable, "-m", "p2pd", "devices"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode != 0 and "unknown key 'signall' (did you mean 'signal'?)" in r.stderr, r.stderr
