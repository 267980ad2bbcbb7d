"""The daemon's commands: ``p2pd serve``, ``transfers``, ``inbox``, ``handoffs``, and ``send --to DEVICE``. All but
``serve`` talk to the running daemon through :class:`p2pd.daemon.client.DaemonClient`; without one they say how to
start it. Records the daemon returns hold peer text (titles, device names, errors): they are printed through
:func:`p2pd.cli.output.shown`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from p2pd.cli import options
from p2pd.cli.output import err, escape, human, print_json, print_rows, show_record, shown, when
from p2pd.errors import ExitCode

if TYPE_CHECKING:  # httpx: imported by the commands that talk to the daemon, not by the parser
    from p2pd.daemon.client import DaemonClient


def register(sub: Any) -> None:
    s = sub.add_parser("serve", help="run the daemon: local HTTP API, MCP endpoint, inbox, handoffs")
    s.add_argument("--port", type=int, default=None, help="HTTP port (default: config 'port' or 8737; 0 = any)")
    s.add_argument("--host", default=None, help="address to bind (default 127.0.0.1; others need allow_remote)")
    s.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host (the token is then "
                   "the only protection)")
    s.add_argument("--print-systemd-unit", action="store_true", help="print the systemd user unit and exit")
    s.add_argument("-v", "--verbose", action="store_true", help="log what the daemon does")
    s.set_defaults(func=cmd_serve)

    s = sub.add_parser("transfers", help="transfers of the running daemon (list, show one, cancel)")
    s.add_argument("id", nargs="?", help="a transfer id: show it")
    s.add_argument("--cancel", action="store_true", help="cancel the transfer ID")
    s.add_argument("--wait", type=float, default=0.0, help="with ID: wait up to N seconds for it to finish")
    s.add_argument("--state", choices=["queued", "running", "done", "failed", "cancelled", "interrupted"])
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=cmd_transfers)

    s = sub.add_parser("inbox", help="conversations received by the daemon (list, show, import, rm), and "
                       "transfers waiting for your decision (accept, decline)")
    s.add_argument("action", nargs="?", choices=["list", "show", "import", "rm", "accept", "decline"],
                   default="list")
    s.add_argument("id", nargs="?", help="an inbox id (show, import, rm) or a pending transfer id (accept, decline)")
    options.add_agent(s, "the agent to import into (import; default: claude-code)")
    s.add_argument("--cwd", help="project folder to resume in (import; default: the conversation's, if it exists)")
    s.add_argument("--same-account", action="store_true", help="keep thinking blocks on import")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    options.usage_error(s)
    s.set_defaults(func=cmd_inbox)

    s = sub.add_parser("handoffs", help="handoffs of the running daemon (list, show, cancel, stats)")
    s.add_argument("action", nargs="?", choices=["list", "show", "cancel", "stats"], default="list")
    s.add_argument("id", nargs="?", help="a handoff id (show, cancel)")
    s.add_argument("--state", choices=["pending", "claimed", "started", "completed", "failed", "cancelled"])
    s.add_argument("--json", action="store_true", help="machine-readable output")
    options.usage_error(s)
    s.set_defaults(func=cmd_handoffs)


def cmd_serve(args: argparse.Namespace) -> int:
    from p2pd.daemon.serve import cmd_serve as serve  # the whole daemon: only for `p2pd serve`

    return serve(args)


def _client(why: str) -> DaemonClient:
    from p2pd.daemon.client import DaemonClient

    return DaemonClient.connect(why=why)


def _need_id(args: argparse.Namespace, what: str) -> str:
    if not args.id:
        args.usage(f"{what} needs an id")  # a usage error: exit 2, like argparse's own
    return str(args.id)


def cmd_transfers(args: argparse.Namespace) -> int:
    with _client("transfers are the daemon's") as c:
        if args.id and args.cancel:
            row = c.post(f"/transfers/{args.id}/cancel", {"reason": "cancelled from the command line"})
        elif args.id:
            row = c.request("GET", f"/transfers/{args.id}", params={"wait": args.wait} if args.wait else None,
                            timeout=args.wait + 30)
        else:
            rows = c.get("/transfers", state=args.state)
            return print_rows(rows, as_json=args.json, empty="No transfers yet.",
                              columns=("id", "dir", "peer", "state", "title", "progress", "updated"),
                              cells=lambda t: (shown(t["id"]), t["direction"], shown(t["peer"]), t["state"],
                                               shown(t["title"]),
                                               f"{human(t['bytes_done'])}/{human(t['size'])}" if t["size"] else "",
                                               when(t["updated_at"])))
    if args.json:
        print_json(row)
    else:
        show_record(row)
    return ExitCode.OK


def cmd_inbox(args: argparse.Namespace) -> int:
    with _client("the inbox is the daemon's") as c:
        if args.action == "list":
            pending = c.get("/inbox/pending")
            if pending and not args.json:
                err.print("Waiting for your decision (`p2pd inbox accept ID` or `p2pd inbox decline ID`):")
                print_rows(pending, as_json=False, empty="",
                           columns=("id", "from", "title", "size", "since"),
                           cells=lambda t: (shown(t["id"]), shown(t["detail"].get("device") or t["peer"]),
                                            shown(t["title"]), human(t["detail"].get("raw_size") or t["size"]),
                                            when(t["created_at"])))
            return print_rows(c.get("/inbox"), as_json=args.json,
                              empty="The inbox is empty. Receive with `p2pd receive CODE`, or have a paired device "
                                    "send here.",
                              columns=("id", "from", "platform", "title", "msgs", "received", "imported"),
                              cells=lambda e: (shown(e["id"]), shown(e["from_peer"]), shown(e["platform"]),
                                               shown(e["title"]),
                                               str(e["messages"]), when(e["received_at"]),
                                               "yes" if e["imported"] else ""))
        ident = _need_id(args, f"inbox {args.action}")
        if args.action in ("accept", "decline"):
            row = c.post(f"/transfers/{ident}/{args.action}", {})
            if not args.json:
                err.print(f"{'Accepted' if args.action == 'accept' else 'Declined'} {escape(ident)} "
                          f"({shown(row['title'])}): {row['state']}.")
                return ExitCode.OK
        elif args.action == "show":
            row = c.get(f"/inbox/{ident}")
        elif args.action == "import":
            row = c.post(f"/inbox/{ident}/import", {"to": args.agent, "cwd": args.cwd,
                                                     "same_account": args.same_account})
            if not args.json:
                for w in row.get("warnings", []):
                    err.print(f"[yellow]note[/]: {shown(w)}")
                err.print(f"Imported as session {shown(row['session_id'])}: {escape(str(row['path']))}")
                err.print("  resume with:")
                print(row["resume_command"])
                return ExitCode.OK
        else:
            row = c.delete(f"/inbox/{ident}")
            if not args.json:
                err.print(f"Removed {escape(ident)} ({shown(row['title'])}) and its file.")
                return ExitCode.OK
    if args.json:
        print_json(row)
    else:
        show_record(row)
    return ExitCode.OK


def cmd_handoffs(args: argparse.Namespace) -> int:
    with _client("handoffs are the daemon's") as c:
        if args.action == "stats":
            row = c.get("/stats")
        elif args.action == "list":
            return print_rows(c.get("/handoffs", state=args.state), as_json=args.json,
                              empty="No handoffs yet (agents make them with the `handoff` MCP tool).",
                              columns=("id", "state", "target", "claimed by", "title", "created"),
                              cells=lambda h: (shown(h["id"]), h["state"], shown(h["target"]),
                                               shown(h["claimed_by"] or ""),
                                               shown(h["title"]), when(h["created_at"])))
        elif args.action == "show":
            row = c.get(f"/handoffs/{_need_id(args, 'handoffs show')}")
        else:
            row = c.post(f"/handoffs/{_need_id(args, 'handoffs cancel')}/cancel",
                         {"reason": "cancelled from the command line"})
    if args.json:
        print_json(row)
    else:
        show_record(row)
    return ExitCode.OK


def send_via_daemon(args: argparse.Namespace) -> int:
    """``p2pd send SESSION --to DEVICE``: device sends are the daemon's (it holds the pairing and the network)."""
    to = {"link": args.link} if args.link else {"device": args.to}
    with _client("sends to a paired device go through the daemon") as c:
        body: dict[str, Any] = {"session": args.session, "to": to, "redact": args.redact,
                                "wait": min(args.timeout, 600.0)}
        row = c.post("/send", body, timeout=args.timeout + 30)
    siblings = row.get("detail", {}).get("link_transfers") or [row["id"]]
    err.print(f"Transfer {shown(row['id'])} to {shown(args.link or args.to)}: {row['state']}"
              f"{' — ' + shown(row['error']) if row.get('error') else ''}"
              + (f" (and {len(siblings) - 1} more to the link's other members)" if len(siblings) > 1 else ""))
    for ident in siblings:
        print(ident)
    if row["state"] == "done":
        return ExitCode.OK
    if row["state"] in ("failed", "cancelled"):
        return ExitCode.TRANSFER_FAILED
    err.print(f"Still under way: `p2pd transfers {shown(row['id'])}` shows it.")
    return ExitCode.OK
