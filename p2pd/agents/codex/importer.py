"""Importing a conversation into Codex CLI so that ``codex resume <id>`` can open it on this machine.

Rules, each covered by a test:

1. The file is ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<YYYY-MM-DDThh-mm-ss>-<new uuid>.jsonl`` (local time, as
   Codex names them), written atomically; nothing existing is overwritten.
2. The first line is ``session_meta`` with the new id, this machine's ``cwd`` and an RFC3339 timestamp; every line
   is ``{"timestamp", "type", "payload"}``.
3. A conversation that came from Codex is written back line for line (ids and cwd rewritten). Its ``reasoning``
   items carry ``encrypted_content`` that only the same OpenAI account can use: they are dropped unless the caller
   says the target is the same account.
4. A conversation from another agent becomes ``response_item`` messages — user text and images as ``input_text``
   / ``input_image``, the agent's words, tool calls and results as ``output_text`` (see
   :mod:`p2pd.crossagent`) — each followed by the ``event_msg`` (``user_message`` / ``agent_message``) the Codex
   UI shows when the session is resumed.
5. ``session_meta`` always names a ``model_provider`` (``openai`` when the source had none): Codex CLI 0.99 and
   later keep a session index (``$CODEX_HOME/state_5.sqlite``, which p2pd does not write) and, once it exists,
   refuse a session without one. Codex opens the session by id (``codex resume <id>`` / ``codex exec resume
   <id>``; a path is ignored by 0.169); its picker lists it only after the first resume, which the result says.
"""

from __future__ import annotations

import contextlib
import copy
import os
import shlex
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from p2pd.agents.codex import NAME
from p2pd.agents.codex.paths import codex_home
from p2pd.agents.codex.restore import codex_lines
from p2pd.agents.crossagent import CarryReport, carry_warnings, iter_turns
from p2pd.agents.jsonl import jsonl_line
from p2pd.agents.spec import Note, NoteKind, missing_folder_note
from p2pd.agents.spooled import DocumentSource, MemorySource
from p2pd.conversation.model import ConversationDocument, Message, Role
from p2pd.errors import ConflictError, InvalidInputError, storage_error
from p2pd.support.atomic import atomic_writer
from p2pd.support.text import counted

ORIGINATOR = "p2pd_import"
CLI_VERSION = "0.89.0"
INDEX_NAME = "state_5.sqlite"
# Codex >= 0.99 with a session index refuses a session_meta without a provider ("Model provider unavailable");
# the built-in provider is the one every Codex install has.
MODEL_PROVIDER = "openai"
# Providers every Codex install knows without configuration; any other name must be configured in the
# receiving Codex's config.toml (`[model_providers.NAME]`), or Codex refuses the session ("This chat uses model
# provider “local”, which is no longer configured").
BUILTIN_PROVIDERS = frozenset({"openai", "oss", "ollama", "lmstudio"})


def configured_providers(home: Path) -> frozenset[str]:
    """The providers the Codex at ``home`` can use: the built-in ones and those in its config.toml."""
    import tomllib

    names = set(BUILTIN_PROVIDERS)
    try:
        config = tomllib.loads((home / "config.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return frozenset(names)
    providers = config.get("model_providers")
    if isinstance(providers, dict):
        names.update(k for k in providers if isinstance(k, str))
    return frozenset(names)


@dataclass
class CodexImportResult:
    session_id: str
    path: Path
    cwd: str
    lines: int
    warnings: list[str] = field(default_factory=list)
    dropped_reasoning: int = 0
    dropped_malformed: int = 0
    dry_run: bool = False

    @property
    def resume_command(self) -> str:
        return f"cd {shlex.quote(self.cwd)} && codex resume {self.session_id}"

    @property
    def exec_command(self) -> str:
        """The non-interactive form, which also opens a session by id (Codex 0.169 ignores a path)."""
        return f"cd {shlex.quote(self.cwd)} && codex exec resume {self.session_id} 'continue'"


def _ts(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _line(ts: str, ltype: str, payload: Any) -> dict[str, Any]:
    return {"timestamp": ts, "type": ltype, "payload": payload}


def rewrite_codex_lines(values: Iterable[Any], session_id: str, cwd: str, *, keep_reasoning: bool,
                        result: CodexImportResult, envelope: ConversationDocument,
                        home: Path | None = None) -> Iterator[dict[str, Any]]:
    """The rollout's lines (``values``, in line order, owned by the caller: they are rewritten in place) with this
    session's id and cwd, one at a time; a ``session_meta`` line is made when the rollout does not start with one."""
    known = configured_providers(home or codex_home())
    started = False
    for value in values:
        if not isinstance(value, dict) or not isinstance(value.get("type"), str) \
                or not isinstance(value.get("payload"), dict):
            result.dropped_malformed += 1  # not written into a session Codex will read
            continue
        payload = value["payload"]
        ltype = value["type"]
        if ltype == "session_meta":
            target = payload["meta"] if isinstance(payload.get("meta"), dict) else payload
            target["id"] = session_id
            target["cwd"] = cwd
            provider = target.get("model_provider")
            if not provider:
                target["model_provider"] = MODEL_PROVIDER
            elif provider not in known:
                target["model_provider"] = MODEL_PROVIDER
                result.warnings.append(Note(NoteKind.CARRIED, f"the session used model provider {provider!r}, "
                                            f"which this Codex does not configure: it resumes with "
                                            f"{MODEL_PROVIDER!r}"))
        elif ltype == "turn_context" and "cwd" in payload:
            payload["cwd"] = cwd
        elif ltype == "response_item" and payload.get("type") == "reasoning" and not keep_reasoning:
            result.dropped_reasoning += 1
            continue
        if not started and ltype != "session_meta":
            yield _line(_ts(datetime.now(UTC)), "session_meta", _meta(session_id, cwd, envelope))
        started = True
        yield value
    if not started:
        yield _line(_ts(datetime.now(UTC)), "session_meta", _meta(session_id, cwd, envelope))


def _meta(session_id: str, cwd: str, doc: ConversationDocument) -> dict[str, Any]:
    meta: dict[str, Any] = {"id": session_id, "timestamp": _ts(datetime.now(UTC)), "cwd": cwd,
                            "originator": ORIGINATOR, "cli_version": CLI_VERSION, "source": "cli",
                            "model_provider": MODEL_PROVIDER}
    if doc.origin.git_branch:
        meta["git"] = {"branch": doc.origin.git_branch}
    return meta


def synthesize_codex_lines(doc: ConversationDocument, session_id: str, cwd: str, report: CarryReport,
                           active: Iterable[Message] | None = None) -> Iterator[dict[str, Any]]:
    """Another agent's conversation as Codex messages, one line at a time. ``active``: its active messages, when
    they are not in ``doc`` (read from a spool)."""
    now = datetime.now(UTC)
    yield _line(_ts(now), "session_meta", _meta(session_id, cwd, doc))
    for t in iter_turns(doc, report, active):
        ts = t.timestamp or _ts(now)
        text = "\n\n".join(t.texts)
        if t.role is Role.USER:
            content: list[dict[str, Any]] = [{"type": "input_text", "text": text}] if text else []
            urls = []
            for img in t.images:
                if img.data is not None and img.media_type.startswith("image/"):
                    urls.append(f"data:{img.media_type};base64,{img.data}")
                elif img.url is not None:
                    urls.append(img.url)
                else:
                    report.images_dropped += 1
            content.extend({"type": "input_image", "image_url": u} for u in urls)
            if not content:
                continue
            yield _line(ts, "response_item", {"type": "message", "role": "user", "content": content})
            yield _line(ts, "event_msg", {"type": "user_message", "message": text, "images": urls})
        else:
            if not text:  # (agent turns carry no images: iter_turns moved them to the next user turn)
                continue
            yield _line(ts, "response_item", {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": text}]})
            yield _line(ts, "event_msg", {"type": "agent_message", "message": text})


def rollout_path(home: Path, session_id: str, when: datetime) -> Path:
    local = when.astimezone()
    return (home / "sessions" / f"{local:%Y}" / f"{local:%m}" / f"{local:%d}"
            / f"rollout-{local:%Y-%m-%dT%H-%M-%S}-{session_id}.jsonl")


def import_to_codex(doc: ConversationDocument, **kwargs: Any) -> CodexImportResult:
    """Import a document held in memory (see :func:`import_source` for the arguments)."""
    return import_source(MemorySource(doc, codex_lines), **kwargs)


def import_source(src: DocumentSource, *, cwd: str | os.PathLike[str] | None = None, home: Path | None = None,
                  same_account: bool = False, dry_run: bool = False,
                  session_id: str | None = None) -> CodexImportResult:
    """Import a conversation read from ``src`` (spooled from a stream, or in memory: then its lines are copied
    before they are rewritten): the rollout is written one line at a time into a staged file,
    which becomes the session only when it is complete. A rollout p2pd exported (every message carries its Codex
    line, as ``src.restored`` says when it was read with :func:`codex_lines`) is written back line for line;
    another agent's conversation is rebuilt as readable turns."""
    doc = src.document
    target_cwd = os.path.realpath(os.fspath(cwd) if cwd is not None else os.getcwd())
    base = home or codex_home()
    new_id = session_id or str(uuid.uuid4())
    path = rollout_path(base, new_id, datetime.now(UTC))
    sessions = base / "sessions"
    # A symlinked sessions/YYYY (or MM, DD) pointing elsewhere would make us write outside Codex's own tree.
    if not path.resolve().is_relative_to(sessions.resolve()):
        raise InvalidInputError(f"refusing to write outside {sessions}: {path}")
    if path.exists():
        raise ConflictError(f"a Codex session file already exists at {path}; not overwriting it")
    result = CodexImportResult(new_id, path, target_cwd, 0, dry_run=dry_run)
    report: CarryReport | None = None
    if doc.origin.platform == NAME and src.restored:
        values = (copy.deepcopy(v) if src.shared else v for _, v in src.main_lines())
        lines = rewrite_codex_lines(values, new_id, target_cwd, keep_reasoning=same_account, result=result,
                                    envelope=doc, home=base)
    else:
        report = CarryReport(source=doc.origin.platform, target="Codex")
        active = (m for m in src.messages() if m.p2pd.get("active", True))
        lines = synthesize_codex_lines(doc, new_id, target_cwd, report, active)
    try:
        with atomic_writer(path, overwrite=False) if not dry_run else _discard() as out:
            result.lines = _write_lines(lines, out)
    except OSError as exc:
        raise storage_error(exc, f"the session into {path.parent}") from None
    if report is not None:
        result.warnings.extend(carry_warnings(report))
        result.dropped_reasoning = report.reasoning_dropped
    else:
        if result.dropped_malformed:
            result.warnings.append(Note(NoteKind.REPAIRED,
                                        f"left out {counted(result.dropped_malformed, 'malformed source line')}"))
        if result.dropped_reasoning:
            items = counted(result.dropped_reasoning, "reasoning item")
            result.warnings.append(Note(NoteKind.DROPPED, f"dropped {items} (their "
                                        "encrypted content only works for the OpenAI account that made them; use "
                                        "--same-account to keep them)"))
    missing = missing_folder_note(target_cwd)
    if missing is not None:
        result.warnings.append(missing)
    result.warnings.append(Note(NoteKind.LOCATION,
        f"Codex opens the session by its id (`codex resume {new_id}`, or `{result.exec_command}`); Codex CLI 0.99 "
        f"and later list it in `codex resume`'s picker and `--last` only after its first resume (their index "
        f"{base / INDEX_NAME} is Codex's own)"))
    return result


def _write_lines(lines: Iterable[dict[str, Any]], out: IO[bytes]) -> int:
    """Write the lines as JSONL (buffered); how many. A conversation without a message to resume is refused
    (the staged file is then removed)."""
    count = 0
    messages = False
    buf: list[bytes] = []
    held = 0
    for value in lines:
        data = jsonl_line(value)
        buf.append(data)
        held += len(data)
        count += 1
        messages = messages or value.get("type") == "response_item"
        if held >= 1 << 20:
            out.write(b"".join(buf))
            buf, held = [], 0
    if not messages:
        raise InvalidInputError("the conversation has no messages to import")
    out.write(b"".join(buf))
    return count


@contextlib.contextmanager
def _discard() -> Iterator[IO[bytes]]:
    """Where a dry run writes: nowhere (the lines are still made and counted)."""
    with open(os.devnull, "wb") as fh:
        yield fh
