"""Importing a conversation into Claude Code so that ``claude --resume <id>`` opens it on this machine.

Rules (research: shared notes formats.md §1.9), each covered by a test:

1. The file is ``<config>/projects/<encoded realpath(cwd)>/<new uuid>.jsonl``; ``cwd`` defaults to the current
   directory and is written into every line.
2. ``sessionId`` equals the file name on every line (subagent files included).
3. The active branch is written as a strictly linear chain: fresh uuids, the first line's ``parentUuid`` is null
   and every other line's is the line before it. A compaction boundary stays a root, as Claude Code writes it,
   with ``logicalParentUuid`` pointing at the line before it. Side branches, progress rows and other
   bookkeeping lines are left out, and so is a user/assistant line without a readable ``message.content``
   (it stays in the document; Claude Code would fail on it).
4. Every ``tool_use`` is followed by its ``tool_result`` before the next assistant turn. A call with no recorded
   result gets an explicit error result (the API refuses an unanswered call); a result with no call is dropped.
5. Thinking blocks are dropped (their signatures are tied to the account that made them) unless the caller
   says the target is the same account.
6. Subagent transcripts (with their ``.meta.json``) and spilled tool results are copied beside the session.
7. Nothing existing is overwritten, and nothing is written outside the projects folder.
8. The exact resume command is returned for printing.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shlex
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from p2pd.agents.claude_code.paths import config_dir, project_dir_for, projects_dir
from p2pd.agents.claude_code.restore import restore_message_lines, source_lines
from p2pd.agents.claude_code.synthesize import synthesize_lines
from p2pd.agents.claude_code.transcript import active_chain, message_problem
from p2pd.agents.jsonl import SourceLine, dumps_line, jsonl_bytes, jsonl_line
from p2pd.agents.spec import Note, NoteKind, missing_folder_note
from p2pd.agents.spooled import DocumentSource, MemorySource
from p2pd.conversation.model import ConversationDocument, Message
from p2pd.errors import ConflictError, InvalidInputError, storage_error
from p2pd.support import staging
from p2pd.support.atomic import fsync_dir
from p2pd.support.text import counted

THINKING_TYPES = {"thinking", "redacted_thinking"}
IMPORT_STAGE_PREFIX = ".p2pd-import-"  # the staging folder beside the session (swept once stale)
_SAFE_REL = re.compile(r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")
MISSING_RESULT = "[p2pd: no result was recorded for this tool call in the original conversation]"


@dataclass
class ImportResult:
    session_id: str
    path: Path
    cwd: str
    lines: int
    subagent_files: list[Path] = field(default_factory=list)
    tool_result_files: list[Path] = field(default_factory=list)
    dropped_thinking: int = 0
    synthesized_results: int = 0
    dropped_orphan_results: int = 0
    dropped_malformed: int = 0
    warnings: list[str] = field(default_factory=list)
    dry_run: bool = False

    @property
    def resume_command(self) -> str:
        return f"cd {shlex.quote(self.cwd)} && claude --resume {self.session_id}"


def linearize_chain(chain: Iterable[dict[str, Any]], session_id: str, cwd: str, *, keep_thinking: bool,
                    result: ImportResult | None = None) -> Iterator[dict[str, Any]]:
    """The lines of an active chain (root first), one by one, as a resumable, strictly linear session: fresh
    uuids, each line's parent the one before it, this session and this cwd on every line. A
    ``sourceToolAssistantUUID`` is mapped to the new id of the line it names (always an earlier one), or
    dropped."""
    stats = result or ImportResult(session_id, Path(), cwd, 0)
    pending: dict[str, dict[str, Any]] = {}  # tool_use id -> the assistant line that asked
    id_map: dict[str, str] = {}
    last_response_id: str | None = None
    prev: str | None = None

    def emit(line: dict[str, Any]) -> dict[str, Any]:
        nonlocal prev
        old = line.get("uuid")
        new = str(uuid.uuid4())
        if isinstance(old, str):
            id_map[old] = new
        line["uuid"] = new
        line["sessionId"] = session_id
        line["cwd"] = cwd
        line["isSidechain"] = False
        if line.get("type") == "system" and line.get("subtype") == "compact_boundary":
            line["parentUuid"] = None
            if prev is not None:
                line["logicalParentUuid"] = prev
            else:
                line.pop("logicalParentUuid", None)
        else:
            line["parentUuid"] = prev
        src = line.get("sourceToolAssistantUUID")
        if isinstance(src, str):
            if src in id_map:
                line["sourceToolAssistantUUID"] = id_map[src]
            else:
                line.pop("sourceToolAssistantUUID")
        prev = new
        return line

    def flush_pending() -> Iterator[dict[str, Any]]:
        if not pending:
            return
        blocks = [{"type": "tool_result", "tool_use_id": tid, "content": MISSING_RESULT, "is_error": True}
                  for tid in pending]
        stats.synthesized_results += len(blocks)
        template = next(iter(pending.values()))
        pending.clear()
        yield emit(_new_line(template, "user", {"role": "user", "content": blocks}))

    for obj in chain:
        ltype = obj.get("type")
        if ltype == "system" and obj.get("subtype") == "compact_boundary":
            yield from flush_pending()
            yield emit(dict(obj))
            continue
        if ltype not in ("user", "assistant"):
            continue
        if message_problem(obj) is not None:
            stats.dropped_malformed += 1  # kept in the document; Claude Code cannot read it back
            continue
        line = dict(obj)  # (only the line's and its message's own keys change: no deep copy)
        msg = line["message"] = dict(line["message"])
        content = msg.get("content")
        if ltype == "assistant":
            mid = msg.get("id")
            if pending and mid != last_response_id:
                yield from flush_pending()
            last_response_id = mid if isinstance(mid, str) else None
            if isinstance(content, list):
                kept = []
                for b in content:
                    if isinstance(b, dict) and b.get("type") in THINKING_TYPES and not keep_thinking:
                        stats.dropped_thinking += 1
                        continue
                    if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                        pending[b["id"]] = line
                    kept.append(b)
                if not kept:
                    continue
                msg["content"] = kept
        else:
            if isinstance(content, list):
                kept = []
                for b in content:
                    if isinstance(b, dict) and b.get("type") == "tool_result":
                        tid = b.get("tool_use_id")
                        if tid not in pending:
                            stats.dropped_orphan_results += 1
                            continue
                        del pending[tid]
                    kept.append(b)
                if not kept:
                    continue
                has_results = any(isinstance(b, dict) and b.get("type") == "tool_result" for b in kept)
                if not has_results:
                    yield from flush_pending()
                msg["content"] = kept
            else:
                yield from flush_pending()
        yield emit(line)
    yield from flush_pending()


def _new_line(template: dict[str, Any], ltype: str, message: dict[str, Any]) -> dict[str, Any]:
    keys = ("isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch")
    line: dict[str, Any] = {k: template[k] for k in keys if k in template}
    line.update({"type": ltype, "message": message, "uuid": "", "parentUuid": None,
                 "timestamp": template.get("timestamp", "")})
    return line


def _rewrite_sidecar(lines: Iterable[Any], session_id: str, cwd: str, keep_thinking: bool) -> Iterator[Any]:
    for value in lines:
        if isinstance(value, dict):
            value = dict(value)  # (only its own keys and its message's content change: no deep copy)
            if "sessionId" in value:
                value["sessionId"] = session_id
            if "cwd" in value:
                value["cwd"] = cwd
            msg = value.get("message")
            if not keep_thinking and isinstance(msg, dict) and isinstance(msg.get("content"), list):
                kept = [b for b in msg["content"] if not (isinstance(b, dict) and b.get("type") in THINKING_TYPES)]
                value["message"] = {**msg, "content": kept}
        yield value


def _inside(base: Path, rel: str) -> Path:
    if not _SAFE_REL.match(rel) or any(part in ("..", ".") for part in rel.split("/")):
        raise InvalidInputError(f"refusing unsafe file name in conversation: {rel!r}")
    target = (base / rel).resolve()
    if not target.is_relative_to(base.resolve()):
        raise InvalidInputError(f"refusing to write outside the session folder: {rel!r}")
    return target


def restore_lines(message: Message) -> list[tuple[int, dict[str, Any]]] | None:
    """A message's Claude Code source lines, or None when it carries none."""
    return restore_message_lines(message) if source_lines(message) is not None else None


def import_to_claude_code(doc: ConversationDocument, **kwargs: Any) -> ImportResult:
    """Import a document held in memory (see :func:`import_source` for the arguments)."""
    return import_source(MemorySource(doc, restore_lines), **kwargs)


def import_source(src: DocumentSource, *, cwd: str | os.PathLike[str] | None = None, config: Path | None = None,
                  same_account: bool = False, dry_run: bool = False,
                  session_id: str | None = None) -> ImportResult:
    """Import a conversation read from ``src`` (in memory, or spooled from a stream): the session's files are
    made one line at a time into the staging folder, so memory holds the active chain's index, not the
    session."""
    doc = src.document
    target_cwd = os.path.realpath(os.fspath(cwd) if cwd is not None else os.getcwd())
    cfg = config or config_dir()
    projects = (cfg / "projects").resolve() if cfg.exists() else (cfg / "projects")
    new_id = session_id or str(uuid.uuid4())
    project_dir = project_dir_for(target_cwd, cfg)
    path = project_dir / f"{new_id}.jsonl"
    if not path.resolve().is_relative_to(projects.resolve()):
        raise InvalidInputError(f"refusing to write outside {projects}: {path}")
    if path.exists() or (project_dir / new_id).exists():
        raise ConflictError(f"a session {new_id} already exists at {path}; not overwriting it")
    result = ImportResult(new_id, path, target_cwd, 0, dry_run=dry_run)

    if src.restored:
        lines = linearize_chain(chain_lines(src), new_id, target_cwd, keep_thinking=same_account, result=result)
    else:
        synthesized = synthesize_lines(src.messages(), src.message_count(), doc.origin.git_branch, new_id,
                                       target_cwd)
        lines = linearize_chain(synthesized, new_id, target_cwd, keep_thinking=same_account, result=result)
        result.warnings.append(Note(NoteKind.REBUILT, f"this conversation comes from {doc.origin.platform}: its "
                                                      "turns were rebuilt as Claude Code messages"))
    writes: list[tuple[Path, Iterable[bytes]]] = [(path, _main_file(lines, result))]
    session_folder = project_dir / new_id
    for i, sub in enumerate(src.subagents):
        target = _inside(session_folder, f"subagents/{sub.file_name}")
        values = (v for _, v in src.subagent_lines(i))
        writes.append((target, jsonl_bytes(_rewrite_sidecar(values, new_id, target_cwd, same_account))))
        result.subagent_files.append(target)
        if sub.meta is not None:
            writes.append((target.with_name(target.stem + ".meta.json"), [dumps_line(sub.meta).encode("utf-8")]))
    files = _tool_results(src, session_folder, result)

    if dry_run:
        for _, data in writes:
            for _ in data:
                pass
        for _ in files:
            pass
    else:
        try:
            _write_staged(project_dir, new_id, writes, files)
        except OSError as exc:
            raise storage_error(exc, f"the session into {project_dir}") from None
    _warn(result, tool_results=bool(result.tool_result_files))
    return result


def chain_lines(src: DocumentSource) -> Iterator[dict[str, Any]]:
    """The active chain's lines, root first: an index of the main lines (only the keys the chain reads) picks
    them, then they are read again in line order (the chain is in line order)."""
    from p2pd.agents.claude_code.streamed import light_line

    index = [light_line(SourceLine(n, "", value=v)) for n, v in src.main_lines() if isinstance(v, dict)]
    chain = set(active_chain(index))
    del index
    taken: set[int] = set()
    for n, v in src.main_lines():
        if n in chain and isinstance(v, dict) and n not in taken:
            taken.add(n)
            yield v


def _main_file(lines: Iterable[dict[str, Any]], result: ImportResult) -> Iterator[bytes]:
    for line in lines:
        result.lines += 1
        yield jsonl_line(line)
    if not result.lines:
        raise InvalidInputError("the conversation has no messages to import")


def _tool_results(src: DocumentSource, session_folder: Path, result: ImportResult) -> Iterator[tuple[Path, bytes]]:
    for tr in src.tool_results():
        target = _inside(session_folder, f"tool-results/{tr.name}")
        result.tool_result_files.append(target)
        yield target, tr.text.encode("utf-8") if tr.text is not None else base64.b64decode(tr.raw or "")


def _warn(result: ImportResult, *, tool_results: bool) -> None:
    if result.dropped_thinking:
        dropped = counted(result.dropped_thinking, "thinking block")
        result.warnings.append(Note(NoteKind.DROPPED, f"dropped {dropped} (signed by the original account; use "
                                                      "--same-account to keep them)"))
    if result.dropped_malformed:
        left = counted(result.dropped_malformed, "user/assistant line")
        result.warnings.append(Note(NoteKind.REPAIRED, f"left out {left} without a readable message (they stay in "
                                                       "the document)"))
    if result.synthesized_results:
        calls = counted(result.synthesized_results, "tool call")
        result.warnings.append(Note(NoteKind.REPAIRED, f"{calls} had no recorded result; they were answered with "
                                                       "an explicit error"))
    if tool_results:
        result.warnings.append(Note(NoteKind.LOCATION, "tool outputs saved to files are copied, but the "
                                                       "conversation still names them by their path on the "
                                                       "original machine"))
    missing = missing_folder_note(result.cwd)
    if missing is not None:
        result.warnings.append(missing)


def _write_file(staged: Path, data: Iterable[bytes]) -> None:
    staged.parent.mkdir(parents=True, exist_ok=True)
    with open(staged, "xb") as fh:
        for piece in data:
            fh.write(piece)
        fh.flush()
        os.fsync(fh.fileno())


def _write_staged(project_dir: Path, new_id: str, writes: list[tuple[Path, Iterable[bytes]]],
                  files: Iterable[tuple[Path, bytes]] = ()) -> None:
    """Write the whole session tree (main file, subagents, tool results; each made piece by piece as it is
    written) in a staging folder beside its place,
    then move it in: the session folder first, the main file last, so Claude Code never sees a session whose
    main file is there but whose subagents are not. A failure (or a kill) leaves only the staging folder,
    which is removed on failure."""
    created = not project_dir.exists()
    project_dir.mkdir(parents=True, exist_ok=True)
    staging.sweep(project_dir, f"{IMPORT_STAGE_PREFIX}*")  # what killed imports left here
    stage = Path(tempfile.mkdtemp(prefix=f"{IMPORT_STAGE_PREFIX}{new_id}.", dir=project_dir))
    held = staging.hold(stage)
    main_path = project_dir / f"{new_id}.jsonl"
    folder = project_dir / new_id
    moved_folder = False
    try:
        for target, data in writes:
            _write_file(stage / target.relative_to(project_dir), data)
        for target, content in files:
            _write_file(stage / target.relative_to(project_dir), [content])
        if (stage / new_id).exists():
            os.rename(stage / new_id, folder)  # fails if the folder appeared meanwhile
            moved_folder = True
        try:
            os.link(stage / main_path.name, main_path)  # never replaces an existing session
        except FileExistsError:
            raise ConflictError(f"a session {new_id} already exists at {main_path}; not overwriting it") from None
        fsync_dir(project_dir)
    except BaseException:
        if moved_folder:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    finally:
        os.close(held)
        shutil.rmtree(stage, ignore_errors=True)
        if created:
            with contextlib.suppress(OSError):
                project_dir.rmdir()  # only if nothing was moved in


def sweep_stale_imports(projects: Path | None = None) -> int:
    """Remove the staging folders killed imports left in Claude Code's project folders (untouched for an hour and
    not held by a live import); returns how many. Run at the daemon's start-up (and an import sweeps its own
    project folder)."""
    root = projects if projects is not None else projects_dir()
    try:
        folders = [p for p in root.iterdir() if p.is_dir() and not p.is_symlink()]
    except OSError:
        return 0
    return sum(staging.sweep(folder, f"{IMPORT_STAGE_PREFIX}*") for folder in folders)
