"""The examples every command's ``--help`` ends with, kept in one table so they read alike; :func:`attach` puts them
under each command's parser (a command without examples fails tests/cli/test_examples.py)."""

from __future__ import annotations

import argparse

EXAMPLES: dict[str, list[tuple[str, str]]] = {
    "": [
        ("p2pd demo", "see a conversation handed over on this machine"),
        ("p2pd send latest", "on machine A: prints a code such as 7-amber-lotus"),
        ("p2pd receive 7-amber-lotus --import", "on machine B: receive it and import it for resume"),
        ("p2pd COMMAND --help", "options and examples of a command"),
    ],
    "sessions": [
        ("p2pd sessions", "Claude Code, Codex and Gemini sessions, newest first"),
        ("p2pd sessions --platform codex --limit 5", "the five newest Codex sessions"),
        ("p2pd sessions --json", "for scripts"),
    ],
    "export": [
        ("p2pd export latest -o work.a2a.json", "the newest session as a conversation document"),
        ("p2pd export 4d5611e5 --redact", "by id prefix, secrets masked"),
        ("p2pd export latest --compressed", "the compressed wire blob (.a2a.p2pd)"),
    ],
    "import": [
        ("p2pd import work.a2a.json --cwd ~/src/project", "prints the command that resumes it"),
        ("p2pd import rollout.jsonl --to claude-code", "a Codex session into Claude Code"),
        ("p2pd import work.a2a.json --dry-run", "show what it would write"),
    ],
    "convert": [
        ("p2pd convert session.jsonl out.a2a.json", "a transcript to a conversation document"),
        ("p2pd convert out.a2a.json back.jsonl --keep-ids", "back, giving the original lines exactly"),
    ],
    "show": [
        ("p2pd show work.a2a.json", "read a conversation: turns, tool calls folded, summary"),
        ("p2pd show latest --full", "a session, nothing folded"),
    ],
    "send": [
        ("p2pd send latest", "prints a code for the receiver"),
        ("p2pd send 4d5611e5 --code 7-amber-lotus", "a code agreed with the receiver"),
        ("p2pd send latest --to laptop", "to a paired device, no code (through the daemon)"),
        ("P2PD_SIGNAL=wss://example.org/ p2pd send latest --redact", "your server, secrets masked"),
    ],
    "receive": [
        ("p2pd receive 7-amber-lotus", "the code the sender printed"),
        ("p2pd receive 7-amber-lotus --import --cwd ~/src/project", "and import it for resume"),
        ("p2pd receive", "make a code for `p2pd send … --code`"),
        ("p2pd receive --file conv.a2a.json --import", "the sender's fallback file"),
    ],
    "demo": [
        ("p2pd demo", "a sample session, across three processes on this machine"),
        ("p2pd demo ~/.claude/projects/-home-me-src/4d5611e5.jsonl", "one of your sessions"),
    ],
    "serve": [
        ("p2pd serve", "run the daemon (HTTP API and MCP on 127.0.0.1:8737)"),
        ("mkdir -p ~/.config/systemd/user && p2pd serve --print-systemd-unit > ~/.config/systemd/user/p2pd.service",
         "install it as a user service, then: systemctl --user daemon-reload && systemctl --user enable --now p2pd"),
    ],
    "transfers": [
        ("p2pd transfers", "what the daemon sent and received"),
        ("p2pd transfers ID --wait 60", "one transfer, waiting for it to finish"),
        ("p2pd transfers ID --cancel", "stop it"),
    ],
    "gc": [
        ("p2pd gc --dry-run", "what the outbox and partial receives hold that nothing needs"),
        ("p2pd gc", "remove it"),
    ],
    "inbox": [
        ("p2pd inbox", "received conversations"),
        ("p2pd inbox import ID --cwd ~/src/project", "import one for resume"),
        ("p2pd inbox rm ID", "remove one and its file"),
    ],
    "handoffs": [
        ("p2pd handoffs", "handoffs and their states"),
        ("p2pd handoffs show ID", "one handoff"),
        ("p2pd handoffs stats", "counts by state"),
    ],
    "hook": [
        ("p2pd hook install", "tell each Claude Code session P2PD_URL and its id; link and delegation messages"),
        ("p2pd hook uninstall", "remove the hooks"),
    ],
    "delegate": [
        ("p2pd delegate --branch fix-parser --prompt 'split the parser'", "fork the session the hook recorded "
         "here into a new git worktree; prints its resume command"),
        ("p2pd delegate 4d5611e5-… --dir ~/src/other --start", "into a folder, and start the agent there"),
    ],
    "delegations": [
        ("p2pd delegations", "the delegated sessions and their state"),
        ("p2pd delegations message dg_1a2b 'also update the docs'", "shown to it at its next prompt"),
    ],
    "session-links": [
        ("p2pd session-links", "links between agent sessions, their members and state"),
        ("p2pd session-links create --session 4d5611e5-… --with 9b1c07aa-…@laptop", "link with a session on a "
         "paired device"),
        ("p2pd session-links sever slink-1a2b --session 9b1c07aa-…", "that session leaves the link"),
    ],
    "pair": [
        ("p2pd pair", "on machine A: prints a code"),
        ("p2pd pair 7-guitar-meadow", "on machine B: both remember each other"),
    ],
    "devices": [
        ("p2pd devices", "paired devices, online or not"),
        ("p2pd devices rename ID laptop", "give one a name"),
        ("p2pd devices name desk", "this device's name"),
    ],
    "links": [
        ("p2pd links create team laptop desk", "a link: send to several devices at once"),
        ("p2pd send latest --link LINK", "fan-out to every other member"),
        ("p2pd links leave LINK", "leave it"),
    ],
    "completion": [
        ("p2pd completion bash > ~/.local/share/bash-completion/completions/p2pd", "bash"),
        ("p2pd completion zsh > ~/.zfunc/_p2pd", "zsh (with fpath+=~/.zfunc before compinit)"),
        ("p2pd completion fish > ~/.config/fish/completions/p2pd.fish", "fish"),
    ],
    "man": [
        ("p2pd man | man -l -", "read the manual page"),
        ("p2pd man > ~/.local/share/man/man1/p2pd.1", "install it for `man p2pd`"),
    ],
}


def epilog(command: str) -> str:
    lines = ["examples:"]
    for line, what in EXAMPLES[command]:
        lines += [f"  {line}", f"      {what}"]
    return "\n".join(lines)


def attach(parser: argparse.ArgumentParser, command: str = "") -> None:
    """Give ``parser`` and each of its commands their examples (kept verbatim: the raw description formatter)."""
    if command in EXAMPLES:
        parser.epilog = epilog(command)
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                attach(sub, f"{command} {name}".strip())
