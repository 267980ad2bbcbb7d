"""The daemon's CLI commands (registered by ``p2pd/cli.py``): ``serve``, ``transfers``, ``inbox``, ``handoffs``,
``hook``, and ``send --to DEVICE``. All but ``serve`` and ``hook`` talk to the running daemon; without one they say
how to start it."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from p2pd.daemon.client import DaemonClient
from p2pd.errors import ExitCode


def register(sub: Any) -> None:
    from p2pd.agents.registry import import_targets
    from p2pd.daemon.serve import cmd_serve

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

    s = sub.add_parser("inbox", help="conversations received by the daemon (list, show, import, rm)")
    s.add_argument("action", nargs="?", choices=["list", "show", "import", "rm"], default="list")
    s.add_argument("id", nargs="?", help="an inbox id (show, import, rm)")
    s.add_argument("--to", choices=import_targets(), default="claude-code", help="agent to import into")
    s.add_argument("--cwd", help="project folder to resume in (import; default: the conversation's, if it exists)")
    s.add_argument("--same-account", action="store_true", help="keep thinking blocks on import")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=cmd_inbox)

    s = sub.add_parser("handoffs", help="handoffs of the running daemon (list, show, cancel, stats)")
    s.add_argument("action", nargs="?", choices=["list", "show", "cancel", "stats"], default="list")
    s.add_argument("id", nargs="?", help="a handoff id (show, cancel)")
    s.add_argument("--state", choices=["pending", "claimed", "started", "completed", "failed", "cancelled"])
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=cmd_handoffs)

    from p2pd.daemon.hook import register as register_hook

    register_hook(sub)


def _client(why: str) -> DaemonClient:
    return DaemonClient.connect(why=why)


def _print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=1))


def print_rows(rows: list[dict[str, Any]], *, as_json: bool, empty: str, columns: tuple[str, ...],
               cells: Callable[[dict[str, Any]], tuple[str, ...]]) -> int:
    """A list command's output: the rows as JSON, one line saying there are none, or a table."""
    from rich.table import Table

    from p2pd.cli.main import err, out

    if as_json:
        _print_json(rows)
    elif not rows:
        err.print(empty)
    else:
        table = Table()
        for name in columns:
            _column(table, name)
        for row in rows:
            table.add_row(*cells(row))
        out.print(table)
    return ExitCode.OK


def _when(timestamp: str) -> str:
    return timestamp.replace("T", " ")[:19]


def _need_id(args: argparse.Namespace, what: str) -> str:
    from p2pd.errors import InvalidInputError

    if not args.id:
        raise InvalidInputError(f"{what} needs an id")
    return str(args.id)


def cmd_transfers(args: argparse.Namespace) -> int:

    from p2pd.cli.main import _escape, _human

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
                              cells=lambda t: (t["id"], t["direction"], t["peer"], t["state"], _escape(t["title"]),
                                               f"{_human(t['bytes_done'])}/{_human(t['size'])}" if t["size"] else "",
                                               _when(t["updated_at"])))
    if args.json:
        _print_json(row)
    else:
        _show_record(row)
    return ExitCode.OK


def cmd_inbox(args: argparse.Namespace) -> int:

    from p2pd.cli.main import _escape, err

    with _client("the inbox is the daemon's") as c:
        if args.action == "list":
            return print_rows(c.get("/inbox"), as_json=args.json,
                              empty="The inbox is empty. Receive with `p2pd receive CODE`, or have a paired device "
                                    "send here.",
                              columns=("id", "from", "platform", "title", "msgs", "received", "imported"),
                              cells=lambda e: (e["id"], e["from_peer"], e["platform"], _escape(e["title"]),
                                               str(e["messages"]), _when(e["received_at"]),
                                               "yes" if e["imported"] else ""))
        ident = _need_id(args, f"inbox {args.action}")
        if args.action == "show":
            row = c.get(f"/inbox/{ident}")
        elif args.action == "import":
            row = c.post(f"/inbox/{ident}/import", {"to": args.to, "cwd": args.cwd, "same_account": args.same_account})
            if not args.json:
                for w in row.get("warnings", []):
                    err.print(f"[yellow]note[/]: {_escape(w)}")
                err.print(f"Imported as session {row['session_id']}: {row['path']}")
                err.print("  resume with:")
                print(row["resume_command"])
                return ExitCode.OK
        else:
            row = c.delete(f"/inbox/{ident}")
            if not args.json:
                err.print(f"Removed {ident} ({_escape(row['title'])}) and its file.")
                return ExitCode.OK
    if args.json:
        _print_json(row)
    else:
        _show_record(row)
    return ExitCode.OK


def cmd_handoffs(args: argparse.Namespace) -> int:

    from p2pd.cli.main import _escape

    with _client("handoffs are the daemon's") as c:
        if args.action == "stats":
            row = c.get("/stats")
        elif args.action == "list":
            return print_rows(c.get("/handoffs", state=args.state), as_json=args.json,
                              empty="No handoffs yet (agents make them with the `handoff` MCP tool).",
                              columns=("id", "state", "target", "claimed by", "title", "created"),
                              cells=lambda h: (h["id"], h["state"], h["target"], h["claimed_by"] or "",
                                               _escape(h["title"]), _when(h["created_at"])))
        elif args.action == "show":
            row = c.get(f"/handoffs/{_need_id(args, 'handoffs show')}")
        else:
            row = c.post(f"/handoffs/{_need_id(args, 'handoffs cancel')}/cancel",
                         {"reason": "cancelled from the command line"})
    if args.json:
        _print_json(row)
    else:
        _show_record(row)
    return ExitCode.OK


def send_via_daemon(args: argparse.Namespace) -> int:
    """``p2pd send SESSION --to DEVICE``: device sends are the daemon's (it holds the pairing and the network)."""
    from p2pd.cli.main import _escape, err

    to = {"link": args.link} if args.link else {"device": args.to}
    with _client("sends to a paired device go through the daemon") as c:
        body: dict[str, Any] = {"session": args.session, "to": to, "redact": args.redact,
                                "wait": min(args.timeout, 600.0)}
        row = c.post("/send", body, timeout=args.timeout + 30)
    siblings = row.get("detail", {}).get("link_transfers") or [row["id"]]
    err.print(f"Transfer {row['id']} to {_escape(args.link or args.to)}: {row['state']}"
              f"{' — ' + _escape(row['error']) if row.get('error') else ''}"
              + (f" (and {len(siblings) - 1} more to the link's other members)" if len(siblings) > 1 else ""))
    for ident in siblings:
        print(ident)
    if row["state"] == "done":
        return ExitCode.OK
    if row["state"] in ("failed", "cancelled"):
        return ExitCode.TRANSFER_FAILED
    err.print(f"Still under way: `p2pd transfers {row['id']}` shows it.")
    return ExitCode.OK


def _show_record(row: dict[str, Any]) -> None:
    from p2pd.cli.main import _escape, out

    for key, value in row.items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value, ensure_ascii=False)
        out.print(f"[bold]{key}[/]: {_escape(str(value))}")


def _column(table: Any, name: str) -> None:
    """Ids are never cut (they are what the next command needs); titles fold; the rest may be shortened."""
    if name == "id":
        table.add_column(name, no_wrap=True, min_width=19)
    else:
        table.add_column(name, overflow="fold" if name == "title" else "ellipsis")
