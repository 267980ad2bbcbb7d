"""README for a newcomer (issue 17, item 6): an Install section with the one command under the distribution's
real name, then the two commands that show the product, then the rest — in that order."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _sections() -> dict[str, str]:
    text = (ROOT / "README.md").read_text()
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_install_comes_first_with_the_one_command_under_the_real_name() -> None:
    dist = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]
    sections = _sections()
    assert list(sections)[:4] == ["Install", "Two commands", "Between two machines", "Using it"], list(sections)
    install = sections["Install"]
    for tool in (f"pipx install {dist}", f"uv tool install {dist}", f"pip install {dist}"):
        assert tool in install, tool
    assert "p2pd completion bash" in install and "p2pd man" in install


def test_the_two_commands_are_the_demo_and_a_handover() -> None:
    two = _sections()["Two commands"]
    commands = [line.split("#")[0].strip() for line in two.splitlines() if line.startswith("p2pd ")]
    assert commands == ["p2pd demo", "p2pd send latest", "p2pd receive 7-amber-lotus --import"], commands


def test_using_it_comes_before_the_daemon_and_the_exit_codes_with_it() -> None:
    names = list(_sections())
    assert names.index("Using it") < names.index("The daemon") < names.index("Browser")
    assert "### Exit codes" in _sections()["Using it"]
