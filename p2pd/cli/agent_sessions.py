"""The agent-session commands, through the running daemon: ``p2pd delegate`` (fork a session into a folder or a
new git worktree, seed 002), ``p2pd delegations`` (list, show, start, message) and ``p2pd session-links`` (links
between agent sessions, seed 003: list, create, sever, close, and a session's messages). What the daemon returns
holds agents' and peers' text: it is printed through :func:`p2pd.cli.output.shown`."""

from __future__ import annotations

import argparse
from typing import Any

from p2pd.cli import options
from p2pd.cli.output import err, escape, print_json, print_rows, show_record, shown, when
from p2pd.errors import ExitCode


def register(sub: Any) -> None:
    from p2pd.agents.registry import import_targets

    s = sub.add_parser("delegate", help="fork an agent session into a new local session in a folder or a new git "
                       "worktree (and start the agent there)")
    s.add_argument("session", nargs="?", help="the session to fork (id; default: the one the hook recorded for "
                   "--cwd)")
    where = s.add_mutually_exclusive_group(required=True)
    where.add_argument("--dir", dest="directory", help="an existing folder for the new session")
    where.add_argument("--branch", help="a new git worktree on this new branch")
    s.add_argument("--base", help="--branch: what the branch starts from (default HEAD)")
    s.add_argument("--path", help="--branch: where the worktree goes (default: beside the repository)")
    s.add_argument("--cwd", help="the session's folder (default: this one)")
    s.add_argument("--prompt", default="", help="the new session's task")
    s.add_argument("--agent", choices=import_targets(),
                   help="the agent the fork is imported into (default: the parent's; Claude Code otherwise)")
    s.add_argument("--start", action="store_true", help="start the agent there (needs delegate_command)")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=cmd_delegate)

    s = sub.add_parser("delegations", help="delegated sessions: list, show, start, message")
    s.add_argument("action", nargs="?", choices=["list", "show", "start", "message"], default="list")
    s.add_argument("id", nargs="?", help="a delegation id")
    s.add_argument("text", nargs="?", help="message: the text for the delegated session")
    s.add_argument("--prompt", help="start: the prompt for this run")
    s.add_argument("--parent", help="list: only the delegations of this session")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    options.usage_error(s)
    s.set_defaults(func=cmd_delegations)

    s = sub.add_parser("session-links", help="links between agent sessions: list, create, sever, close, messages, "
                       "limits")
    s.add_argument("action", nargs="?", choices=["list", "create", "sever", "close", "messages", "limits"],
                   default="list")
    s.add_argument("id", nargs="?", help="a link id (sever, close) or a session id (messages)")
    s.add_argument("--session", help="create: the session making the link; sever: the session leaving it; "
                   "list: only this session's links")
    s.add_argument("--with", dest="members", action="append", default=[], metavar="SESSION[@DEVICE]",
                   help="create: a member (a session here, or on a paired device); repeat for more")
    s.add_argument("--name", default="", help="create: a name for the link")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    options.usage_error(s)
    s.set_defaults(func=cmd_session_links)


def _client() -> Any:
    from p2pd.daemon.client import DaemonClient

    return DaemonClient.connect(why="delegations and session links are the daemon's")


def _show(row: Any, as_json: bool) -> int:
    if as_json:
        print_json(row)
    else:
        show_record(row)
    return ExitCode.OK


def cmd_delegate(args: argparse.Namespace) -> int:
    import os

    body = {"session_id": args.session, "cwd": args.cwd or os.getcwd(), "directory": args.directory,
            "branch": args.branch, "base": args.base, "path": args.path, "prompt": args.prompt, "start": args.start,
            "agent": args.agent}
    with _client() as c:
        row = c.post("/delegations", body, timeout=300)
    if args.json:
        print_json(row)
        return ExitCode.OK
    err.print(f"Delegated to session {escape(row['session_id'])} in {escape(row['cwd'])} ({row['state']}); "
              f"delegation {escape(row['id'])}")
    print(row["resume_command"])
    return ExitCode.OK


def cmd_delegations(args: argparse.Namespace) -> int:
    with _client() as c:
        if args.action == "list":
            return print_rows(c.get("/delegations", parent_session=args.parent), as_json=args.json,
                              empty="No delegations yet (agents make them with the `delegate` MCP tool).",
                              columns=("id", "state", "session", "parent", "folder", "created"),
                              cells=lambda d: (shown(d["id"]), d["state"], shown(d["session_id"]),
                                               shown(d["parent_session"] or ""), shown(d["cwd"]),
                                               when(d["created_at"])))
        if not args.id:
            args.usage(f"delegations {args.action} needs an id")
        if args.action == "show":
            row = c.get(f"/delegations/{args.id}")
        elif args.action == "start":
            row = c.post(f"/delegations/{args.id}/start", {"prompt": args.prompt}, timeout=60)
        else:
            if not args.text:
                args.usage("delegations message needs the text")
            row = c.post(f"/delegations/{args.id}/message", {"text": args.text})
    return _show(row, args.json)


def _member(text: str) -> dict[str, Any]:
    session, _, device = text.partition("@")
    return {"session": session, "device": device or None}


def _limits(view: dict[str, Any], as_json: bool) -> int:
    """What paired devices may push into session links here, and what each pushed since the daemon started."""
    if as_json:
        print_json(view)
        return ExitCode.OK
    err.print("Limits per paired device: " + ", ".join(f"{k} {v:g}" for k, v in view["limits"].items()))
    return print_rows(view["devices"], as_json=False, empty="No paired device sent session-link messages.",
                      columns=("device", "received", "filed", "dropped", "refused", "queued for it"),
                      cells=lambda d: (shown(d["name"]), str(d.get("received", 0)), str(d.get("filed", 0)),
                                       str(d.get("dropped", 0) + d.get("links_dropped", 0)),
                                       ", ".join(f"{k} {n}" for k, n in sorted(d.get("refused", {}).items()))
                                       or "0", str(d["queued"])))


def cmd_session_links(args: argparse.Namespace) -> int:
    with _client() as c:
        if args.action == "list":
            return print_rows(c.get("/session-links", session=args.session), as_json=args.json,
                              empty="No session links (agents make them with the `link_sessions` MCP tool).",
                              columns=("id", "state", "name", "members"),
                              cells=lambda v: (shown(v["id"]), v["state"], shown(v["name"]), ", ".join(
                                  shown(f"{m['session'][:8]}@{m['device_name']}" + (" (left)" if m["left"] else ""))
                                  for m in v["members"])))
        if args.action == "create":
            if not args.session or not args.members:
                args.usage("session-links create needs --session SESSION and at least one --with SESSION[@DEVICE]")
            row = c.post("/session-links", {"session_id": args.session, "members": [_member(m) for m in args.members],
                                            "name": args.name})
        elif args.action == "limits":
            return _limits(c.get("/session-links/limits"), args.json)
        elif args.action == "messages":
            if not args.id:
                args.usage("session-links messages needs a session id")
            return print_rows(c.get(f"/sessions/{args.id}/messages"), as_json=args.json,
                              empty="No messages for this session.", columns=("from", "via", "text", "when"),
                              cells=lambda m: (shown(m["from_session"] or ""), shown(m["ref"] or m["kind"]),
                                               shown(m["text"], 80), when(m["created_at"])))
        else:
            if not args.id:
                args.usage(f"session-links {args.action} needs a link id")
            if args.action == "close":
                row = c.post(f"/session-links/{args.id}/close")
            else:
                if not args.session:
                    args.usage("session-links sever needs --session SESSION (the member leaving)")
                row = c.post(f"/session-links/{args.id}/sever", {"session_id": args.session})
    return _show(row, args.json)
