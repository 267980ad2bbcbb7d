"""How a person gives ``p2pd send``, ``receive`` and ``pair`` a pairing code: as an argument, ``-`` (stdin) or
``$P2PD_CODE`` (:func:`given_code`), or typed at a prompt with Tab completion of the words (:func:`prompt_code`).

Every code a person gives is checked for typos before anything is sent (:mod:`p2pd.pairing.typos`): a word one
letter from a word of the list is refused with "did you mean …?"; ``--exact-code`` takes the code as given. At the
prompt the suggestion is offered for editing instead, and typing the same code again keeps it as typed.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence

from p2pd.cli.output import err, escape
from p2pd.errors import Cause, ExitCode, P2pdError
from p2pd.pairing.codes import DEFAULT_WORDS, Code, InvalidCodeError, parse_code, read_code, wordlist
from p2pd.pairing.typos import LikelyTypoError, check_typos

EXACT_HINT = "(if the other side really uses this code, add --exact-code)"
PROMPT = "Code: "
_PARTS = re.compile(r"[\s\-]+")

Ask = Callable[[str, str], str]
"""Shows a prompt with the given text already typed in (editable) and returns the line; EOFError at its end."""


def usage_error(message: str) -> P2pdError:
    return P2pdError(message, cause=Cause.USAGE, exit_code=ExitCode.USAGE)


def given_code(argument: str | None, *, exact: bool = False) -> Code | None:
    """The code from the argument, ``-`` (a line of stdin) or ``$P2PD_CODE``, checked for typos unless ``exact``;
    ``None`` when none was given."""
    code = read_code(argument)
    return code if code is None or exact else check_typos(code, hint=EXACT_HINT)


def complete_word(line: str, text: str, words: Sequence[str]) -> list[str]:
    """What Tab offers for ``text``, the part of a code being typed at the end of ``line``: the list words it
    starts, each with a ``-`` when another word follows (a made code has :data:`DEFAULT_WORDS`). The nameplate
    (digits) is not completed: the server does not list its rooms."""
    before = line[: len(line) - len(text)] if text and line.endswith(text) else line
    parts = [p for p in _PARTS.split(before) if p]
    if not parts or not parts[0].isdigit():
        return []
    position = len(parts)  # 1: the first word
    prefix = text.casefold()
    suffix = "-" if position < DEFAULT_WORDS else ""
    return [w + suffix for w in words if w.startswith(prefix)]


def prompt_code(*, exact: bool = False, ask: Ask | None = None) -> Code:
    """Ask for the code until one parses and does not look mistyped (``exact``: any code that parses)."""
    ask = ask or terminal_ask
    err.print("Type the code the sender shows you (Tab completes its words).")
    prefill, refused = "", None
    while True:
        try:
            text = ask(PROMPT, prefill)
        except EOFError:
            raise usage_error("no code was typed") from None
        prefill = ""
        if not text.strip():
            continue
        try:
            code = parse_code(text)
            if exact or code == refused:  # typed again as it was: the person means it
                return code
            return check_typos(code)
        except LikelyTypoError as exc:
            refused = code
            prefill = exc.details["suggestions"][0]
            err.print(f"[yellow]{escape(exc.message)}[/] Enter takes it; to keep your code, type it again.")
        except InvalidCodeError as exc:
            err.print(f"[yellow]{escape(exc.message)}[/]")


def terminal_ask(prompt: str, prefill: str) -> str:
    """``input`` with GNU readline (or libedit): Tab completes the list's words, ``prefill`` is typed in already.
    With stdout redirected (``p2pd receive > path``) the prompt goes to stderr, without completion."""
    if not sys.stdout.isatty():
        sys.stderr.write(prompt)
        sys.stderr.flush()
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line
    import readline

    words = wordlist()

    def complete(text: str, state: int) -> str | None:
        options = complete_word(readline.get_line_buffer()[: readline.get_endidx()], text, words)
        return options[state] if state < len(options) else None

    readline.set_completer_delims(" -")
    readline.set_completer(complete)
    readline.parse_and_bind("bind ^I rl_complete" if "libedit" in (readline.__doc__ or "") else "tab: complete")
    readline.set_startup_hook((lambda: readline.insert_text(prefill)) if prefill else None)
    try:
        return input(prompt)
    finally:
        readline.set_startup_hook(None)
        readline.set_completer(None)
