"""Options that mean the same on every command, so each name has one meaning across the CLI:

- ``--agent AGENT``: the agent to import into (``receive --import``, ``import``, ``inbox import``);
- ``--to DEVICE``: a paired device (``send``) — and nothing else;
- ``--format FORMAT``: ``convert``'s target format;
- ``--json``: one JSON object on stdout instead of the lines for people (``p2pd/cli/OUTPUT.md``).

Old spellings stay as hidden aliases that still work and say once what replaced them, so scripts do not break
(:class:`DeprecatedAlias`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any


class DeprecatedAlias(argparse.Action):
    """An old option name: stores like the new one (``dest``) and warns on stderr that ``new`` replaced it."""

    def __init__(self, option_strings: Sequence[str], dest: str, new: str = "", **kwargs: Any) -> None:
        kwargs["help"] = argparse.SUPPRESS
        super().__init__(option_strings, dest, **kwargs)
        self.new = new

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from p2pd.cli.output import err, escape

        err.print(f"[yellow]warning[/]: {escape(option_string or '')} is now {escape(self.new)} on "
                  f"`{escape(parser.prog)}`; the old name will go away")
        setattr(namespace, self.dest, values)


def add_agent(parser: argparse.ArgumentParser, help: str = "the agent to import into (default: claude-code)") -> None:
    """``--agent AGENT`` (the import target), with ``--to`` kept as a deprecated alias."""
    from p2pd.agents.registry import import_targets

    targets = import_targets()
    parser.add_argument("--agent", choices=targets, default="claude-code", help=help)
    parser.add_argument("--to", dest="agent", choices=targets, action=DeprecatedAlias, new="--agent")


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object on stdout (see p2pd/cli/OUTPUT.md); messages stay on stderr")


def usage_error(parser: argparse.ArgumentParser) -> None:
    """Let the command report a bad command line as argparse does (usage, message, exit 2): ``args.usage(msg)``."""
    parser.set_defaults(usage=parser.error)
