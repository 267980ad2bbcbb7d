"""The daemon's commands: ``p2pd serve``, ``transfers``, ``inbox``, ``handoffs``, and ``send --to DEVICE``. All but
``serve`` talk to the running daemon through :class:`p2pd.daemon.client.DaemonClient`; without one they say how to
start it. Records the daemon returns hold peer text (titles, device names, errors): they are printed through
:func:`p2pd.cli.output.shown`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from p2pd.cli import options
from p2pd.cli.device_send import waits_for_room
from p2pd.cli.output import err, escape, human, print_json, print_rows, show_record, shown, when
from p2pd.errors import ExitCode, InvalidInputError

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

    s = sub.add_parser("transfers", help="transfers of the running daemon (list, show one, cancel, retry)")
    s.add_argument("id", nargs="?", help="a transfer id: show it")
    action = s.add_mutually_exclusive_group()
    action.add_argument("--cancel", action="store_true", help="cancel the transfer ID")
    action.add_argument("--retry", action="store_true", help="send the transfer ID to its device now, when it waits "
                        "to be sent again (e.g. the device's disk had no room)")
    s.add_argument("--wait", type=float, default=0.0, help="with ID: wait up to N seconds for it to finish")
    s.add_argument("--state", choices=["queued", "running", "done", "failed", "cancelled", "interrupted", "verified",
                                       "cancelling"])
    s.add_argument("--json", action="store_true", help="machine-readable output")
    options.usage_error(s)
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

    register_gc(sub)

    s = sub.add_parser("handoffs", help="handoffs: made here (list, show, cancel, stats) and offered here by paired "
                       "devices (offered, claim, start, complete, fail)")
    s.add_argument("action", nargs="?", default="list",
                   choices=["list", "show", "cancel", "stats", "offered", "claim", "start", "complete", "fail"])
    s.add_argument("id", nargs="?", help="a handoff id (show, cancel, claim, start, complete, fail)")
    s.add_argument("--state", help="list/offered: only handoffs in this state")
    s.add_argument("--result", help="complete: what was done (the sender sees it)")
    s.add_argument("--reason", help="fail: why it could not be done (the sender sees it)")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    options.usage_error(s)
    s.set_defaults(func=cmd_handoffs)


def register_gc(sub: Any) -> None:
    s = sub.add_parser("gc", help="remove what the daemon's outbox and partial receives hold that nothing needs "
                       "(--dry-run: only show it)")
    s.add_argument("--dry-run", action="store_true", help="show what would be removed, remove nothing")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=cmd_gc)


def cmd_gc(args: argparse.Namespace) -> int:
    """Through the running daemon, else on its folder directly (the store is safe to share)."""
    from p2pd.daemon.client import DaemonClient

    client = DaemonClient.find()
    if client is not None:
        with client:
            report = client.post("/gc", {"dry_run": args.dry_run}, timeout=300)
    else:
        from p2pd.daemon.home import Home
        from p2pd.daemon.housekeeping import Limits, prune
        from p2pd.daemon.store import Store

        home = Home.default().ensure()
        report = prune(home.root, Store(home.db_path), Limits.configured(), everything=True, dry_run=args.dry_run)
    if args.json:
        print_json(report)
        return ExitCode.OK
    for item in report["items"]:
        print(f"{item['kind']}\t{human(item['size'])}\t{escape(item['path'])}")
    verb = "Would remove" if report["dry_run"] else "Removed"
    left = report["left"]
    err.print(f"{verb} {len(report['items'])} files ({human(report['freed'])}); "
              f"{'now ' if not report['dry_run'] else ''}outbox {human(left['outbox'])}, partial receives "
              f"{human(left['partial'])}.")
    dropped, read = report.get("session_messages_dropped", 0), report.get("delivered_messages_removed", 0)
    if dropped or read:
        err.print(f"Session links: {dropped} messages that waited too long for a device dropped, {read} messages "
                  "read long ago removed.")
    return ExitCode.OK


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
    if (args.cancel or args.retry) and not args.id:
        args.usage(f"--{'cancel' if args.cancel else 'retry'} needs a transfer id")
    with _client("transfers are the daemon's") as c:
        if args.id and args.cancel:
            row = c.post(f"/transfers/{args.id}/cancel", {"reason": "cancelled from the command line"})
        elif args.id and args.retry:
            row = c.post(f"/transfers/{args.id}/retry", {})
            err.print(f"Sending {shown(args.id)} again now (`p2pd transfers {shown(args.id)} --wait 60` follows it).")
        elif args.id:
            row = c.request("GET", f"/transfers/{args.id}", params={"wait": args.wait} if args.wait else None,
                            timeout=args.wait + 30)
        else:
            rows = c.get("/transfers", state=args.state)
            names = _device_names(c)
            return print_rows(rows, as_json=args.json, empty="No transfers yet.",
                              columns=("id", "dir", "peer", "state", "title", "progress", "updated"),
                              cells=lambda t: (shown(t["id"]), t["direction"], shown(names.get(t["peer"], t["peer"])),
                                               _state_cell(t),
                                               shown(t["title"]),
                                               f"{human(t['bytes_done'])}/{human(t['size'])}" if t["size"] else "",
                                               when(t["updated_at"])))
    if args.json:
        print_json(row)
    else:
        show_record(row)
        if row.get("state") == "cancelling":  # a transfer to a device: its receiver decides (DAEMON.md)
            print("cancelling: waiting for the receiving device's answer (asked again whenever it is back); it "
                  "ends cancelled, or done if the device had already received it")
        elif _filing_waits(row):  # committed here; this machine refused the filing
            print("verified: received and checked, and the sender was told so; filing it waits for this machine "
                  "(the error above). The daemon tries again by itself and at every start; the conversation is "
                  "kept in the daemon's partial/ folder meanwhile")
        elif _no_room_here(row):  # this machine's disk refused it; the sending device tries again (DAEMON.md)
            print("interrupted: this machine could not store it (the error above). The sending device sends it "
                  "again by itself; make room and it arrives")
        elif waits_for_room(row):  # the receiving device's disk refused it (DAEMON.md)
            print("interrupted: the receiving device could not store it (the error above). The daemon sends it "
                  "again by itself, and at once when the device connects again; once it has room, "
                  "`p2pd transfers ID --retry` sends it now, `p2pd transfers ID --cancel` gives up")
    return ExitCode.OK


def _no_room_here(row: dict[str, Any]) -> bool:
    """Whether a transfer from a device stopped because this machine's disk refused it (its sender tries again)."""
    return row.get("state") == "interrupted" and row.get("cause") == "storage" and row.get("direction") == "in"


def _filing_waits(row: dict[str, Any]) -> bool:
    """Whether a transfer was received and committed here, and this machine refused to file it yet."""
    return row.get("state") == "verified" and bool(row.get("error"))


def _state_cell(row: dict[str, Any]) -> str:
    """A transfer's state in the list; a committed one this machine could not file yet says so, and so does one
    the receiving device's disk refused."""
    if _filing_waits(row):
        return "verified, filing waits"
    if _no_room_here(row):
        return "interrupted, no room here"
    return "interrupted, no room there" if waits_for_room(row) else str(row["state"])


def cmd_inbox(args: argparse.Namespace) -> int:
    with _client("the inbox is the daemon's") as c:
        if args.action == "list":
            names = _device_names(c)

            def incoming(rows: list[dict[str, Any]], first: str) -> None:
                print_rows(rows, as_json=False, empty="", columns=(first, "from", "title", "size", "since"),
                           cells=lambda t: (shown(t["id"]),
                                            shown(names.get(t["peer"]) or t["detail"].get("device") or t["peer"]),
                                            shown(t["title"]), human(t["detail"].get("raw_size") or t["size"]),
                                            when(t["created_at"])))

            pending = c.get("/inbox/pending")
            if pending and not args.json:
                err.print("Waiting for your decision (`p2pd inbox accept ID` or `p2pd inbox decline ID`):")
                incoming(pending, "id")
            waiting = [t for t in c.get("/transfers", state="verified") if t["direction"] == "in" and _filing_waits(t)]
            if waiting and not args.json:  # received and checked, but this machine refused to file them yet
                err.print("Received, not filed yet (this machine refused; the daemon tries again by itself — "
                          "`p2pd transfers ID` says why):")
                incoming(waiting, "transfer")
            return print_rows(c.get("/inbox"), as_json=args.json,
                              empty="The inbox is empty. Receive with `p2pd receive CODE`, or have a paired device "
                                    "send here.",
                              columns=("id", "from", "platform", "title", "msgs", "received", "imported"),
                              cells=lambda e: (shown(e["id"]), shown(names.get(e["from_peer"], e["from_peer"])),
                                               shown(e["platform"]),
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


def _device_names(c: DaemonClient) -> dict[str, str]:
    """Paired devices' names by id, so tables show names rather than hex ids."""
    try:
        return {d["id"]: d["name"] for d in c.get("/devices")}
    except (KeyError, TypeError):
        return {}


def cmd_handoffs(args: argparse.Namespace) -> int:
    with _client("handoffs are the daemon's") as c:
        names = _device_names(c)

        def name(ident: str | None) -> str:
            return shown(names.get(ident or "", ident or ""))

        if args.action == "stats":
            row = c.get("/stats")
        elif args.action == "list":
            return print_rows(c.get("/handoffs", state=args.state), as_json=args.json,
                              empty="No handoffs yet (agents make them with the `handoff` MCP tool).",
                              columns=("id", "state", "target", "claimed by", "title", "created"),
                              cells=lambda h: (shown(h["id"]), h["state"], name(h["target"]),
                                               name(h["claimed_by"]),
                                               shown(h["title"]), when(h["created_at"])))
        elif args.action == "offered":
            return print_rows(c.get("/offers", state=args.state), as_json=args.json,
                              empty="No handoffs were offered to this device.",
                              columns=("id", "state", "from", "title", "summary", "offered"),
                              cells=lambda o: (shown(o["id"]), o["state"], name(o["from_device"]),
                                               shown(o["title"]), shown((o["summary"] or "")[:60]),
                                               when(o["offered_at"])))
        elif args.action == "show":
            row = c.get(f"/handoffs/{_need_id(args, 'handoffs show')}")
        elif args.action == "claim":
            hid = _need_id(args, "handoffs claim")
            row = c.post(f"/offers/{hid}/claim", {"wait": 20}, timeout=60)
        elif args.action == "start":
            row = c.post(f"/handoffs/{_need_id(args, 'handoffs start')}/start")
        elif args.action == "complete":
            if not args.result:
                raise InvalidInputError("handoffs complete needs --result TEXT (what was done)")
            row = c.post(f"/handoffs/{_need_id(args, 'handoffs complete')}/complete", {"result": args.result})
        elif args.action == "fail":
            if not args.reason:
                raise InvalidInputError("handoffs fail needs --reason TEXT")
            row = c.post(f"/handoffs/{_need_id(args, 'handoffs fail')}/fail", {"reason": args.reason})
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
    from p2pd.cli.device_send import send_via_daemon as follow_send

    return follow_send(args)
