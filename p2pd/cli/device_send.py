"""``p2pd send SESSION --to DEVICE`` (or ``--link LINK``): the daemon queues the conversation for the paired
device(s); this command follows it — the device's state (online / connecting / offline since …), the bytes sent —
and returns when it is done or failed, or, when the device stays away, with a clear message: the transfer stays
queued and goes when the device is back (that is not a failure: exit 0)."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

from p2pd.cli.output import err, human, shown
from p2pd.errors import ExitCode

if TYPE_CHECKING:
    from p2pd.daemon.client import DaemonClient

POLL = 0.5  # seconds between looks at the transfer
AWAY_WAIT = 10.0  # seconds a device may stay away before the command returns (the transfer stays queued)
FINAL = ("done", "failed", "cancelled")


def send_via_daemon(args: argparse.Namespace) -> int:
    from p2pd.daemon.client import DaemonClient

    to = {"link": args.link} if args.link else {"device": args.to}
    with DaemonClient.connect(why="sends to a paired device go through the daemon") as c:
        row = c.post("/send", {"session": args.session, "to": to, "redact": args.redact}, timeout=300)
        ids = row.get("detail", {}).get("link_transfers") or [row["id"]]
        for ident in ids:
            print(ident)
        return follow(c, ids, timeout=args.timeout)


def _since(epoch: Any) -> str:
    if not isinstance(epoch, int | float):
        return ""
    ago = max(0, int(time.time() - epoch))
    return f" since {time.strftime('%H:%M:%S', time.localtime(epoch))} ({ago // 60} min {ago % 60} s ago)"


def describe(row: dict[str, Any], device: dict[str, Any]) -> str:
    """One line a person reads about a device transfer: to whom, the device's state, how far it got."""
    name = device.get("name") or row.get("detail", {}).get("device") or row["peer"]
    state = str(device.get("state") or "unknown")
    where = f"{shown(str(name))} ({state}{_since(device.get('since')) if state == 'offline' else ''})"
    if row["state"] == "running" and row.get("size"):
        pct = 100 * row["bytes_done"] // max(1, row["size"])
        return f"{where}: sending {human(row['bytes_done'])} of {human(row['size'])} ({pct // 10 * 10}%)"
    if waits_for_room(row):  # (its error says when it goes again)
        return f"{where}: interrupted, {shown(str(row.get('error') or 'its disk refused it'))}"
    if row["state"] in ("queued", "interrupted"):
        return f"{where}: {row['state']}, sent when the device is online"
    if row["state"] == "cancelling":  # the device decides: it may have had it already (DAEMON.md)
        return f"{where}: cancelling, waiting for the device's answer"
    return f"{where}: {row['state']}"


def waits_for_room(row: dict[str, Any]) -> bool:
    """The device's disk refused the transfer: the daemon sends it again by itself, later (DAEMON.md)."""
    return row["state"] == "interrupted" and row.get("cause") == "peer_storage"


def follow(c: DaemonClient, ids: list[str], *, timeout: float) -> int:
    start = time.monotonic()
    away: dict[str, float] = {}
    said: dict[str, str] = {}
    while True:
        rows = [c.get(f"/transfers/{i}") for i in ids]
        devices = {d["id"]: d for d in c.get("/devices")}
        now = time.monotonic()
        for row in rows:
            device = devices.get(row["peer"], {})
            line = describe(row, device)
            if said.get(row["id"]) != line and row["state"] not in FINAL:
                err.print(line)
                said[row["id"]] = line
            if (row["state"] in ("queued", "interrupted") and device.get("state") != "online") or waits_for_room(row):
                away.setdefault(row["id"], now)
            else:
                away.pop(row["id"], None)
        open_rows = [r for r in rows if r["state"] not in FINAL]
        if not open_rows:
            return _summary(rows, devices)
        if all(r["id"] in away and now - away[r["id"]] >= min(AWAY_WAIT, timeout) for r in open_rows):
            for r in open_rows:
                then = ("The daemon sends it again by itself" if waits_for_room(r)
                        else "The transfer stays queued and goes when the device is back")
                err.print(f"{describe(r, devices.get(r['peer'], {}))}. {then}: `p2pd transfers {shown(r['id'])}` "
                          "shows it.")
            return ExitCode.OK
        if now - start >= timeout:
            err.print(f"Still under way after {timeout:g} s: `p2pd transfers {shown(open_rows[0]['id'])}` shows it.")
            return ExitCode.OK
        time.sleep(POLL)


def _summary(rows: list[dict[str, Any]], devices: dict[str, Any]) -> int:
    code = ExitCode.OK
    for row in rows:
        name = shown(str(devices.get(row["peer"], {}).get("name") or row["detail"].get("device") or row["peer"]))
        if row["state"] == "done" and row["detail"].get("cancel_too_late"):
            err.print(f"Sent to {name}: the cancel came too late ({shown(row['detail']['cancel_too_late'])}).")
        elif row["state"] == "done":
            took = row["detail"].get("elapsed")
            err.print(f"Sent to {name}: {human(row['size'])}" + (f" in {took:.1f} s" if took else "")
                      + (f" (resumed, {human(row['detail']['resumed_bytes'])} were there)"
                         if row["detail"].get("resumed_bytes") else "") + ".")
        else:
            err.print(f"Not sent to {name}: {row['state']}" + (f" — {shown(row['error'])}" if row.get("error") else ""))
            code = ExitCode.TRANSFER_FAILED
    return code


__all__ = ["describe", "follow", "send_via_daemon", "waits_for_room"]
