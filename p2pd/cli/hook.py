"""``p2pd hook install|uninstall|status|session-start|prompt-submit|stop|session-end``: the command for the agent
hooks (SessionStart, UserPromptSubmit, Stop, SessionEnd) of Claude Code (default) and Codex CLI (``--agent codex``).

What the hook does (editing ``settings.json`` or ``hooks.json``, recording a starting session) is
:mod:`p2pd.daemon.hook` and :mod:`p2pd.daemon.codex_hooks`; this module reads the command line and stdin and says
what happened. The event commands take either agent's input (told apart by its fields).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from p2pd.cli.output import err, escape
from p2pd.errors import ExitCode, InvalidInputError

AGENTS = ("claude-code", "codex")


def register(sub: Any) -> None:
    s = sub.add_parser("hook", help="the agent hooks of Claude Code or Codex (install, uninstall, status)")
    s.add_argument("action", choices=["install", "uninstall", "status", "session-start", "prompt-submit", "stop",
                                      "session-end"])
    s.add_argument("--agent", choices=AGENTS, default="claude-code",
                   help="whose hooks install/uninstall/status edit (default: claude-code)")
    s.add_argument("--settings", help="the hooks file: Claude Code's settings.json (default: $CLAUDE_CONFIG_DIR or "
                   "~/.claude), or Codex's hooks.json (default: $CODEX_HOME or ~/.codex)")
    s.add_argument("--no-trust", action="store_true",
                   help="codex: do not record Codex's trust in the p2pd hooks (approve them in Codex's /hooks)")
    s.set_defaults(func=cmd_hook)


def _stdin() -> str:
    from p2pd.daemon.hook import MAX_INPUT

    raw = sys.stdin.read(MAX_INPUT + 1)
    if len(raw) > MAX_INPUT:
        raise InvalidInputError("the hook input is larger than 1 MiB")
    return raw


def cmd_hook(args: argparse.Namespace) -> int:
    from p2pd.daemon.home import Home

    if args.action == "session-start":
        from p2pd.daemon.hook import session_start

        env_file = os.environ.get("CODEX_ENV_FILE") or os.environ.get("CLAUDE_ENV_FILE") or None
        print(json.dumps(session_start(_stdin(), Home.default(), env_file)))
        return ExitCode.OK
    if args.action in ("prompt-submit", "stop", "session-end"):
        from p2pd.daemon.session_hooks import run_hook

        print(json.dumps(run_hook(args.action, _stdin(), Home.default())))
        return ExitCode.OK
    if args.agent == "codex":
        return _codex(args)
    from p2pd.daemon.hook import install, installed, settings_path, uninstall

    path = settings_path(args.settings)
    where = escape(str(path))
    if args.action == "install":
        verb = "Installed" if install(path) else "Already installed:"
        err.print(f"{verb} the p2pd hooks (SessionStart, UserPromptSubmit, Stop, SessionEnd) in {where}")
        return ExitCode.OK
    if args.action == "uninstall":
        n = uninstall(path)
        err.print(f"Removed {n} p2pd hook(s) from {where}" if n else f"No p2pd hook in {where}")
        return ExitCode.OK
    commands = installed(path)
    if commands:
        for c in commands:
            print(c)
        err.print(f"installed in {where}")
    else:
        err.print(f"not installed in {where} (run `p2pd hook install`)")
    return ExitCode.OK


def _codex(args: argparse.Namespace) -> int:
    from p2pd.daemon.codex_hooks import config_path, hooks_path, install_codex, status, uninstall_codex

    path = hooks_path(args.settings)
    where, cfg = escape(str(path)), escape(str(config_path(path)))
    if args.action == "install":
        changed, trusted = install_codex(path, record_trust=not args.no_trust)
        verb = "Installed" if changed else "Already installed:"
        err.print(f"{verb} the p2pd hooks (SessionStart, UserPromptSubmit, Stop, SessionEnd) in {where}")
        if args.no_trust:
            err.print("Codex runs them once approved: open `codex`, type /hooks and trust the four p2pd hooks")
        elif trusted:
            err.print(f"Recorded Codex's trust in them in {cfg} (`p2pd hook uninstall --agent codex` removes both)")
        return ExitCode.OK
    if args.action == "uninstall":
        n = uninstall_codex(path)
        err.print(f"Removed {n} p2pd hook(s) from {where}" if n else f"No p2pd hook in {where}")
        return ExitCode.OK
    rows = status(path)
    for hook, state in rows:
        print(f"{hook.event}\t{state}\t{hook.command}")
    if not rows:
        err.print(f"not installed in {where} (run `p2pd hook install --agent codex`)")
    elif any(state != "trusted" for _, state in rows):
        err.print(f"installed in {where}; Codex runs only trusted hooks (run `p2pd hook install --agent codex` "
                  "or approve them in Codex's /hooks)")
    else:
        err.print(f"installed in {where}, trusted in {cfg}")
    return ExitCode.OK
