"""Seed 002 (self-delegation) end to end: a real daemon, a real git repository, an agent's MCP client session
(the SDK's streamable-HTTP client). The parent session is the one the SessionStart hook recorded for the folder;
``delegate`` forks it into a new git worktree, the real Claude Code program is started there on the fork (against a
stand-in model API) and is shown, through its own p2pd hooks, the parent's message; the parent checks its status."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from p2pd.errors import ExitCode
from tests.daemon.conftest import SESSION_ID, Daemon, until
from tests.daemon.sessions_fixtures import (
    claude_daemon,
    context_of,
    git,
    hook,
    make_repo,
    model_api,
    parent_transcript,
)
from tests.daemon.test_mcp import call, call_error, mcp_client
from tests.realclients import programs, standin

pytestmark = pytest.mark.slow
__all__ = ["claude_daemon", "model_api"]  # fixtures



def _texts(request: dict[str, Any]) -> str:
    return json.dumps(request.get("messages", []), ensure_ascii=False)


async def run_ended(parent: Any, delegation_id: str, what: str) -> Any:
    """The delegation's status (through the parent's MCP session) once its agent's run has ended."""
    async def ended() -> Any:
        s = await call(parent, "get_delegation", delegation_id=delegation_id)
        return s if s["state"] in ("exited", "failed") else None

    return await until(ended, what=f"{what} ended")


async def test_an_agent_delegates_to_a_new_worktree_where_claude_code_resumes_the_fork(
        claude_daemon: Daemon, model_api: standin.StandIn, tmp_path: Path) -> None:
    d = claude_daemon
    repo = make_repo(tmp_path / "proj")
    # the parent agent's session starts in src/ of the repository: the hook records it
    hook(d, "session-start", session_id=SESSION_ID, transcript_path=str(parent_transcript(d)),
         cwd=str(repo / "src"), source="startup")
    async with mcp_client(d.url, d.token) as parent:
        # without start, nothing is started; a folder or a branch, not both
        assert "[invalid_input]" in await call_error(parent, "delegate", cwd=str(repo / "src"), branch="x",
                                                     directory=str(tmp_path))
        assert "[invalid_input]" in await call_error(parent, "delegate", cwd=str(repo / "src"), branch="bad..name")
        made = await call(parent, "delegate", cwd=str(repo / "src"), branch="feature/split-parser",
                          prompt="Split parse() into a tokenizer and a parser.", start=True)
        child = made["session_id"]
        assert made["parent_session"] == SESSION_ID and child != SESSION_ID
        worktree = tmp_path / "proj-feature-split-parser"
        assert made["worktree"] == str(worktree) and made["branch"] == "feature/split-parser"
        assert made["cwd"] == str(worktree / "src")  # the same sub-folder as the parent's
        assert made["resume_command"].endswith(f"claude --resume {child}")
        listed = git("worktree", "list", "--porcelain", cwd=repo)
        assert f"worktree {worktree}\n" in listed and "branch refs/heads/feature/split-parser" in listed
        assert (worktree / "src" / "parser.py").is_file()
        # the parent's conversation was imported as a new session in the worktree's project folder
        project = Path(d.env["CLAUDE_CONFIG_DIR"]) / "projects" / programs.claude_folder(worktree / "src")
        assert (project / f"{child}.jsonl").is_file()
        # the same branch again: refused, nothing half-made
        assert "[conflict]" in await call_error(parent, "delegate", cwd=str(repo / "src"),
                                                branch="feature/split-parser")

        status = await run_ended(parent, made["id"], "the delegated Claude Code run")
        log = Path(status["log_path"]).read_text(errors="replace")
        assert status["state"] == "exited" and status["exit_code"] == 0, (status, log)
        assert status["session_started"]  # its SessionStart hook reached the daemon
        assert standin.REPLY in log
        # Claude Code sent the model the forked conversation, then the task
        requests = model_api.model_requests("/v1/messages")
        main = [r for r in requests if "Split parse() into a tokenizer" in _texts(r)]
        assert main, [(_texts(r)[:300]) for r in requests]
        original = [json.loads(x) for x in parent_transcript(d).read_text().splitlines() if x.strip()]
        first_user = next(x["message"]["content"] for x in original if x.get("type") == "user"
                          and isinstance(x.get("message", {}).get("content"), str))
        assert first_user[:60] in _texts(main[-1])
        # and its SessionStart hook told it it is a delegation of the parent
        assert made["id"] in _texts(main[-1]) and SESSION_ID in _texts(main[-1])

        # the parent messages the child: it waits in its inbox, then its next prompt's hook shows it
        sent = await call(parent, "message_delegation", delegation_id=made["id"],
                          text="Also keep parse() as a wrapper.")
        assert sent["session"] == child and sent["kind"] == "delegation"
        assert (await call(parent, "get_delegation", delegation_id=made["id"]))["messages_waiting"] == 1
        # started again with a new prompt (start_delegation): Claude Code's UserPromptSubmit hook adds the message
        await call(parent, "start_delegation", delegation_id=made["id"], prompt="Next step, please.")
        status = await run_ended(parent, made["id"], "the second run")
        assert status["exit_code"] == 0 and status["messages_waiting"] == 0
        later = [r for r in model_api.model_requests("/v1/messages") if "Next step, please." in _texts(r)]
        assert later and "Also keep parse() as a wrapper." in _texts(later[-1])
        assert standin.REPLY in status["last_output"]
        listed_d = (await call(parent, "list_delegations", parent_session=SESSION_ID))["delegations"]
        assert [x["id"] for x in listed_d] == [made["id"]]


async def test_a_delegation_to_a_folder_is_created_but_not_started_unless_configured(daemon: Daemon,
                                                                                    tmp_path: Path) -> None:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    hook(daemon, "session-start", session_id=SESSION_ID, transcript_path=str(parent_transcript(daemon)),
         cwd=str(tmp_path), source="startup")
    async with mcp_client(daemon.url, daemon.token) as parent:
        assert "delegate_command" in await call_error(parent, "delegate", session_id=SESSION_ID,
                                                      directory=str(folder), start=True)
        assert "[not_found]" in await call_error(parent, "delegate", session_id=SESSION_ID,
                                                 directory=str(tmp_path / "missing"))
        made = await call(parent, "delegate", session_id=SESSION_ID, directory=str(folder), prompt="look")
        assert made["state"] == "created" and made["cwd"] == str(folder) and not made["session_started"]
        # the new session's own SessionStart hook: it learns where it came from, and the parent's message
        await call(parent, "message_delegation", delegation_id=made["id"], text="ping from the parent")
        ctx = context_of(hook(daemon, "session-start", session_id=made["session_id"], cwd=str(folder)))
        assert made["id"] in ctx and "ping from the parent" in ctx and "message_session" in ctx
        assert (await call(parent, "get_delegation", delegation_id=made["id"]))["session_started"]
        # delivered once: the next prompt does not repeat it
        assert "ping from the parent" not in context_of(hook(daemon, "prompt-submit",
                                                             session_id=made["session_id"]))
        # the child reports back to its parent through the parent's inbox
        await call(parent, "message_session", session_id=SESSION_ID, text="done: 2 files",
                   from_session=made["session_id"])
        assert "done: 2 files" in context_of(hook(daemon, "prompt-submit", session_id=SESSION_ID))
        assert "[not_found]" in await call_error(parent, "get_delegation", delegation_id="dg_nope")
    with daemon.client() as c:
        assert c.get(f"/delegations/{made['id']}").json()["state"] == "created"
        r = c.post(f"/delegations/{made['id']}/start", json={})
        assert r.status_code == 400 and r.json()["cause"] == "invalid_input"


def test_the_cli_and_a_delegated_agent_that_outlives_its_daemon(tmp_path: Path) -> None:
    """``p2pd delegate`` / ``delegations``; the agent it starts keeps running when the daemon is killed, and the
    restarted daemon watches it until it ends (exited, no exit code: it is not its child any more)."""
    release = tmp_path / "release"
    waiter = tmp_path / "waiter.py"  # the "agent": runs until the test releases it
    waiter.write_text(f"import os, time\nwhile not os.path.exists({str(release)!r}):\n    time.sleep(0.1)\n")
    d = Daemon(tmp_path / "m", P2PD_DELEGATE_COMMAND=shlex.join([sys.executable, str(waiter), "{prompt}"]))
    folder = tmp_path / "there"
    folder.mkdir()
    try:
        d.start()
        made = d.p2pd("delegate", SESSION_ID, "--dir", str(folder), "--prompt", "wait", "--start")
        assert made.returncode == 0, made.stderr
        assert made.stdout.strip().endswith("claude --resume " + made.stdout.split()[-1])
        listed = d.p2pd("delegations", "--json")
        row = json.loads(listed.stdout)[0]
        assert row["state"] == "running" and row["cwd"] == str(folder)
        again = d.p2pd("delegations", "start", row["id"])
        assert again.returncode != 0 and "running already" in again.stderr  # one agent per delegation
        sent = d.p2pd("delegations", "message", row["id"], "hello child")
        assert sent.returncode == 0 and "hello child" in sent.stdout
        assert d.p2pd("delegations", "show").returncode == 2  # needs an id
        d.kill()
        d.start()
        release.touch()

        def ended() -> Any:
            with d.client() as c:
                r = c.get(f"/delegations/{row['id']}").json()
            return r if r["state"] == "exited" else None

        final = wait_sync(ended)
        assert final["exit_code"] is None and "not watching" in final["reason"] and final["messages_waiting"] == 1
    finally:
        d.kill()


def test_a_delegate_command_per_agent(tmp_path: Path) -> None:
    """``delegate_command`` as a table: each delegation starts the command of the agent its fork was imported
    into; an agent without an entry is refused before anything is made."""
    record = tmp_path / "record.py"  # the "agents": each writes which one it is and its arguments
    record.write_text("import json, sys\nopen(sys.argv[1], 'a').write(json.dumps(sys.argv[2:]) + '\\n')\n")
    ran = tmp_path / "ran.jsonl"
    d = Daemon(tmp_path / "m")
    (d.base / "config.toml").write_text(
        "[delegate_command]\n"
        f"claude-code = {json.dumps([sys.executable, str(record), str(ran), 'claude', '{session_id}'])}\n"
        f"codex = {json.dumps([sys.executable, str(record), str(ran), 'codex', '{session_id}', '{prompt}'])}\n")
    folder = tmp_path / "there"
    folder.mkdir()
    try:
        d.start()
        made = {}
        for agent in ("codex", "claude-code"):
            r = d.p2pd("delegate", SESSION_ID, "--dir", str(folder), "--agent", agent, "--prompt", "go", "--start",
                       "--json")
            assert r.returncode == 0, r.stderr
            made[agent] = json.loads(r.stdout)
            assert made[agent]["agent"] == agent

        def both_ran() -> Any:
            lines = ran.read_text().splitlines() if ran.exists() else []
            return lines if len(lines) == 2 else None

        runs = sorted(json.loads(x) for x in wait_sync(both_ran))
        assert runs == [["claude", made["claude-code"]["session_id"]], ["codex", made["codex"]["session_id"], "go"]]
        # a table without Codex: a delegation to Codex is refused, and none is made
        (d.base / "config.toml").write_text(
            f"[delegate_command]\nclaude-code = {json.dumps([sys.executable, str(record), str(ran), 'claude'])}\n")
        r = d.p2pd("delegate", SESSION_ID, "--dir", str(folder), "--agent", "codex", "--start")
        assert r.returncode == ExitCode.INVALID_INPUT and "no entry for codex" in r.stderr, r.stderr
        assert len(json.loads(d.p2pd("delegations", "--json").stdout)) == 2
    finally:
        d.kill()


def wait_sync(check: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not met within {timeout} s")
