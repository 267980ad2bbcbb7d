"""Run a coroutine on uvloop where it is installed (about twice aiortc's throughput), else on asyncio."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop constructor, or None when uvloop is not installed."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to completion and return its result.

    The result is handed back through a box, not as the main task's result: on the way out,
    ``asyncio.Runner.run`` asks ``signal.getsignal(SIGINT)``, which builds the repr of its SIGINT handler — a
    partial holding the main task, whose repr includes the task's result. With a whole conversation document as
    that result, this cost seconds (2.15 s at 50 MB, 10.4 s at 200 MB). The main task's result is now None.
    """
    box: list[T] = []

    async def boxed() -> None:
        box.append(await main)

    executor = _Executor()
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        runner.get_loop().set_default_executor(executor)
        try:
            runner.run(boxed())
        except KeyboardInterrupt:
            executor.abandon = True  # Ctrl-C: do not wait for a thread still packing or parsing
            raise
    return box[0]


class _Executor(ThreadPoolExecutor):
    """The loop's default executor (``asyncio.to_thread``). Once the user pressed Ctrl-C, closing the loop does
    not wait for threads still at work (packing or parsing a large conversation takes seconds): the command ends
    now, and its process exits right after."""

    abandon = False

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if self.abandon:
            super().shutdown(wait=False, cancel_futures=True)
        else:
            super().shutdown(wait=wait, cancel_futures=cancel_futures)
