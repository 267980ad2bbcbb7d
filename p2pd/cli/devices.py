"""CLI commands for devices and links: ``p2pd pair``, ``p2pd devices``, ``p2pd links``.

``pair`` and ``devices`` work with or without the daemon (they edit ``devices.json``, which a running daemon
notices within a second); ``devices`` shows who is online when the daemon runs. ``links`` needs the daemon,
since every change is told to the other members.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from p2pd.cli import options
from p2pd.cli.output import CliUI, err, escape, print_rows, run, shown
from p2pd.errors import ExitCode


def register(sub: Any) -> None:
    s = sub.add_parser("pair", help="pair this device with another once; afterwards sends need no code")
    s.add_argument("code", nargs="?", help="the code the other device showed (omit to make one); '-' reads it "
                   "from stdin or $P2PD_CODE")
    s.add_argument("--exact-code", action="store_true", help="use the code as given, even with a word one letter "
                   "from a word of p2pd's list (else refused as a likely typo)")
    s.add_argument("--signal", help="signaling server URL (default: $P2PD_SIGNAL or the config file)")
    s.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the other device")
    s.set_defaults(func=cmd_pair)

    s = sub.add_parser("devices", help="paired devices: list, rename, remove; this device's name")
    s.add_argument("action", nargs="?", choices=["list", "rename", "remove", "name"], default="list")
    s.add_argument("args", nargs="*", help="rename DEVICE NEW-NAME | remove DEVICE | name [NEW-NAME]")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    options.usage_error(s)
    s.set_defaults(func=cmd_devices)

    s = sub.add_parser("links", help="links (groups of devices to send to at once): list, create, close, leave")
    s.add_argument("action", nargs="?", choices=["list", "create", "close", "leave"], default="list")
    s.add_argument("args", nargs="*", help="create NAME DEVICE… | close LINK | leave LINK")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    options.usage_error(s)
    s.set_defaults(func=cmd_links)


def cmd_pair(args: argparse.Namespace) -> int:
    from p2pd.cli.codeentry import given_code
    from p2pd.config import signal_url
    from p2pd.daemon.device_pairing import pair_device
    from p2pd.daemon.devices import DeviceBook
    from p2pd.daemon.home import Home
    from p2pd.daemon.identity import load_identity

    code = given_code(args.code, exact=args.exact_code)
    home = Home.default().ensure()
    identity = load_identity(home.root)

    class PairUI(CliUI):
        def code_ready(self, code: str, *, peer_present: bool = False) -> None:
            if args.code is None:
                err.print(f"Code: [bold]{escape(code)}[/]")
                err.print(f"  on the other device run: [bold]p2pd pair {escape(code)}[/]")

    ui = PairUI()
    err.print(f"This device: [bold]{shown(identity.name)}[/] ({identity.device_id}), "
              f"fingerprint {identity.fingerprint}")
    result = run(pair_device(signal_url=args.signal or signal_url(), code=str(code) if code else None,
                             identity=identity, book=DeviceBook(home.root), ui=ui, timeout=args.timeout), ui)
    d = result.device
    again = " (paired again: its secret is new)" if result.replaced else ""
    err.print(f"Paired with [bold]{shown(d.name)}[/] ({shown(d.device_id)}), fingerprint {d.fingerprint}{again}.")
    err.print("Sends between the two need no code now, e.g. "
              f"`p2pd send SESSION --to {shown(d.device_id)}` (the daemon must run on both: `p2pd serve`).")
    return ExitCode.OK


def _device_rows() -> list[dict[str, Any]]:
    from p2pd.daemon.client import DaemonClient
    from p2pd.daemon.devices import DeviceBook
    from p2pd.daemon.home import Home

    client = DaemonClient.find()
    if client is not None:
        with client:
            rows: list[dict[str, Any]] = client.get("/devices")
            return rows
    return [{**d.public_view(), "online": None, "state": "daemon not running"}
            for d in DeviceBook(Home.default().root).devices.values()]


def cmd_devices(args: argparse.Namespace) -> int:
    from p2pd.daemon.devices import DeviceBook
    from p2pd.daemon.home import Home
    from p2pd.daemon.identity import load_identity, set_device_name

    home = Home.default().ensure()
    if args.action == "name":
        if args.args:
            set_device_name(home.root, " ".join(args.args))
        identity = load_identity(home.root)
        print(f"{identity.name}\t{identity.device_id}\t{identity.fingerprint}")
        return ExitCode.OK
    book = DeviceBook(home.root)
    if args.action == "rename":
        if len(args.args) < 2:
            args.usage("rename needs DEVICE and NEW-NAME")
        d = book.rename(args.args[0], " ".join(args.args[1:]))
        err.print(f"Renamed {shown(d.device_id)} to [bold]{shown(d.name)}[/].")
        return ExitCode.OK
    if args.action == "remove":
        if len(args.args) != 1:
            args.usage("remove needs one DEVICE")
        d = book.remove(args.args[0])
        err.print(f"Removed {shown(d.name)} ({shown(d.device_id)}); its key and secret are forgotten. "
                  "Pair again with `p2pd pair` to send to it.")
        return ExitCode.OK
    return print_rows(_device_rows(), as_json=args.json,
                      empty="No paired devices. Pair one: `p2pd pair` here, then `p2pd pair CODE` on the other device.",
                      columns=("id", "name", "fingerprint", "state"),
                      cells=lambda d: (shown(str(d["id"])), shown(str(d["name"])), shown(str(d["fingerprint"])),
                                       shown(_device_state(d))))


def _device_state(row: dict[str, Any]) -> str:
    state = str(row.get("state") or "")
    return f"{state}: {row['error']}" if state == "refused" and row.get("error") else state


def cmd_links(args: argparse.Namespace) -> int:
    from p2pd.daemon.client import DaemonClient

    with DaemonClient.connect(why="links are kept by the daemon") as client:
        if args.action == "create":
            if len(args.args) < 2:
                args.usage("create needs NAME and at least one DEVICE")
            row = client.post("/links", {"name": args.args[0], "devices": args.args[1:]})
        elif args.action in ("close", "leave"):
            if len(args.args) != 1:
                args.usage(f"{args.action} needs one LINK")
            row = client.post(f"/links/{args.args[0]}/{args.action}")
        else:
            return print_rows(client.get("/links"), as_json=args.json,
                              empty="No links. Make one: `p2pd links create NAME DEVICE…`.",
                              columns=("id", "name", "members", "state"),
                              cells=lambda r: (shown(r["id"]), shown(r["name"]),
                                               shown(", ".join(m["name"] or m["id"] for m in r["members"]
                                                                 if m["id"] not in r["left"])),
                                               "closed" if r["closed"] else "open"))
    print(json.dumps(row, indent=1) if args.json else f"{row['id']}\t{'closed' if row['closed'] else 'open'}")
    return ExitCode.OK
