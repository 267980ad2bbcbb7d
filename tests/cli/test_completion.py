"""p2pd/cli/completion.py: ``p2pd completion bash|zsh|fish`` prints a script generated from the parser, and each
shell, running it for real, completes commands, options, option values and argument choices."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from p2pd.cli.completion import command_tree
from p2pd.cli.main import build_parser, main


def script(shell: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert main(["completion", shell]) == 0
    path = tmp_path / f"p2pd.{shell}"
    path.write_text(capsys.readouterr().out)
    return path


# (the words typed, the cursor on the last one) → what must be offered, and something that must not
CASES = [
    (["p2pd", "se"], {"send", "sessions", "serve"}, "receive"),
    (["p2pd", "--de"], {"--debug"}, "--code"),
    (["p2pd", "send", "--co"], {"--code", "--connect-timeout"}, "--codec"),
    (["p2pd", "export", "--codec", ""], {"lz4", "zstd"}, "--strict"),
    (["p2pd", "inbox", ""], {"list", "show", "import", "rm"}, "send"),
    (["p2pd", "inbox", "--to", "codex", "i"], {"import"}, "list"),
    (["p2pd", "receive", "7-amber-lotus", "--to", ""], {"claude-code", "codex"}, "gemini"),
    (["p2pd", "completion", ""], {"bash", "zsh", "fish"}, "send"),
]


def test_the_tree_mirrors_the_parser() -> None:
    tree = command_tree(build_parser())
    assert set(tree.commands) >= {"send", "receive", "demo", "completion", "devices"}
    send = {flag for option in tree.commands["send"].options for flag in option.flags}
    assert {"--code", "--signal", "--timeout", "--debug"} <= send
    assert tree.commands["hook"].words == ["install", "uninstall", "status", "session-start", "prompt-submit", "stop",
                                           "session-end"]


def test_bash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = script("bash", tmp_path, capsys)
    for words, offered, absent in CASES:
        line = " ".join(f"'{w}'" for w in words)
        r = subprocess.run(["bash", "-c", f'source {path}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; '
                            '_p2pd; printf "%s\\n" "${COMPREPLY[@]}"; complete -p p2pd'],
                           capture_output=True, text=True, timeout=30)
        got = set(r.stdout.split("\n")[:-2])
        assert offered <= got and absent not in got, (words, got, r.stderr)
        assert r.stdout.endswith("complete -o default -F _p2pd p2pd\n")


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed (.ci/setup installs it)")
def test_zsh(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = script("zsh", tmp_path, capsys)
    loaded = subprocess.run(["zsh", "-f", "-c", f"autoload -U compinit && compinit -u -d {tmp_path}/zcompdump; "
                             f"source {path}; print -r -- ${{_comps[p2pd]}}"], capture_output=True, text=True,
                            timeout=30)
    assert loaded.stdout.strip() == "_bash_complete -o default -F _p2pd", loaded.stderr
    for words, offered, absent in CASES:
        line = " ".join(f"'{w}'" for w in words)
        # as zsh's _bash_complete calls it (sh emulation); zsh's compadd then keeps the words matching the prefix
        r = subprocess.run(["zsh", "-f", "-c", f"source {path} 2>/dev/null; t() {{ emulate -L sh; "
                            f"setopt kshglob noshglob braceexpand; COMP_WORDS=({line}); "
                            f"COMP_CWORD={len(words) - 1}; _p2pd; printf '%s\\n' \"${{COMPREPLY[@]}}\"; }}; t"],
                           capture_output=True, text=True, timeout=30)
        got = {w for w in r.stdout.split() if w.startswith(words[-1])}
        assert offered <= got and absent not in got, (words, got, r.stderr)


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed (.ci/setup installs it)")
def test_fish(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = script("fish", tmp_path, capsys)
    for words, offered, absent in CASES:
        typed = " ".join(words)
        r = subprocess.run(["fish", "--no-config", "-c", f"source {path}; complete -C '{typed}'"],
                           capture_output=True, text=True, timeout=30, env={"HOME": str(tmp_path)})
        got = {line.split("\t")[0] for line in r.stdout.splitlines()}
        assert offered <= got and absent not in got, (words, got, r.stderr)
    described = subprocess.run(["fish", "--no-config", "-c", f"source {path}; complete -C 'p2pd sen'"],
                               capture_output=True, text=True, timeout=30, env={"HOME": str(tmp_path)})
    assert "send\tsend a conversation to another machine" in described.stdout
