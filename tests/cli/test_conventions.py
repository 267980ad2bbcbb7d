"""Command-line conventions (issue 17): ``--debug`` is taken anywhere on the line (errors say "run with --debug"),
and every command's ``--help`` ends with examples."""

from __future__ import annotations

import argparse

import pytest

from p2pd.cli.examples import EXAMPLES
from p2pd.cli.main import build_parser
from tests.cli.helpers import run


def commands(parser: argparse.ArgumentParser, path: str = "") -> dict[str, argparse.ArgumentParser]:
    found = {path: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found |= commands(sub, f"{path} {name}".strip())
    return found


@pytest.mark.parametrize("argv", [
    ["--debug", "sessions"], ["sessions", "--debug"], ["sessions", "--json", "--debug"],
    ["receive", "--debug", "7-amber-lotus"], ["devices", "rename", "--debug"],
])
def test_debug_anywhere(argv: list[str]) -> None:
    assert build_parser().parse_args(argv).debug is True


def test_no_debug_is_false_whichever_command() -> None:
    for argv in (["sessions"], ["send", "latest"], ["completion", "bash"]):
        assert build_parser().parse_args(argv).debug is False


def test_debug_after_the_command_shows_the_traceback(tmp_path) -> None:  # type: ignore[no-untyped-def]
    missing = str(tmp_path / "missing.a2a.json")
    quiet = run("show", missing)
    loud = run("show", missing, "--debug")
    assert quiet.returncode == 3 and "Traceback" not in quiet.stderr
    assert loud.returncode != 0 and "Traceback (most recent call last)" in loud.stderr


def test_every_command_has_examples_and_help_ends_with_them() -> None:
    parsers = commands(build_parser())
    assert set(parsers) == set(EXAMPLES), "a command without examples in p2pd/cli/examples.py (or a stale entry)"
    for path, parser in parsers.items():
        text = parser.format_help()
        tail = text[text.rindex("\nexamples:\n"):]
        assert tail.rstrip().endswith(EXAMPLES[path][-1][1]), path
        assert all(f"  {line}\n" in tail for line, _ in EXAMPLES[path]), path
        assert all(line.startswith(("p2pd ", "P2PD_", "mkdir ")) for line, _ in EXAMPLES[path]), path


def test_example_commands_parse() -> None:
    """Each example's p2pd words are a valid command line (the shell parts aside)."""
    import shlex

    parser = build_parser()
    for path, lines in EXAMPLES.items():
        for line, _ in lines:
            words = shlex.split(line.split(" > ")[0].split(" | ")[0].split(" && ")[-1].replace("~", "/home/me"))
            words = [w for w in words if "=" not in w or w.startswith("-")][1:]
            if path == "" and words == ["COMMAND", "--help"]:
                continue
            parser.parse_args(words)
