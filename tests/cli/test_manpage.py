"""p2pd/cli/manpage.py: ``p2pd man`` prints p2pd(1) generated from the parser — every command, option, example,
exit code and configuration key — and man/groff render it without a warning."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from p2pd.cli.main import build_parser
from p2pd.cli.manpage import EXIT_MEANINGS, config_keys, page
from p2pd.errors import ExitCode
from tests.cli.helpers import run


def _parsers(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[f"{prefix} {name}".strip()] = sub
                found.update(_parsers(sub, f"{prefix} {name}".strip()))
    return found


def _plain(roff: str) -> str:
    """The page's text with its escapes undone (fonts, dashes, backslashes, non-ASCII characters, line guards)."""
    text = re.sub(r"\\f[BIR]|\\&", "", roff).replace("\\-", "-")
    text = re.sub(r"\\\[u([0-9A-F]{4})\]", lambda m: chr(int(m.group(1), 16)), text)
    return text.replace("\\e", "\\")


def _rendered(roff: str, tmp_path: Path) -> str:
    path = tmp_path / "p2pd.1"
    path.write_text(roff, encoding="ascii")  # man reads pages as ASCII: anything else must be escaped
    checked = subprocess.run(["groff", "-man", "-ww", "-z", str(path)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and checked.stderr == "", checked.stderr
    shown = subprocess.run(["man", "-l", str(path)], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "MANWIDTH": "100", "MANPAGER": "cat", "PAGER": "cat"})
    assert shown.returncode == 0, shown.stderr
    return re.sub(r".\x08", "", shown.stdout)  # overstrike bold/underline


def test_the_page_names_every_command_option_and_example() -> None:
    parser = build_parser()
    roff = page(parser)
    plain = _plain(roff)
    for name, sub in _parsers(parser).items():
        assert f".SS p2pd {name}\n" in plain, name
        for action in sub._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert flag in plain, (name, flag)
        for line in (sub.epilog or "").splitlines()[1:]:
            assert line.strip() in plain, (name, line)
    assert set(EXIT_MEANINGS) == set(ExitCode)
    for code in ExitCode:
        assert f".TP\n{int(code)}\n{EXIT_MEANINGS[code]}" in plain
    keys = dict((key, env) for key, env, _ in config_keys())
    assert keys["signal"] == "P2PD_SIGNAL" and keys["cors_origins"] == "" and len(keys) >= 10
    assert all(f"{key} (" in plain or key in plain for key in keys)


@pytest.mark.skipif(shutil.which("man") is None or shutil.which("groff") is None, reason="needs man and groff")
def test_p2pd_man_renders_without_a_warning(tmp_path: Path) -> None:
    r = run("man")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.startswith(".TH P2PD 1 ")
    text = _rendered(r.stdout, tmp_path)
    assert re.search(r"^NAME\n\s+p2pd - Hand an AI agent conversation", text, re.MULTILINE), text[:500]
    for heading in ("SYNOPSIS", "COMMANDS", "EXAMPLES", "EXIT STATUS", "ENVIRONMENT AND CONFIGURATION"):
        assert re.search(rf"^{heading}$", text, re.MULTILINE), heading
    assert re.search(r"^ {3}p2pd devices$", text, re.MULTILINE) and "{list,rename,remove,name}" in text
    assert "p2pd receive 7-amber-lotus --import" in text and "--connect-timeout SECONDS" in text
    assert "130    interrupted (Ctrl-C)" in text
    assert "\\[u" not in text and "\\e" not in text  # every escape was understood
