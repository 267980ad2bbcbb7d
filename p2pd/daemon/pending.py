"""Incoming transfers waiting for a person's decision (the accept policy's ``ask``): each one's offer is held,
unanswered, until it is accepted or declined through the CLI, the HTTP API or MCP — or the transfer ends (the
sender cancelled or went away, the daemon stopped). Nothing of the conversation is stored meanwhile."""

from __future__ import annotations

import asyncio

from p2pd.errors import ConflictError


class PendingOffers:
    """The open questions, by transfer id (one event loop's)."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[bool]] = {}

    async def ask(self, transfer_id: str) -> bool:
        """Wait for the answer about ``transfer_id``: True accepted, False declined."""
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting[transfer_id] = answer
        try:
            return await answer
        finally:
            self._waiting.pop(transfer_id, None)

    def answer(self, transfer_id: str, accept: bool) -> None:
        """Accept or decline a waiting transfer; ConflictError when it waits for nothing (never pending, already
        answered, or ended)."""
        waiting = self._waiting.get(transfer_id)
        if waiting is None or waiting.done():
            raise ConflictError(f"transfer {transfer_id} is not waiting for a decision")
        waiting.set_result(accept)

    def ids(self) -> list[str]:
        return [tid for tid, waiting in self._waiting.items() if not waiting.done()]


__all__ = ["PendingOffers"]
