"""What every ``p2pd`` command prints with: the two consoles, escaping, sizes, tables, records, the terminal side
of a transfer (:class:`CliUI`) and the runner for async commands.

Rules: data goes to ``out`` (stdout), everything said to the user goes to ``err`` (stderr). Any text that did not
come from this program — a transcript title, a device name, a peer's or a server's words — is printed through
:func:`shown` (control/bidi characters made visible, then rich markup escaped); our own text that may hold
brackets (paths, messages) through :func:`escape`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Coroutine
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, TypeVar, cast

from p2pd.errors import ExitCode
from p2pd.support.text import visible

if TYPE_CHECKING:  # rich is imported on first use: `p2pd --help` must not pay ~0.1 s for it
    from rich.console import Console
    from rich.table import Table

T = TypeVar("T")


class _LazyConsole:
    """A rich ``Console`` made on first use (attribute access is forwarded to it)."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def real(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real(), name)


def real_console(console: Console) -> Console:
    """The rich ``Console`` behind ``out``/``err``, for rich objects that keep a console (progress, renderers)."""
    return console.real() if isinstance(console, _LazyConsole) else console


out = cast("Console", _LazyConsole(highlight=False, soft_wrap=True))
err = cast("Console", _LazyConsole(stderr=True, highlight=False, soft_wrap=True))


def escape(text: str) -> str:
    """``text`` with rich markup (``[bold]`` …) escaped so it prints as written."""
    from rich.markup import escape as markup_escape

    return markup_escape(text)


def shown(text: str, limit: int | None = 300) -> str:
    """Foreign text (peer, server, transcript) made safe to print: invisible characters visible, markup escaped."""
    return escape(visible(text, limit))


def shown_block(text: str) -> str:
    """Like :func:`shown` for text that may span lines: each line made safe, the line breaks kept."""
    return "\n".join(shown(line, None) for line in text.split("\n"))


def human(n: float) -> str:
    """A byte count for people: ``512 B``, ``1.5 KB``, ``3.2 GB`` (powers of 1000)."""
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"  # pragma: no cover - the loop returns at GB


def status(message: str) -> AbstractContextManager[Any]:
    """A spinner on a terminal, nothing otherwise (progress for long work)."""
    return err.status(message) if err.is_terminal else nullcontext()


def when(timestamp: str) -> str:
    """An ISO timestamp as ``YYYY-MM-DD HH:MM:SS``."""
    return timestamp.replace("T", " ")[:19]


def print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=1))


def print_rows(rows: list[dict[str, Any]], *, as_json: bool, empty: str, columns: tuple[str, ...],
               cells: Callable[[dict[str, Any]], tuple[str, ...]]) -> int:
    """A list command's output: the rows as JSON, one line saying there are none, or a table.

    ``cells`` returns rich markup: it must pass every value that is not ours through :func:`shown`."""
    if as_json:
        print_json(rows)
    elif not rows:
        err.print(empty)
    else:
        from rich.table import Table

        table = Table()
        for name in columns:
            _add_column(table, name)
        for row in rows:
            table.add_row(*cells(row))
        out.print(table)
    return ExitCode.OK


def _add_column(table: Table, name: str) -> None:
    """Ids are never cut (they are what the next command needs); titles fold; the rest may be shortened."""
    if name == "id":
        table.add_column(name, no_wrap=True, min_width=19)
    else:
        table.add_column(name, overflow="fold" if name == "title" else "ellipsis")


def show_record(row: dict[str, Any]) -> None:
    """One record (a transfer, an inbox entry, a handoff) as ``key: value`` lines; values are shown safely."""
    for key, value in row.items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value, ensure_ascii=False)
        out.print(f"[bold]{escape(str(key))}[/]: {shown_block(str(value))}")


class CliUI:
    """Terminal side of send/receive/pair: the code, the verification string, the offer prompt, a progress bar."""

    def __init__(self, *, yes: bool = False, receiving: bool = False, signal_url: str | None = None) -> None:
        self.yes = yes
        self.receiving = receiving
        self.signal_url = signal_url
        self._progress: Any = None
        self._task: Any = None

    def code_ready(self, code: str, *, peer_present: bool = False) -> None:
        """The code, and how the other side uses it — unless it is in the room already (it has the code)."""
        if peer_present:
            return
        if self.receiving:
            err.print(f"Code: [bold]{escape(code)}[/] (waiting for the sender)")
            err.print(f"  on the sending machine run: [bold]p2pd send SESSION --code {escape(code)}[/]")
            return
        err.print(f"Code: [bold]{escape(code)}[/] (waiting for the receiver)")
        err.print(f"  on the receiving machine run: [bold]p2pd receive {escape(code)}[/]")
        if self.signal_url:
            from p2pd.exchange.weblink import page_link, qr_text

            link = page_link(self.signal_url, code)
            err.print(f"  or open in a browser: {escape(link)}", soft_wrap=True)
            if sys.stdout.isatty():
                out.print(qr_text(link), end="", highlight=False, markup=False)

    def paired(self, verification: str) -> None:
        err.print(f"Paired. Verification string (the same on both sides): [bold]{escape(verification)}[/]")

    def status(self, text: str) -> None:
        err.print(f"[dim]{shown(text)}[/dim]")

    def progress(self, done: int, total: int) -> None:
        if not err.is_terminal:
            return
        if self._progress is None:
            from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

            self._progress = Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                                      TransferSpeedColumn(), console=real_console(err),
                                      transient=True)
            self._progress.start()
            self._task = self._progress.add_task("acknowledged", total=total)
        self._progress.update(self._task, completed=done, total=total)
        if done >= total:
            self.stop()

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    async def decide(self, offer: Any) -> bool:
        """Show the peer's offer (all of it peer text) and accept with ``--yes`` or when the user says so."""
        info = offer.info
        err.print(f"Offered: [bold]{shown(info.title)}[/]")
        err.print(f"  from {shown(info.platform)} session {shown(info.session_id)}, {info.message_count} "
                  f"messages, {human(offer.raw_size)} ({human(offer.compressed_size)} on the wire)")
        if self.yes:
            return True
        if not sys.stdin.isatty():
            err.print("[yellow]declining: no terminal to ask on (pass --yes to accept)[/]")
            return False
        import asyncio

        answer = await asyncio.to_thread(input, "Accept? [y/N] ")
        return answer.strip().lower() in ("y", "yes")


def run(main: Coroutine[Any, Any, T], ui: CliUI | None = None) -> T:
    """Run an async command to its end on the event loop (uvloop where installed); ``ui``'s progress bar is
    stopped however it ends."""
    from p2pd.support import eventloop

    try:
        return eventloop.run(main)
    finally:
        if ui is not None:
            ui.stop()
