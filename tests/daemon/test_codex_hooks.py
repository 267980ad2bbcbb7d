"""p2pd's entries in Codex's hooks.json and Codex's trust in them; Codex's hook input; a rollout's last turn.

The trust hash itself is checked against the real Codex in test_codex_session_links.py (Codex runs the hooks only
when it matches)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from p2pd.daemon import codex_hooks
from p2pd.daemon.hook_input import CLAUDE_CODE, CODEX, parse
from p2pd.daemon.turn_output import last_turn
from p2pd.errors import InvalidInputError

USER_CONFIG = 'model = "x"\n\n[projects."/work"]\ntrust_level = "trusted"\n'
THEIRS = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
                    "PreToolUse": [{"matcher": "^Bash$", "hooks": [{"type": "command", "command": "lint"}]}]}}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "config.toml").write_text(USER_CONFIG)
    (tmp_path / "hooks.json").write_text(json.dumps(THEIRS))
    return tmp_path


def test_install_is_idempotent_keeps_theirs_and_trusts_only_ours(home: Path) -> None:
    hooks = home / "hooks.json"
    assert codex_hooks.install_codex(hooks) == (True, 4)
    data = json.loads(hooks.read_text())
    assert data["hooks"]["Stop"][0] == THEIRS["hooks"]["Stop"][0] and data["hooks"]["PreToolUse"] == \
        THEIRS["hooks"]["PreToolUse"]
    ours = codex_hooks.our_hooks(hooks)
    assert [h.event for h in ours] == ["SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"]
    assert ours[2].key == f"{hooks}:stop:1:0"  # after their Stop group: Codex's keys are positional
    assert data["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] == 3  # what Codex allows a SessionEnd hook
    config = tomllib.loads((home / "config.toml").read_text())
    assert config["projects"] == {"/work": {"trust_level": "trusted"}} and config["model"] == "x"
    assert {k: v["trusted_hash"] for k, v in config["hooks"]["state"].items()} == {h.key: h.hash for h in ours}
    assert [s for _, s in codex_hooks.status(hooks)] == ["trusted"] * 4
    before = (hooks.read_bytes(), (home / "config.toml").read_bytes())
    assert codex_hooks.install_codex(hooks) == (False, 0)
    assert (hooks.read_bytes(), (home / "config.toml").read_bytes()) == before

    assert codex_hooks.uninstall_codex(hooks) == 4
    assert json.loads(hooks.read_text()) == THEIRS
    assert (home / "config.toml").read_text() == USER_CONFIG


def test_trust_hash_follows_the_definition(home: Path) -> None:
    h = {"type": "command", "command": "p2pd hook stop", "timeout": 15}
    base = codex_hooks.trust_hash("Stop", None, h)
    assert base.startswith("sha256:") and len(base) == 71
    assert codex_hooks.trust_hash("Stop", "x", h) == base  # Codex ignores a Stop matcher
    assert codex_hooks.trust_hash("Stop", None, {**h, "timeout": 16}) != base
    assert codex_hooks.trust_hash("SessionStart", None, h) != base
    assert codex_hooks.trust_hash("SessionStart", "startup", h) != codex_hooks.trust_hash("SessionStart", None, h)


def test_a_changed_hook_shows_modified_and_their_own_trust_table_is_left_alone(home: Path) -> None:
    hooks = home / "hooks.json"
    codex_hooks.install_codex(hooks, record_trust=False)
    assert [s for _, s in codex_hooks.status(hooks)] == ["untrusted"] * 4
    stop = next(h for h in codex_hooks.our_hooks(hooks) if h.event == "Stop")
    mine = f'\n[hooks.state.{json.dumps(stop.key)}]\nenabled = true\ntrusted_hash = "sha256:{"0" * 64}"\n'
    (home / "config.toml").write_text(USER_CONFIG + mine)
    assert codex_hooks.install_codex(hooks) == (False, 3)
    assert (home / "config.toml").read_text().count(mine) == 1  # theirs: untouched
    assert dict((h.event, s) for h, s in codex_hooks.status(hooks))["Stop"] == "modified"
    codex_hooks.uninstall_codex(hooks)
    assert (home / "config.toml").read_text() == USER_CONFIG + mine


@pytest.mark.parametrize("config", ["model = \n", 'hooks = { state = {} }\n'])
def test_a_config_that_cannot_take_the_trust_is_refused_untouched(home: Path, config: str) -> None:
    (home / "config.toml").write_text(config)
    with pytest.raises(InvalidInputError):
        codex_hooks.install_codex(home / "hooks.json")
    assert (home / "config.toml").read_text() == config
    if config.startswith("model"):  # checked before hooks.json is touched
        assert json.loads((home / "hooks.json").read_text()) == THEIRS


def test_features_off_is_reported(home: Path) -> None:
    hooks = home / "hooks.json"
    codex_hooks.install_codex(hooks)
    (home / "config.toml").write_text((home / "config.toml").read_text() + "\n[features]\nhooks = false\n")
    assert {s for _, s in codex_hooks.status(hooks)} == {"hooks disabled"}


CODEX_STOP = {"session_id": "01a21665-f931", "turn_id": "t1", "transcript_path": "/h/.codex/sessions/2026/11/26/"
              "rollout-2026-11-26T05-48-31-01a21665-f931.jsonl", "cwd": "/w", "hook_event_name": "Stop",
              "model": "m", "permission_mode": "bypassPermissions", "stop_hook_active": False,
              "last_assistant_message": "done"}


def test_codex_input_is_told_apart_by_its_fields() -> None:
    got = parse(json.dumps(CODEX_STOP), "stop")
    assert got.agent == CODEX and got.record == {"session_id": "01a21665-f931", "cwd": "/w", "last_assistant_message":
                                                 "done", "transcript_path": CODEX_STOP["transcript_path"]}
    start = {"session_id": "s", "transcript_path": None, "cwd": "/w", "hook_event_name": "SessionStart",
             "model": "m", "permission_mode": "default", "source": "startup"}  # an ephemeral Codex session
    assert parse(json.dumps(start), "session-start").agent == CODEX
    assert parse(json.dumps(start), "session-start").record == {"session_id": "s", "cwd": "/w", "source": "startup"}
    claude = {"session_id": "s", "transcript_path": "/h/.claude/projects/-w/s.jsonl", "cwd": "/w",
              "hook_event_name": "Stop", "stop_hook_active": False}
    assert parse(json.dumps(claude), "stop").agent == CLAUDE_CODE


@pytest.mark.parametrize("raw", ["not json", "[]", json.dumps({"cwd": "/w"}), json.dumps({"session_id": ""}),
                                 json.dumps({"session_id": 5}), json.dumps({**CODEX_STOP, "cwd": ["/w"]}),
                                 json.dumps({**CODEX_STOP, "session_id": "x" * 201}),
                                 json.dumps({**CODEX_STOP, "hook_event_name": "SessionEnd"})])
def test_bad_hook_input_is_refused(raw: str) -> None:
    with pytest.raises(InvalidInputError):
        parse(raw, "stop")


def _rollout(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _msg(role: str, text: str) -> dict[str, object]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "response_item", "payload": {"type": "message", "role": role,
                                                 "content": [{"type": kind, "text": text}]}}


def test_a_codex_rollouts_last_turn(tmp_path: Path) -> None:
    meta = {"type": "session_meta", "payload": {"id": "x"}}
    old = [meta, _msg("user", "first"), _msg("assistant", "old answer"),
           {"type": "event_msg", "payload": {"type": "task_complete", "last_agent_message": "old answer"}}]
    unfinished = _rollout(tmp_path / "a.jsonl", [*old, _msg("user", "second"), _msg("assistant", "part one"),
                                                 _msg("assistant", "part two")])
    assert last_turn(unfinished) == "part one\n\npart two"  # not the earlier turn's summary
    done = _rollout(tmp_path / "b.jsonl", [*old, _msg("user", "second"), _msg("assistant", "draft"),
                                           {"type": "event_msg", "payload": {"type": "task_complete",
                                                                             "last_agent_message": "final"}}])
    assert last_turn(done) == "final"
    assert last_turn(_rollout(tmp_path / "c.jsonl", [meta, _msg("user", "only a prompt")])) == ""
