"""The import into Codex writes the rollout one line at a time into a staged file (memory: one message, not the
session): the session appears whole or not at all. (That it writes what the in-memory import writes, for every
corpus session and from every kind of file: tests/agents/test_import_stream.py; its memory at 50 and 200 MB:
tests/bench/process_rss.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from p2pd.agents.codex.importer import import_source
from p2pd.agents.importing import import_file
from p2pd.agents.spooled import DocumentSource
from p2pd.conversation.document_io import write_document
from p2pd.conversation.model import ConversationDocument, Message, Origin, Part, Role, SidecarFile
from p2pd.errors import InvalidInputError, StorageError

TEXT = "x" * 2000  # ~2 KB a message: a thousand of them is past the writer's 1 MiB buffer


def _message(i: int, kind: str | None = None) -> Message:
    role = Role.USER if i % 2 == 0 else Role.AGENT
    p2pd = {"timestamp": "2026-07-10T08:00:00.000Z", **({"kind": kind} if kind else {})}
    return Message(message_id=f"m{i}", role=role, parts=[Part(text=f"{i} {TEXT}")], metadata={"p2pd": p2pd})


def _envelope() -> ConversationDocument:
    return ConversationDocument(context_id="ctx", title="t", created_at="2026-07-10T08:00:00Z",
                                origin=Origin(platform="claude-code"))


class _Source(DocumentSource):
    """A spooled conversation as the importer sees it, whose reading can be watched or made to fail (a disk
    error halfway): the part of a real spool that cannot be made to misbehave on demand."""

    def __init__(self, count: int, *, on_message=None) -> None:
        self.document = _envelope()
        self.subagents = []
        self.restored = False
        self._count = count
        self._on_message = on_message

    def messages(self) -> Iterator[Message]:
        for i in range(self._count):
            if self._on_message is not None:
                self._on_message(i)
            yield _message(i)

    def message_count(self) -> int:
        return self._count

    def main_lines(self):
        return iter(())

    def subagent_lines(self, index: int):
        return iter(())

    def tool_results(self) -> Iterator[SidecarFile]:
        return iter(())


def _files(home: Path) -> list[Path]:
    return sorted(p for p in home.rglob("*") if p.is_file())


def test_lines_are_written_while_the_messages_are_still_being_read(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    staged: list[int] = []

    def watch(i: int) -> None:
        if i == 1500:  # ~3 MB of messages read: the first MiBs must already be on disk, in the staged file only
            parts = [p for p in _files(home) if p.name.endswith(".part")]
            staged.append(sum(p.stat().st_size for p in parts))
            assert not [p for p in _files(home) if p.name.endswith(".jsonl")]

    result = import_source(_Source(2000, on_message=watch), cwd=tmp_path, home=home)
    assert staged and staged[0] >= 1 << 20, staged
    assert _files(home) == [Path(result.path)]  # the staged file became the session
    assert result.lines == 1 + 2 * 2000  # session_meta, then each message and the event the Codex UI shows


def test_a_failure_halfway_leaves_no_session_and_no_staged_file(tmp_path: Path) -> None:
    home = tmp_path / "codex"

    class DiskGone(OSError):
        pass

    def fail(i: int) -> None:
        if i == 1500:
            raise DiskGone(5, "Input/output error")

    with pytest.raises(StorageError) as caught:
        import_source(_Source(2000, on_message=fail), cwd=tmp_path, home=home)
    assert caught.value.details == {"errno": 5}
    assert _files(home) == []


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_conversation_with_nothing_codex_can_show_is_refused_and_nothing_is_left(tmp_path, monkeypatch,
                                                                                   dry_run) -> None:
    home = tmp_path / "codex"
    monkeypatch.setenv("CODEX_HOME", str(home))
    doc = _envelope()
    doc.messages = [_message(i, kind="meta") for i in range(3)]  # injected context only: not conversation
    path = tmp_path / "doc.a2a.json"
    write_document(doc, path)
    with pytest.raises(InvalidInputError):
        import_file(path, to="codex", cwd=tmp_path, spool_dir=tmp_path, dry_run=dry_run)
    assert _files(home) == []
    assert not list(tmp_path.glob(".p2pd-import-spool-*"))


def test_a_dry_run_counts_the_lines_and_writes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    result = import_source(_Source(10), cwd=tmp_path, home=home, dry_run=True)
    assert result.dry_run and result.lines == 1 + 2 * 10
    assert _files(home) == []
