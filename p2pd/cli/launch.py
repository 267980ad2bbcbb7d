"""The ``p2pd`` program's first step (its console script): start what a command will need before importing it.

``p2pd send FILE`` packs the file in a process of its own (:mod:`p2pd.exchange.producer`). Started here, before the
command line's modules are imported and the arguments parsed, that process's own start and imports overlap the
sender's (0.1-0.15 s earlier than once ``p2pd send`` runs: tests/bench/handover.py). The guess reads the raw
arguments: a wrong one costs only a spare process that ends, unused, with this one; the command itself is always
:func:`p2pd.cli.main.entry` with the same arguments.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import NoReturn

# (the send options that do not pack here: a help text, or the running daemon sends)
_NOT_PACKED_HERE = ("-h", "--help", "--to", "--link")


def packs_a_file(args: Sequence[str]) -> bool:
    """Whether the command line ``args`` (without the program name) is a ``p2pd send`` that packs a file here."""
    words = [a for a in args if a != "--debug"]
    if words[:1] != ["send"] or len(words) < 2:
        return False
    return not any(a in _NOT_PACKED_HERE or a.startswith(("--to=", "--link=")) for a in words[1:])


def entry() -> NoReturn:
    if packs_a_file(sys.argv[1:]):
        from p2pd.exchange.spare import prespawn

        prespawn()
    from p2pd.cli.main import entry as main_entry

    main_entry()
