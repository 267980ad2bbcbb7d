"""``p2pd``: the top-level parser, :func:`main`, and the mapping from errors to one printed line and an exit code.

Errors are one clear line (``--debug`` shows the traceback); exit codes are :class:`p2pd.errors.ExitCode`, as
README.md documents them. What is printed and returned depends on the error's type and fields only — never on
its text. Text a peer or a server wrote (``P2pdError.peer_text``) is shown through
:func:`p2pd.support.text.visible`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from p2pd import __version__
from p2pd.cli import agent_sessions, completion, conversations, daemon, devices, examples, exchange, hook, manpage
from p2pd.cli.output import err, escape, print_json, shown
from p2pd.errors import ExitCode, InterruptedByUserError, P2pdError, Party


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="p2pd", description="Hand an AI agent conversation to another machine.")
    p.add_argument("--version", action="version", version=f"p2pd {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in (conversations, exchange, daemon, hook, devices, agent_sessions):
        group.register(sub)
    completion.register(sub, p)
    manpage.register(sub, p)
    for command in sub.choices.values():  # --debug also after the command (default only from the top level)
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help="show tracebacks on errors")
    examples.attach(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        from p2pd.config import load_config

        load_config()  # a typo or bad value in the config file stops every command, naming the key
        return int(func(args))
    except KeyboardInterrupt:  # Ctrl-C: one line, exit 130, never a traceback (even with --debug)
        err.print(("\n" if err.is_terminal else "") + "interrupted")
        _json_error(args, InterruptedByUserError("interrupted"))
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:  # one clear line, never a traceback without --debug
        if args.debug:
            raise
        _json_error(args, exc)
        return report(exc)


def _json_error(args: argparse.Namespace, exc: BaseException) -> None:
    """With ``--json``, a failure is the one JSON object on stdout too: ``{"error", "cause", "exit_code", …}``."""
    if getattr(args, "json", False):
        wire = exc.to_wire() if isinstance(exc, P2pdError) else {
            "error": f"unexpected {type(exc).__name__}: {exc}", "cause": "unexpected", "party": "local",
            "exit_code": int(ExitCode.ERROR), "kind": type(exc).__name__}
        print_json(wire)


def entry() -> NoReturn:
    """The ``p2pd`` program: :func:`main`, then a fast exit. Once a command is done (its files written and closed,
    its event loop finished), tearing down the interpreter only frees memory the system takes back anyway — 0.2 s
    for a 3.5 MB conversation, seconds for 200 MB — so after flushing the output and the log handlers the
    process ends with ``os._exit``. An exception (``--debug``) or an exit from argparse takes the normal way.
    For the same reason the objects of a bulk conversion are frozen out of the collector's view once made."""
    from p2pd.support.gcpause import freeze_after_pauses

    freeze_after_pauses()
    code = main()
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can be said
            stream.flush()
    os._exit(code)


# Who "said" a P2pdError's peer_text, by the party that caused the error.
_SPEAKER = {Party.PEER: "the peer", Party.SERVER: "the signaling server"}


def error_line(exc: BaseException) -> str:
    """The one line (rich markup) that says what went wrong."""
    if not isinstance(exc, P2pdError):
        return f"[bold red]error:[/] unexpected {type(exc).__name__}: {escape(_one_line(str(exc)))} (run with --debug)"
    line = f"[bold red]error:[/] {escape(_one_line(str(exc)))}"
    if exc.peer_text:  # display only: never compared
        line += f" ({_SPEAKER.get(exc.party, 'the other side')} said: “{shown(exc.peer_text)}”)"
    return line


def _one_line(message: str) -> str:
    return " ".join(message.split())


def exit_code(exc: BaseException) -> int:
    """The process exit code for ``exc``: the error's own for a :class:`P2pdError`, else ``ERROR``."""
    return int(exc.exit_code) if isinstance(exc, P2pdError) else int(ExitCode.ERROR)


def report(exc: BaseException) -> int:
    """Print ``exc`` as one line on stderr; returns the exit code."""
    err.print(error_line(exc))
    return exit_code(exc)


if __name__ == "__main__":
    entry()
