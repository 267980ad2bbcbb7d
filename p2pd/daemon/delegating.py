"""Self-delegation (seed 002): an agent forks its own conversation into a new local session — in a folder it names
or in a new git worktree — gets back the new session's id and resume command, may have the agent started there,
checks on it and sends it messages.

- which conversation: the calling session as the SessionStart hook recorded it (session id → transcript), like a
  handoff (:meth:`DelegationOwner.resolve_session`);
- the fork: the conversation is written to a file by the packing process (:mod:`p2pd.daemon.packer`: never whole
  in the daemon's memory) and imported from it as a stream (:mod:`p2pd.daemon.importer`: a process of its own) as a new
  session of the same agent (Claude Code by default) whose project folder is the new one — the original is not
  touched, and it stays on this machine, so it is not redacted;
- the new folder: ``directory`` (must exist), or a worktree (:mod:`p2pd.daemon.worktree`) of the repository the
  parent works in, on a new branch; inside it the agent works in the same sub-folder as the parent;
- starting it: only when ``delegate_command`` is configured (off by default) — an argv list whose ``{session_id}``,
  ``{cwd}``, ``{prompt}``, ``{parent_session}`` and ``{delegation_id}`` are filled in, run in the new folder with
  ``P2PD_SESSION_ID``/``P2PD_PARENT_SESSION``/``P2PD_DELEGATION_ID`` set, its output in
  ``delegations/<id>.log``; the delegation is ``running`` until it exits (lifecycle: :mod:`p2pd.daemon.delegations`);
- the parent checks its status (state, exit code, whether the new session has started — its hook was seen —, the
  last turn's output) and sends it messages: they wait in the new session's inbox for its next hook.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Protocol

from p2pd.daemon.home import Home
from p2pd.daemon.importer import import_in_child
from p2pd.daemon.outbox import Source, pack_file
from p2pd.daemon.rows import new_id, now
from p2pd.daemon.session_desk import SessionDesk
from p2pd.daemon.session_tables import DelegationRow, SessionStore
from p2pd.daemon.store import Store
from p2pd.daemon.turn_output import bounded, last_turn
from p2pd.daemon.worktree import add_worktree, subfolder_in
from p2pd.errors import ConflictError, InvalidInputError, NotFoundError
from p2pd.support import staging
from p2pd.support.text import visible

PROMPT_MAX = 5000
DEFAULT_PROMPT = "You are a delegated copy of this conversation, now working in {cwd}. Carry on with the task."
POLL = 1.0  # seconds between checks of a process this daemon did not start (after a restart)


class DelegationOwner(Protocol):
    home: Home
    store: Store

    async def resolve_session(self, *, session_id: str | None, transcript_path: str | None,
                              cwd: str | None) -> tuple[str | None, str | None]: ...

    async def source(self, session: str | None = None, *, transcript_path: str | None = None,
                     redact: bool | None = None) -> Source: ...


def configured_command(agent: str | None = None) -> list[str] | None:
    """The command that starts ``agent`` on a delegated session (``None``: whether any is set): the environment's
    ``P2PD_DELEGATE_COMMAND`` (for every agent, split like a shell would), else the config file's
    ``delegate_command`` — one command for every agent, or a table of them by agent. None when off."""
    env = os.environ.get("P2PD_DELEGATE_COMMAND", "").strip()
    if env:
        return shlex.split(env)
    from p2pd.config import load_config

    value = load_config().get("delegate_command")
    if isinstance(value, dict):
        value = value.get(agent) if agent is not None else next((v for v in value.values() if v), None)
    if isinstance(value, str):
        return shlex.split(value) or None
    return [str(v) for v in value] if value else None


def _no_command(agent: str) -> InvalidInputError:
    return InvalidInputError(f"starting {agent} is off: the delegate_command table in the config file has no "
                             f"entry for {agent}; the delegation can be resumed by hand instead")


class Delegator:
    def __init__(self, owner: DelegationOwner, sessions: SessionStore, desk: SessionDesk) -> None:
        self.owner = owner
        self.sessions = sessions
        self.desk = desk
        self.tasks: dict[str, asyncio.Task[None]] = {}

    async def delegate(self, *, session_id: str | None = None, transcript_path: str | None = None,
                       cwd: str | None = None, directory: str | None = None, branch: str | None = None,
                       base: str | None = None, path: str | None = None, prompt: str = "", start: bool = False,
                       agent: str | None = None) -> dict[str, Any]:
        from p2pd.agents.registry import import_targets

        if (directory is None) == (branch is None):
            raise InvalidInputError("give exactly one of directory (an existing folder) or branch (a new worktree)")
        if len(prompt) > PROMPT_MAX:
            raise InvalidInputError(f"the prompt is longer than {PROMPT_MAX} characters")
        command = configured_command() if start else None
        if start and command is None:
            raise InvalidInputError("starting the agent is off: set delegate_command in the config file (or "
                                    "P2PD_DELEGATE_COMMAND); the delegation can be resumed by hand instead")
        sid, tpath = await self.owner.resolve_session(session_id=session_id, transcript_path=transcript_path, cwd=cwd)
        src = await self.owner.source(sid, transcript_path=tpath, redact=False)  # stays on this machine
        await asyncio.to_thread(staging.sweep, self.owner.home.root, ".p2pd-fork-*")  # killed forks' (by age)
        work = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix=".p2pd-fork-", dir=self.owner.home.root))
        held = staging.hold(work)
        try:
            packed = await pack_file(src, work / "fork.a2a.json")
            doc = packed.envelope
            to = agent or (doc.origin.platform if doc.origin.platform in import_targets() else "claude-code")
            if command is not None:  # the command for that agent (one for all, or its entry in the table)
                command = configured_command(to)
                if command is None:
                    raise _no_command(to)
            parent_cwd = Path(cwd or doc.origin.cwd or "")
            repo = worktree = None
            if branch is not None:
                if not parent_cwd.is_absolute() or not parent_cwd.is_dir():
                    raise InvalidInputError(f"the session's folder {str(parent_cwd)!r} is not a folder here; pass cwd "
                                            "(a folder inside the git repository to make the worktree of)")
                made = await asyncio.to_thread(add_worktree, parent_cwd, branch, base=base,
                                               path=Path(path) if path else None)
                repo, worktree = made.repo, made.path
                folder = subfolder_in(Path(made.path), Path(made.repo), parent_cwd)
            else:
                assert directory is not None
                folder = Path(directory).expanduser()
                if not folder.is_absolute() or not folder.is_dir():
                    raise NotFoundError(f"the folder to delegate to must exist (an absolute path): {directory}")
            result = await import_in_child(packed.path, to=to, cwd=str(folder), spool_dir=work)
        finally:
            os.close(held)
            await asyncio.to_thread(shutil.rmtree, work, True)
        ts = now()
        row = DelegationRow(id=new_id("dg"), parent_session=sid or doc.origin.session_id, parent_transcript=tpath,
                            session_id=result["session_id"], agent=to, cwd=str(folder), transcript_path=result["path"],
                            repo=repo, worktree=worktree, branch=branch, prompt=prompt,
                            resume_command=result["resume_command"], state="created", pid=None, exit_code=None,
                            reason=None, log_path=None, created_at=ts, updated_at=ts, started_at=None, ended_at=None)
        row = await asyncio.to_thread(self.sessions.add_delegation, row)
        if command is not None:
            row = await self._start(row, command)
        return await self.status(row.id)

    async def start(self, delegation_id: str, prompt: str | None = None) -> dict[str, Any]:
        command = configured_command()
        if command is None:
            raise InvalidInputError("starting the agent is off: set delegate_command in the config file (or "
                                    "P2PD_DELEGATE_COMMAND)")
        row = await asyncio.to_thread(self.sessions.get_delegation, delegation_id)
        command = configured_command(row.agent)
        if command is None:
            raise _no_command(row.agent)
        if row.state == "running":
            raise ConflictError(f"delegation {delegation_id} is running already (pid {row.pid})")
        await self._start(row, command, prompt)
        return await self.status(delegation_id)

    async def _start(self, row: DelegationRow, command: list[str], prompt: str | None = None) -> DelegationRow:
        folder = self.owner.home.root / "delegations"
        folder.mkdir(parents=True, exist_ok=True)
        log_path = folder / f"{row.id}.log"
        text = prompt or row.prompt or DEFAULT_PROMPT.format(cwd=row.cwd)
        fill = {"{session_id}": row.session_id, "{cwd}": row.cwd, "{prompt}": text,
                "{parent_session}": row.parent_session or "", "{delegation_id}": row.id}
        argv = [_fill(a, fill) for a in command]
        env = {**os.environ, "P2PD_SESSION_ID": row.session_id, "P2PD_PARENT_SESSION": row.parent_session or "",
               "P2PD_DELEGATION_ID": row.id}
        try:
            with open(log_path, "ab") as log:
                proc = await asyncio.create_subprocess_exec(*argv, cwd=row.cwd, env=env, stdin=subprocess.DEVNULL,
                                                            stdout=log, stderr=subprocess.STDOUT,
                                                            start_new_session=True)
        except OSError as exc:
            await asyncio.to_thread(self.sessions.move_delegation, row.id, "failed",
                                    reason=f"could not start {argv[0]}: {exc.strerror or exc}", log_path=str(log_path))
            raise NotFoundError(f"could not start the delegate command {argv[0]!r}: {exc.strerror or exc}") from None
        row = await asyncio.to_thread(self.sessions.move_delegation, row.id, "running", pid=proc.pid,
                                      log_path=str(log_path))
        self.tasks[row.id] = asyncio.create_task(self._watch(row.id, proc))
        return row

    async def _watch(self, delegation_id: str, proc: asyncio.subprocess.Process) -> None:
        code = await proc.wait()
        await asyncio.to_thread(self.sessions.move_delegation, delegation_id, "exited", exit_code=code)
        self.tasks.pop(delegation_id, None)

    async def recover(self) -> None:
        """At start: a delegation left running by a previous daemon is watched until its process is gone, then
        marked exited (no exit code: it was not this daemon's child)."""
        for row in await asyncio.to_thread(self.sessions.running_delegations):
            self.tasks[row.id] = asyncio.create_task(self._poll(row))

    async def _poll(self, row: DelegationRow) -> None:
        while row.pid is not None and _alive(row.pid):
            await asyncio.sleep(POLL)
        await asyncio.to_thread(self.sessions.move_delegation, row.id, "exited",
                                reason="it ended while the daemon was not watching (no exit code)")
        self.tasks.pop(row.id, None)

    async def stop(self) -> None:
        """The daemon stops: agents it started keep running (their own process group); the next start watches
        them again."""
        for task in list(self.tasks.values()):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.tasks.clear()

    async def status(self, delegation_id: str) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            row = self.sessions.get_delegation(delegation_id)
            seen = self.owner.store.hook_session(row.session_id)
            transcript = Path(row.transcript_path) if row.transcript_path else None
            stat = transcript.stat() if transcript is not None and transcript.is_file() else None
            return {**row.to_json(), "session_started": seen is not None,
                    "transcript_bytes": stat.st_size if stat else None,
                    "last_output": bounded(last_turn(transcript), 4000) if transcript is not None else "",
                    "messages_waiting": len(self.sessions.messages(row.session_id, undelivered=True))}

        return await asyncio.to_thread(work)

    async def list(self, parent_session: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        rows = await asyncio.to_thread(self.sessions.list_delegations, parent_session, limit)
        return [r.to_json() for r in rows]

    async def message(self, delegation_id: str, text: str) -> dict[str, Any]:
        """A message from the parent to the delegated session: its next hook gives it to the agent."""
        row = await asyncio.to_thread(self.sessions.get_delegation, delegation_id)
        msg = await asyncio.to_thread(self.desk.message, row.session_id, text, from_session=row.parent_session,
                                      kind="delegation", ref=row.id)
        return msg.to_json()


def delegation_context(sessions: SessionStore, session_id: str) -> str:
    """What a delegated session is told by its hooks: where it came from and how to reach its parent."""
    row = sessions.delegation_of_session(session_id)
    if row is None:
        return ""
    task = f" Its task: {visible(row.prompt, PROMPT_MAX)}" if row.prompt else ""
    where = f"git worktree {row.worktree} (branch {row.branch})" if row.worktree else row.cwd
    return (f"This session is p2pd delegation {row.id}, forked from session {row.parent_session} into {where}."
            f"{task} To report to the parent session, use the p2pd MCP tool message_session with session_id "
            f"{row.parent_session} (and from_session {row.session_id}).")


def _fill(arg: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        arg = arg.replace(key, value)
    return arg


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
