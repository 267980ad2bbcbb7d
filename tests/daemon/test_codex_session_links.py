"""Codex CLI's hooks end to end: the real ``codex exec`` (the pinned 0.169, offline against the stand-in model API)
with ``p2pd hook install --agent codex`` in its ``CODEX_HOME``, a real daemon.

Codex runs the hooks only once trusted: without the trust p2pd records, its SessionStart context never reaches the
model; with it, every ``codex exec`` session is recorded and told its p2pd session id (seen in the model request),
and in a link between two Codex sessions the Stop hook of one files its turn output for the other, whose next
session start shows it to its model; the SessionEnd hook that ends each headless run takes the session out of its
links."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.conftest import Daemon
from tests.daemon.sessions_fixtures import model_api
from tests.realclients import programs, standin

pytestmark = pytest.mark.slow
__all__ = ["model_api"]  # fixture
_SESSION = re.compile(r"^session id: (\S+)\s*$", re.M)


class Codex:
    """The real Codex CLI in the daemon's environment, pointed at the stand-in and logged in with a dummy key."""

    def __init__(self, d: Daemon, api: standin.StandIn, work: Path) -> None:
        self.d, self.api, self.work = d, api, work
        self.env = {k: v for k, v in d.env.items() if not k.startswith("OPENAI_")}
        home = Path(self.env["CODEX_HOME"])
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(f'openai_base_url = "{api.url}/v1"\n\n[projects.{json.dumps(str(work))}]\n'
                                          'trust_level = "trusted"\n', encoding="utf-8")
        login = subprocess.run([str(programs.CODEX), "login", "--with-api-key"], input="sk-standin-key", text=True,
                               env=self.env, cwd=work, capture_output=True, timeout=60)
        assert login.returncode == 0, login.stderr

    def exec(self, prompt: str, resume: str | None = None) -> tuple[str, dict[str, Any]]:
        """One headless run; returns its session id and the model request that carried ``prompt``."""
        argv = [str(programs.CODEX), "exec", "--skip-git-repo-check", *(["resume", resume] if resume else []),
                prompt]
        r = subprocess.run(argv, env=self.env, cwd=self.work, capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
        out = f"$ {' '.join(argv)}\nexit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
        assert r.returncode == 0, out
        m = _SESSION.search(r.stderr + "\n" + r.stdout)
        assert m, out
        asked = [b for b in self.api.model_requests("/v1/responses") if prompt in json.dumps(b)]
        assert asked, out
        return m.group(1), asked[-1]


@pytest.fixture
def codex_machine(tmp_path: Path, model_api: standin.StandIn) -> Iterator[tuple[Daemon, Codex]]:
    why = programs.missing()
    if why:
        pytest.skip(why)
    d = Daemon(tmp_path / "machine")
    work = tmp_path / "work"
    work.mkdir()
    codex = Codex(d, model_api, work)
    try:
        d.start()
        yield d, codex
    finally:
        d.kill()


def _status(d: Daemon) -> list[list[str]]:
    r = d.p2pd("hook", "status", "--agent", "codex")
    assert r.returncode == 0, r.stderr
    return [line.split("\t") for line in r.stdout.splitlines()]


def test_codex_runs_the_p2pd_hooks_once_trusted(codex_machine: tuple[Daemon, Codex]) -> None:
    d, codex = codex_machine
    r = d.p2pd("hook", "install", "--agent", "codex", "--no-trust")
    assert r.returncode == 0, r.stderr
    assert [row[:2] for row in _status(d)] == [["SessionStart", "untrusted"], ["UserPromptSubmit", "untrusted"],
                                               ["Stop", "untrusted"], ["SessionEnd", "untrusted"]]
    sid, asked = codex.exec("an untrusted start")
    assert "P2PD_SESSION_ID" not in json.dumps(asked)  # Codex skipped the hooks nobody approved

    r = d.p2pd("hook", "install", "--agent", "codex")  # records the trust: the same hooks now run
    assert r.returncode == 0 and "Already installed" in r.stderr, r.stderr
    assert {row[1] for row in _status(d)} == {"trusted"}
    sid, asked = codex.exec("a trusted start")
    assert f"P2PD_SESSION_ID={sid}" in json.dumps(asked)  # SessionStart's context, as a developer message


def test_two_linked_codex_sessions(codex_machine: tuple[Daemon, Codex]) -> None:
    d, codex = codex_machine
    r = d.p2pd("hook", "install", "--agent", "codex")
    assert r.returncode == 0, r.stderr
    a, asked_a = codex.exec("first turn of A")
    b, asked_b = codex.exec("first turn of B")
    assert a != b and f"P2PD_SESSION_ID={a}" in json.dumps(asked_a) and f"P2PD_SESSION_ID={b}" in json.dumps(asked_b)

    made = d.p2pd("session-links", "create", "--session", a, "--with", b, "--name", "pair", "--json")
    assert made.returncode == 0, made.stderr  # both sessions are known: their SessionStart hooks recorded them
    link = json.loads(made.stdout)

    codex.exec("second turn of A", resume=a)  # A's Stop hook: the stand-in's reply goes to B
    with d.client() as http:
        to_b = http.get(f"/sessions/{b}/messages").json()
        to_a = http.get(f"/sessions/{a}/messages").json()
        after = http.get(f"/session-links/{link['id']}").json()
    assert len(to_b) == 1 and to_b[0]["from_session"] == a and to_b[0]["ref"] == link["id"], to_b
    assert standin.REPLY in to_b[0]["text"]
    assert to_a == []  # no echo to the sender
    # the headless run ended its session: Codex's SessionEnd hook took A out of the link
    assert after["state"] == "ended" and [m["left"] for m in after["members"]] == [True, False], after

    _, asked = codex.exec("second turn of B", resume=b)  # B's model is shown A's output at its session start
    assert f"[p2pd session link {link['id']}]" in json.dumps(asked)
