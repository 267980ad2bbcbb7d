"""The older name of the streamed document reader (:mod:`p2pd.conversation.stream_reader`), kept for callers.

The reader used to take only the line layout (:mod:`p2pd.conversation.layout`) and raise :class:`NotLayout` for
anything else; it now reads any JSON layout in bounded memory, so :class:`NotLayout` is never raised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from p2pd.conversation.stream_reader import DocumentReader, DocumentSummary

LayoutReader = DocumentReader
LayoutSummary = DocumentSummary


class NotLayout(Exception):
    """Never raised any more (every layout is read as a stream); kept so callers' fallbacks still import."""


def read_layout(pieces: Iterable[bytes], *, source: str = "input",
                on_element: Callable[[str, int | None, Any], None] | None = None) -> DocumentSummary:
    reader = DocumentReader(source=source, on_element=on_element)
    for piece in pieces:
        reader.feed(piece)
    return reader.finish()
