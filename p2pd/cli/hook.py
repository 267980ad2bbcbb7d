"""``p2pd hook install|uninstall|status|session-start|prompt-submit|stop|session-end``: the command for the Claude
Code hooks (SessionStart, UserPromptSubmit, Stop, SessionEnd).

What the hook does (editing ``settings.json``, recording a starting session) is :mod:`p2pd.daemon.hook`; this
module reads the command line and stdin and says what happened.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from p2pd.cli.output import err, escape
from p2pd.errors import ExitCode, InvalidInputError


def register(sub: Any) -> None:
    s = sub.add_parser("hook", help="the Claude Code hooks (install, uninstall, status)")
    s.add_argument("action", choices=["install", "uninstall", "status", "session-start", "prompt-submit", "stop",
                                      "session-end"])
    s.add_argument("--settings", help="Claude Code settings file (default: $CLAUDE_CONFIG_DIR or ~/.claude, "
                   "settings.json)")
    s.set_defaults(func=cmd_hook)


def cmd_hook(args: argparse.Namespace) -> int:
    from p2pd.daemon.home import Home
    from p2pd.daemon.hook import MAX_INPUT, install, installed, session_start, settings_path, uninstall

    if args.action == "session-start":
        raw = sys.stdin.read(MAX_INPUT + 1)
        if len(raw) > MAX_INPUT:
            raise InvalidInputError("the hook input is larger than 1 MiB")
        output = session_start(raw, Home.default(), os.environ.get("CLAUDE_ENV_FILE") or None)
        print(json.dumps(output))
        return ExitCode.OK
    if args.action in ("prompt-submit", "stop", "session-end"):
        from p2pd.daemon.session_hooks import run_hook

        raw = sys.stdin.read(MAX_INPUT + 1)
        if len(raw) > MAX_INPUT:
            raise InvalidInputError("the hook input is larger than 1 MiB")
        print(json.dumps(run_hook(args.action, raw, Home.default())))
        return ExitCode.OK
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
