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

import copy
import os
import shlex
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from p2pd.agents.codex import NAME
from p2pd.agents.codex.paths import codex_home
from p2pd.agents.codex.restore import has_codex_source, restore_rollout
from p2pd.agents.crossagent import CarryReport, carry_warnings, readable_turns
from p2pd.agents.jsonl import dumps_line
from p2pd.agents.spec import Note, NoteKind, missing_folder_note
from p2pd.conversation.model import ConversationDocument, Role
from p2pd.errors import ConflictError, InvalidInputError, storage_error
from p2pd.support.atomic import atomic_write_bytes
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


def rewrite_codex_lines(doc: ConversationDocument, session_id: str, cwd: str, *, keep_reasoning: bool,
                        result: CodexImportResult, home: Path | None = None) -> list[Any]:
    out: list[Any] = []
    known = configured_providers(home or codex_home())
    for _, value in restore_rollout(doc.main_transcript()):
        if not isinstance(value, dict) or not isinstance(value.get("type"), str) \
                or not isinstance(value.get("payload"), dict):
            result.dropped_malformed += 1  # not written into a session Codex will read
            continue
        line = copy.deepcopy(value)
        payload = line["payload"]
        ltype = line["type"]
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
        out.append(line)
    if not out or out[0].get("type") != "session_meta":
        out.insert(0, _line(_ts(datetime.now(UTC)), "session_meta", _meta(session_id, cwd, doc)))
    return out


def _meta(session_id: str, cwd: str, doc: ConversationDocument) -> dict[str, Any]:
    meta: dict[str, Any] = {"id": session_id, "timestamp": _ts(datetime.now(UTC)), "cwd": cwd,
                            "originator": ORIGINATOR, "cli_version": CLI_VERSION, "source": "cli",
                            "model_provider": MODEL_PROVIDER}
    if doc.origin.git_branch:
        meta["git"] = {"branch": doc.origin.git_branch}
    return meta


def synthesize_codex_lines(doc: ConversationDocument, session_id: str, cwd: str,
                           report: CarryReport) -> list[dict[str, Any]]:
    now = datetime.now(UTC)
    out = [_line(_ts(now), "session_meta", _meta(session_id, cwd, doc))]
    for t in readable_turns(doc, report):
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
            out.append(_line(ts, "response_item", {"type": "message", "role": "user", "content": content}))
            out.append(_line(ts, "event_msg", {"type": "user_message", "message": text, "images": urls}))
        else:
            if not text:  # (agent turns carry no images: readable_turns moved them to the next user turn)
                continue
            out.append(_line(ts, "response_item", {"type": "message", "role": "assistant",
                                                   "content": [{"type": "output_text", "text": text}]}))
            out.append(_line(ts, "event_msg", {"type": "agent_message", "message": text}))
    return out


def rollout_path(home: Path, session_id: str, when: datetime) -> Path:
    local = when.astimezone()
    return (home / "sessions" / f"{local:%Y}" / f"{local:%m}" / f"{local:%d}"
            / f"rollout-{local:%Y-%m-%dT%H-%M-%S}-{session_id}.jsonl")


def import_to_codex(doc: ConversationDocument, *, cwd: str | os.PathLike[str] | None = None,
                    home: Path | None = None, same_account: bool = False, dry_run: bool = False,
                    session_id: str | None = None) -> CodexImportResult:
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
    main = doc.main_transcript()
    if doc.origin.platform == NAME and has_codex_source(main):
        lines: list[Any] = rewrite_codex_lines(doc, new_id, target_cwd, keep_reasoning=same_account, result=result,
                                               home=base)
        if result.dropped_malformed:
            result.warnings.append(Note(NoteKind.REPAIRED,
                                        f"left out {counted(result.dropped_malformed, 'malformed source line')}"))
        if result.dropped_reasoning:
            items = counted(result.dropped_reasoning, "reasoning item")
            result.warnings.append(Note(NoteKind.DROPPED, f"dropped {items} (their "
                                        "encrypted content only works for the OpenAI account that made them; use "
                                        "--same-account to keep them)"))
    else:
        report = CarryReport(source=doc.origin.platform, target="Codex")
        lines = synthesize_codex_lines(doc, new_id, target_cwd, report)
        result.warnings.extend(carry_warnings(report))
        result.dropped_reasoning = report.reasoning_dropped
    if not any(isinstance(v, dict) and v.get("type") == "response_item" for v in lines):
        raise InvalidInputError("the conversation has no messages to import")
    result.lines = len(lines)
    missing = missing_folder_note(target_cwd)
    if missing is not None:
        result.warnings.append(missing)
    result.warnings.append(Note(NoteKind.LOCATION,
        f"Codex opens the session by its id (`codex resume {new_id}`, or `{result.exec_command}`); Codex CLI 0.99 "
        f"and later list it in `codex resume`'s picker and `--last` only after its first resume (their index "
        f"{base / INDEX_NAME} is Codex's own)"))
    data = "".join(dumps_line(v) + "\n" for v in lines)
    if not dry_run:
        try:
            atomic_write_bytes(path, data.encode("utf-8", errors="surrogateescape"), overwrite=False)
        except OSError as exc:
            raise storage_error(exc, f"the session into {path.parent}") from None
    return result
