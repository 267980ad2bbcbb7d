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
from collections.abc import Callable, Coroutine, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, TypeVar, cast

from p2pd.errors import ExitCode
from p2pd.support.text import human, visible

if TYPE_CHECKING:  # rich is imported on first use: `p2pd --help` must not pay ~0.1 s for it
    from rich.console import Console

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


def status(message: str) -> AbstractContextManager[Any]:
    """A long step on a terminal: a spinner, ``message`` (rich markup) and the time spent so far; nothing when
    stderr is not a terminal."""
    from p2pd.cli.progress import working

    return working(real_console(err), message) if err.is_terminal else nullcontext()


def when(timestamp: str) -> str:
    """An ISO timestamp as ``YYYY-MM-DD HH:MM:SS``."""
    return timestamp.replace("T", " ")[:19]


def print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=1))


def print_rows(rows: list[dict[str, Any]], *, as_json: bool, empty: str, columns: tuple[str, ...],
               cells: Callable[[dict[str, Any]], tuple[str, ...]]) -> int:
    """A list command's output: the rows as JSON, one line saying there are none, or a table (:func:`table`).

    ``cells`` returns rich markup: it must pass every value that is not ours through :func:`shown`."""
    if as_json:
        print_json(rows)
    elif not rows:
        err.print(empty)
    else:
        table(columns, [cells(row) for row in rows])
    return ExitCode.OK


# How a column behaves in a terminal table: an id is never cut (the next command needs it), the title takes the
# room that is left and folds, counts are right-aligned; other columns are shortened first.
_IDS = {"id"}
_TITLES = {"title"}
_COUNTS = {"msgs", "size", "messages"}


def table(columns: Sequence[str], rows: Sequence[Sequence[str]], plain: Sequence[Sequence[str]] | None = None,
          plain_columns: Sequence[str] | None = None) -> None:
    """Rows as a table on a terminal; as tab-separated lines when stdout is not a terminal (a header line, then
    one line per row, full values, tabs and line breaks in them escaped: ``cut -f`` and ``awk -F'\\t'`` work).

    ``rows`` are rich markup (foreign text through :func:`shown`); ``plain`` the full values for the piped
    form, when they differ from what the table shows (else the markup's text is used), under ``plain_columns``
    (else ``columns``)."""
    if not out.is_terminal:
        if plain is None:
            from rich.text import Text

            plain = [[Text.from_markup(cell).plain for cell in row] for row in rows]
        lines = ["\t".join(plain_columns or columns),
                 *("\t".join(visible(str(value), None) for value in row) for row in plain)]
        sys.stdout.write("\n".join(lines) + "\n")
        return
    from rich import box
    from rich.table import Table

    grid = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for name in columns:
        if name in _IDS:
            grid.add_column(name, no_wrap=True)
        elif name in _TITLES:
            grid.add_column(name, overflow="fold", ratio=1, min_width=min(30, max(12, out.width // 3)))
        elif name in _COUNTS:
            grid.add_column(name, no_wrap=True, justify="right")
        else:
            grid.add_column(name, no_wrap=True, overflow="ellipsis", max_width=24)
    for row in rows:
        grid.add_row(*row)
    out.print(grid)


def show_record(row: dict[str, Any]) -> None:
    """One record (a transfer, an inbox entry, a handoff) as ``key: value`` lines; values are shown safely."""
    for key, value in row.items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value, ensure_ascii=False)
        out.print(f"[bold]{escape(str(key))}[/]: {shown_block(str(value))}")


class CliUI:
    """Terminal side of send/receive/pair: the code, the verification string, the offer prompt, a progress bar."""

    def __init__(self, *, yes: bool = False, receiving: bool = False, signal_url: str | None = None,
                 qr: bool = True) -> None:
        from p2pd.cli.progress import Activity

        self.qr = qr  # False with --json: stdout holds only the JSON object
        self.yes = yes
        self.receiving = receiving
        self.signal_url = signal_url
        self.activity = Activity(real_console(err))

    def sending(self, about: dict[str, Any]) -> None:
        """Which session is going (what `latest` or a prefix picked), before any code is shown."""
        from p2pd.support.text import counted

        err.print(f"Sending [bold]{shown(about['title'] or about['session_id'])}[/] ({shown(about['platform'])} "
                  f"session {shown(about['session_id'])}, {counted(about['messages'], 'message')})")

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
            if self.qr and sys.stdout.isatty():
                out.print(qr_text(link), end="", highlight=False, markup=False)

    def paired(self, verification: str) -> None:
        err.print(f"Paired. Verification string (the same on both sides): [bold]{escape(verification)}[/]")

    def status(self, text: str) -> None:
        self.activity.stop()
        err.print(f"[dim]{shown(text)}[/dim]")

    def progress(self, done: int, total: int) -> None:
        """The transfer's bar: payload bytes the receiver holds (acknowledged) of the total, with the percentage,
        rate and time left."""
        self.activity.transfer("receiving" if self.receiving else "sending", done, total)
        if done >= total:
            self.activity.stop()

    def stage(self, name: str, done: int | None = None, total: int | None = None) -> None:
        """A long step (packing, decompressing, writing): a spinner with its name and elapsed time, bytes when
        known. It ends when the next thing is said."""
        self.activity.step(escape(name), done, total)

    def stop(self) -> None:
        self.activity.stop()

    async def decide(self, offer: Any) -> bool:
        """Show the peer's offer (all of it peer text) and accept with ``--yes`` or when the user says so."""
        self.activity.stop()
        info = offer.info
        err.print(f"Offered: [bold]{shown(info.title)}[/]")
        err.print(f"  from {shown(info.platform)} session {shown(info.session_id)}, {info.message_count} "
                  f"messages, {human(offer.raw_size)} ({human(offer.compressed_size)} on the wire)")
        if self.yes:
            return True
        if not sys.stdin.isatty():
            err.print("[yellow]declining: no terminal to ask on (pass --yes to accept)[/]")
            return False
        answer = await ask("Accept? [y/N] ")
        return answer.strip().lower() in ("y", "yes")


async def ask(prompt: str) -> str:
    """Ask on the terminal and wait for one line without a thread: the event loop watches stdin, so Ctrl-C (or the
    transfer ending) stops the wait at once — a thread blocked in ``input()`` kept the process alive after Ctrl-C,
    then failed on the closed loop."""
    import asyncio
    import os

    loop = asyncio.get_running_loop()
    fd = sys.stdin.fileno()
    line = bytearray()
    answered: asyncio.Future[str] = loop.create_future()

    def readable() -> None:
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            return
        line.extend(data)
        if (not data or b"\n" in line) and not answered.done():
            answered.set_result(line.split(b"\n", 1)[0].decode("utf-8", "replace"))

    err.print(escape(prompt), end="")
    loop.add_reader(fd, readable)
    try:
        return await answered
    finally:
        loop.remove_reader(fd)


def run(main: Coroutine[Any, Any, T], ui: CliUI | None = None) -> T:
    """Run an async command to its end on the event loop (uvloop where installed); ``ui``'s progress bar is
    stopped however it ends."""
    from p2pd.support import eventloop

    try:
        return eventloop.run(main)
    finally:
        if ui is not None:
            ui.stop()
