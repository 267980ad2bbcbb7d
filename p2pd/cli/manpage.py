"""``p2pd man``: the manual page p2pd(1), in roff (man(7) macros), generated from the argparse parser itself like
the completion scripts — every command and subcommand with its usage, help, options and examples, the exit codes
of :class:`p2pd.errors.ExitCode`, and the configuration keys with their environment variables from
:mod:`p2pd.config`'s table. Generated when asked rather than at build time, so an installed p2pd (pipx, uv tool,
pip) always has the page of its own version: ``p2pd man | man -l -``, or
``p2pd man > ~/.local/share/man/man1/p2pd.1`` for ``man p2pd``.
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import UTC, datetime
from typing import Any

from p2pd import __version__
from p2pd.errors import ExitCode

# ExitCode -> what it means (a test checks that every member is here)
EXIT_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "success",
    ExitCode.ERROR: "an unexpected failure",
    ExitCode.USAGE: "a bad command line",
    ExitCode.NOT_FOUND: "a session, file or id that does not exist",
    ExitCode.INVALID_INPUT: "a malformed transcript, document or blob; a checksum mismatch",
    ExitCode.TOO_LARGE: "over a size limit",
    ExitCode.TRANSFER_FAILED: "the transfer failed: the peer went away, a protocol error, cancelled, the receiver's "
                              "disk refused it",
    ExitCode.FALLBACK_WRITTEN: "no peer connection: the conversation was written to a file instead",
    ExitCode.DECLINED: "the other side declined the offer",
    ExitCode.WRONG_CODE: "the code did not match on both sides",
    ExitCode.CONFLICT: "refused to overwrite something that exists",
    ExitCode.KEY_CHANGED: "a paired device presented another key than the one it paired with",
    ExitCode.STORAGE: "this machine refused a write: a full disk, a missing folder, no permission",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C)",
}


def register(sub: Any, root: argparse.ArgumentParser) -> None:
    s = sub.add_parser("man", help="print the manual page p2pd(1) (roff; `p2pd man | man -l -`)")
    s.set_defaults(func=lambda args: cmd_man(root))


def cmd_man(root: argparse.ArgumentParser) -> int:
    sys.stdout.write(page(root))
    return 0


def page(root: argparse.ArgumentParser, today: datetime | None = None) -> str:
    date = (today or datetime.now(UTC)).strftime("%Y-%m-%d")
    out = [f'.TH P2PD 1 "{date}" "p2pd {__version__}" "User Commands"',
           ".SH NAME", r"p2pd \- " + _text(root.description or ""),
           ".SH SYNOPSIS", r".B p2pd", r"[\fB\-\-debug\fR] \fICOMMAND\fR [\fIoptions\fR]",
           ".SH DESCRIPTION", _text(root.description or ""),
           "Messages go to standard error and results to standard output; "
           r"\fB\-\-debug\fR (anywhere on the line) shows a traceback on an error.",
           ".SH OPTIONS", *_options(root), ".SH COMMANDS"]
    for name, sub, help_text in _commands(root):
        out += _command(name, sub, help_text)
    out += [".SH EXAMPLES", *_examples(root)]  # each command's own are in its section
    out += [".SH EXIT STATUS"]
    for code in ExitCode:
        out += [".TP", rf"\fB{int(code)}\fR", _text(EXIT_MEANINGS[code])]
    out += [".SH ENVIRONMENT AND CONFIGURATION",
            r"The configuration file is \fI~/.config/p2pd/config.toml\fR (\fBP2PD_CONFIG\fR overrides); an unknown "
            "key or a bad value stops every command, naming the key. An environment variable wins over its key."]
    for key, env, meaning in config_keys():
        out += [".TP", rf"\fB{_text(key)}\fR" + (rf" (\fB{_text(env)}\fR)" if env else ""), _text(meaning)]
    out += [".SH SEE ALSO", r"\fBp2pd\-signal\fR(1) (\fBp2pd\-signal \-\-help\fR), "
            r"\fBp2pd completion\fR for shell completion, and README.md of the project."]
    return "\n".join(out) + "\n"


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> list[tuple[str, argparse.ArgumentParser, str]]:
    """Every command and subcommand under ``parser``, depth first: (full name, its parser, its one-line help)."""
    found: list[tuple[str, argparse.ArgumentParser, str]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                full = f"{prefix} {name}".strip()
                found.append((full, sub, helps.get(name, "")))
                found += _commands(sub, full)
    return found


def _command(name: str, parser: argparse.ArgumentParser, help_text: str) -> list[str]:
    formatter = argparse.HelpFormatter(parser.prog, width=78)  # wrapped for the page, whatever $COLUMNS is
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, prefix="")
    usage = formatter.format_help().strip("\n")
    lines = [".SS " + _text(f"p2pd {name}"), _text(help_text) if help_text else "", ".PP", ".nf",
             _text(usage), ".fi"]
    if parser.description:
        lines += [".PP", _text(parser.description)]
    lines += _options(parser)
    if parser.epilog:
        lines += [".PP", "Examples:", ".RS", *_examples(parser), ".RE"]
    return [line for line in lines if line]


def _options(parser: argparse.ArgumentParser) -> list[str]:
    formatter = parser._get_formatter()
    lines: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help is argparse.SUPPRESS:
            continue
        if isinstance(action, argparse._HelpAction):
            continue
        invocation = formatter._format_action_invocation(action)
        help_text = formatter._expand_help(action) if action.help else ""
        lines += [".TP", rf"\fB{_text(invocation)}\fR", _text(help_text)]
    return lines


def _examples(parser: argparse.ArgumentParser) -> list[str]:
    """The examples :mod:`p2pd.cli.examples` put at the end of ``parser``'s help: each command line in bold, what
    it does under it."""
    lines: list[str] = []
    for line in (parser.epilog or "").splitlines()[1:]:  # "examples:", then command / what, indented
        if line.startswith("      "):
            lines += [_text(line.strip())]
        elif line.strip():
            lines += [".TP", rf"\fB{_text(line.strip())}\fR"]
    return lines


def config_keys() -> list[tuple[str, str, str]]:
    """(key, environment variable or "", meaning) from the table in :mod:`p2pd.config`'s docstring."""
    import p2pd.config

    rows: list[tuple[str, str, str]] = []
    for line in (p2pd.config.__doc__ or "").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            key, env, meaning = (cell.replace("`", "") for cell in cells)
            rows.append((key, "" if env in ("—", "-") else env, meaning))
    return rows


def _text(text: str) -> str:
    """``text`` as roff: backslashes and dashes escaped, no line taken for a request (a leading dot or quote),
    characters outside ASCII as groff's ``\\[uXXXX]`` (man reads the page as ASCII)."""
    text = text.replace("\\", r"\e").replace("-", r"\-")
    text = "".join(ch if ord(ch) < 128 else f"\\[u{ord(ch):04X}]" for ch in text)
    text = re.sub(r"^(?=[.'])", r"\\&", text, flags=re.MULTILINE)
    return text
