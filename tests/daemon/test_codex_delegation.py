"""Self-delegation (seed 002) to the real Codex CLI end to end: a real daemon whose ``delegate_command`` is
``codex exec resume {session_id} {prompt}`` (the pinned Codex, offline against the stand-in model API, with
``p2pd hook install --agent codex`` in its ``CODEX_HOME``). An agent's MCP session delegates its Claude Code
conversation to Codex in a folder: p2pd imports the fork as a Codex session there and starts Codex on it; Codex's
own p2pd hooks tell the daemon it started and show it the delegation; a message from the parent reaches it on its
next run (UserPromptSubmit)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.conftest import SESSION_ID, Daemon
from tests.daemon.sessions_fixtures import hook, model_api, parent_transcript
from tests.daemon.test_codex_session_links import Codex
from tests.daemon.test_delegation import run_ended
from tests.daemon.test_mcp import call, mcp_client
from tests.realclients import programs, standin

pytestmark = pytest.mark.slow
__all__ = ["model_api"]  # fixture


@pytest.fixture
def codex_delegating(tmp_path: Path, model_api: standin.StandIn) -> Iterator[tuple[Daemon, Path]]:
    """A daemon that starts Codex for a delegation, and the (Codex-trusted) folder delegated to."""
    why = programs.missing()
    if why:
        pytest.skip(why)
    command = shlex.join([str(programs.CODEX), "exec", "--skip-git-repo-check", "resume", "{session_id}",
                          "{prompt}"])
    d = Daemon(tmp_path / "machine", P2PD_DELEGATE_COMMAND=command)
    work = tmp_path / "work"
    work.mkdir()
    codex = Codex(d, model_api, work)  # Codex pointed at the stand-in, logged in, the folder trusted
    d.env = codex.env  # the daemon (and so the Codex it starts) without the caller's OPENAI_* variables
    try:
        installed = d.p2pd("hook", "install", "--agent", "codex")
        assert installed.returncode == 0, installed.stderr
        d.start()
        yield d, work
    finally:
        d.kill()



def _asked(api: standin.StandIn, text: str) -> list[str]:
    return [s for s in (json.dumps(b, ensure_ascii=False) for b in api.model_requests("/v1/responses")) if text in s]


async def test_an_agent_delegates_its_claude_code_conversation_to_codex(
        codex_delegating: tuple[Daemon, Path], model_api: standin.StandIn) -> None:
    d, folder = codex_delegating
    hook(d, "session-start", session_id=SESSION_ID, transcript_path=str(parent_transcript(d)), cwd=str(folder),
         source="startup")
    async with mcp_client(d.url, d.token) as parent:
        made = await call(parent, "delegate", session_id=SESSION_ID, directory=str(folder), agent="codex",
                          prompt="Split parse() into a tokenizer and a parser.", start=True)
        child = made["session_id"]
        assert made["agent"] == "codex" and child != SESSION_ID and made["cwd"] == str(folder)
        assert made["resume_command"].endswith(f"codex resume {child}"), made
        rollouts = list((Path(d.env["CODEX_HOME"]) / "sessions").rglob(f"rollout-*{child}.jsonl"))
        assert len(rollouts) == 1, rollouts  # imported as a Codex session

        status = await run_ended(parent, made["id"], "the delegated Codex run")
        log = Path(status["log_path"]).read_text(errors="replace")
        assert status["state"] == "exited" and status["exit_code"] == 0, (status, log)
        assert status["session_started"], (status, log)  # Codex's SessionStart hook reached the daemon
        # Codex sent the model the forked conversation, then the task, with the hook's word on the delegation
        main = _asked(model_api, "Split parse() into a tokenizer")
        assert main, log
        original = [json.loads(x) for x in parent_transcript(d).read_text().splitlines() if x.strip()]
        first_user = next(x["message"]["content"] for x in original if x.get("type") == "user"
                          and isinstance(x.get("message", {}).get("content"), str))
        assert json.dumps(first_user[:60], ensure_ascii=False)[1:-1] in main[-1]
        assert made["id"] in main[-1] and SESSION_ID in main[-1]

        # the parent's message waits for the child's next run, where Codex's UserPromptSubmit hook shows it
        await call(parent, "message_delegation", delegation_id=made["id"], text="Also keep parse() as a wrapper.")
        assert (await call(parent, "get_delegation", delegation_id=made["id"]))["messages_waiting"] == 1
        await call(parent, "start_delegation", delegation_id=made["id"], prompt="Next step, please.")
        status = await run_ended(parent, made["id"], "the second run")
        assert status["exit_code"] == 0 and status["messages_waiting"] == 0, status
        later = _asked(model_api, "Next step, please.")
        assert later and "Also keep parse() as a wrapper." in later[-1]
