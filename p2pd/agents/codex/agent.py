"""Codex CLI as p2pd sees it: rollouts under ``$CODEX_HOME/sessions``, exported and restored exactly."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from p2pd.agents.codex.paths import find_rollouts, resolve_rollout
from p2pd.agents.spec import Agent, FirstLine, ImportResultLike
from p2pd.errors import InvalidInputError

if TYPE_CHECKING:
    from p2pd.agents.spooled import DocumentSource
    from p2pd.conversation.model import ConversationDocument, Message

from p2pd.agents.codex import NAME


def _find() -> list[Path]:
    return [r.path for r in find_rollouts()]


def _resolve(ref: str) -> Path | None:
    if ref == "latest":
        found = find_rollouts()
        return found[0].path if found else None
    return resolve_rollout(ref)


def _detect(path: Path, first: FirstLine) -> bool:
    if path.name.endswith(".jsonl.zst"):
        return True
    if not path.name.endswith(".jsonl"):
        return False
    head = first()
    return isinstance(head, dict) and "payload" in head and isinstance(head.get("type"), str)


def _export(path: Path) -> ConversationDocument:
    from p2pd.agents.codex.export import export_rollout

    return export_rollout(path)


def _write_streamed(path: Path, write: Callable[[bytes], object], *, spool_dir: Path,
                    on_head: Callable[[dict[str, Any]], object] | None = None) -> object:
    from p2pd.agents.codex.streamed import write_rollout

    return write_rollout(path, write, spool_dir=spool_dir, on_head=on_head)


def _import_source(src: DocumentSource, *, foreign: bool, cwd: str | None, same_account: bool,
                   dry_run: bool) -> ImportResultLike:
    from p2pd.agents.codex.importer import import_source

    return import_source(src, cwd=cwd, same_account=same_account, dry_run=dry_run)


def _restore_lines(message: Message) -> list[tuple[int, dict[str, Any]]] | None:
    from p2pd.agents.codex.restore import codex_lines

    return codex_lines(message)


def _restore(src: DocumentSource, write: Callable[[bytes], object], *, keep_ids: bool) -> None:
    """The rollout line for line, as Codex wrote it (ids are always the original ones)."""
    from p2pd.agents.jsonl import jsonl_bytes

    if not src.restored:
        raise InvalidInputError("this conversation did not come from Codex; use `p2pd import --to codex` to "
                                "rebuild it as a Codex session")
    for data in jsonl_bytes(v for _, v in src.main_lines()):
        write(data)


AGENT = Agent(name=NAME, display="Codex", aliases=("codex-cli",), find_sessions=_find, detect=_detect,
              export=_export, detect_rank=10, resolve=_resolve, restore=_restore,
              write_streamed=_write_streamed, import_source=_import_source, restore_lines=_restore_lines)
