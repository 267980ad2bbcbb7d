"""What a terminal shows while work goes on: a transfer's bar (percentage, bytes, rate, time left) and, for long
steps without a known size (reading a transcript, packing, decompressing, importing), a spinner with the step's
name and the time spent so far. Nothing is drawn when stderr is not a terminal (a pipe, a log file), and every
display is transient: once it stops, only the lines printed for good remain.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from p2pd.support.text import human

if TYPE_CHECKING:  # rich is imported on first use
    from rich.console import Console
    from rich.progress import Progress, TaskID


class Activity:
    """One live display at a time on ``console``: a transfer bar or a named step (with bytes when known).
    Names are rich markup: text that is not ours must come through :func:`p2pd.cli.output.shown`."""

    def __init__(self, console: Console, clock: Callable[[], float] | None = None) -> None:
        self.console = console
        self.clock = clock  # rich's monotonic clock unless given (tests)
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._kind = ""
        self._name = ""

    def transfer(self, label: str, done: int, total: int) -> None:
        """The bar of a transfer: ``done`` of ``total`` payload bytes."""
        if not self.console.is_terminal:
            return
        if self._kind != "transfer" or self._name != label:
            from rich.progress import BarColumn, TaskProgressColumn, TextColumn, TimeRemainingColumn

            self._start("transfer", label, BarColumn(bar_width=20), TaskProgressColumn(), _bytes_column(),
                        _rate_column(), TextColumn("eta"), TimeRemainingColumn(), total=total)
        self._update(done, total)

    def step(self, name: str, done: int | None = None, total: int | None = None) -> None:
        """A long step under way: a spinner, its name and the time spent; its bytes when ``total`` is known."""
        if not self.console.is_terminal:
            return
        kind = "sized" if total else "step"
        if self._kind != kind or self._name != name:
            from rich.progress import BarColumn, SpinnerColumn, TimeElapsedColumn

            columns: tuple[Any, ...] = (BarColumn(bar_width=20), _bytes_column()) if total else ()
            self._start(kind, name, *columns, TimeElapsedColumn(), total=total, spinner=SpinnerColumn())
        if total:
            self._update(done or 0, total)

    def _start(self, kind: str, name: str, *columns: Any, total: int | None, spinner: Any = None) -> None:
        from rich.progress import Progress, TextColumn

        self.stop()
        lead = (spinner,) if spinner is not None else ()
        self._progress = Progress(*lead, TextColumn("{task.description}"), *columns, console=self.console,
                                  transient=True, get_time=self.clock)
        self._progress.start()
        self._task = self._progress.add_task(name, total=total)
        self._kind, self._name = kind, name

    def _update(self, done: int, total: int) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=done, total=total)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
        self._progress = self._task = None
        self._kind = self._name = ""


def _bytes_column() -> Any:
    """``1.5 MB/3.2 MB``: done of all, in the units of every other line p2pd prints (``support.text.human``)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class Bytes(ProgressColumn):
        def render(self, task: Any) -> Text:
            total = f"/{human(task.total)}" if task.total is not None else ""
            return Text(f"{human(task.completed)}{total}", style="progress.download")

    return Bytes()


def _rate_column() -> Any:
    """``12.5 MB/s`` (``?`` until there is a rate), in the same units."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            return Text("?" if speed is None else f"{human(speed)}/s", style="progress.data.speed")

    return Rate()


@contextmanager
def working(console: Console, name: str) -> Iterator[Activity]:
    """A named step for the duration of a ``with`` block (a spinner and the elapsed time, on a terminal)."""
    activity = Activity(console)
    activity.step(name)
    try:
        yield activity
    finally:
        activity.stop()
