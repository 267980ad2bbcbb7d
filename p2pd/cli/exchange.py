"""Handing a conversation across: ``p2pd send``, ``receive`` (with a code, peer to peer) and ``demo`` (the two
on this machine). ``send --to DEVICE`` goes through the daemon (:func:`p2pd.cli.daemon.send_via_daemon`)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from p2pd.cli import netopts
from p2pd.cli.conversations import load_conversation, redacted
from p2pd.cli.output import CliUI, err, escape, human, run, shown, status
from p2pd.errors import ExitCode, NotFoundError, P2pdError


def register(sub: Any) -> None:
    from p2pd.agents import registry

    s = sub.add_parser("send", help="send a conversation to another machine (pairing code, peer to peer)")
    s.add_argument("session", help="session id, unique prefix, 'latest', transcript path, or .a2a.json file")
    s.add_argument("--code", help="use this code (else one is made); '-' reads it from stdin; or $P2PD_CODE")
    s.add_argument("--exact-code", action="store_true", help="use --code as given, even with a word one letter "
                   "from a word of p2pd's list (else refused as a likely typo)")
    s.add_argument("--signal", help="signaling server URL (default: $P2PD_SIGNAL, config, ws://127.0.0.1:8765)")
    s.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the receiver (default 300)")
    s.add_argument("--redact", action=argparse.BooleanOptionalAction, default=None,
                   help="mask secrets before sending (default: $P2PD_REDACT or the config file)")
    s.add_argument("--fallback-dir", default=".", help="where to write the .a2a.json when no peer connects")
    s.add_argument("--to", metavar="DEVICE", help="send to a paired device, through the running daemon (no code)")
    s.add_argument("--link", metavar="LINK", help="send to every other member of a link, through the running daemon")
    netopts.add(s)
    s.set_defaults(func=cmd_send)

    s = sub.add_parser("receive", help="receive a conversation sent with 'p2pd send'")
    s.add_argument("code", nargs="?", help="the sender's code ('-' reads stdin; default $P2PD_CODE; none: type "
                   "it at a prompt, with Tab completing its words)")
    s.add_argument("--make-code", action="store_true", help="make a code for the sender to use instead "
                   "(the receiver goes first: p2pd send SESSION --code CODE)")
    s.add_argument("--exact-code", action="store_true", help="use the code as given, even with a word one letter "
                   "from a word of p2pd's list (else refused as a likely typo)")
    s.add_argument("-o", "--output", default=".", help="folder for the received .a2a.json (default: here)")
    s.add_argument("--file", help="take a .a2a.json handed over as a file instead (the sender's fallback)")
    s.add_argument("--import", dest="do_import", action="store_true", help="import it for resume right away")
    s.add_argument("--to", choices=registry.import_targets(), default="claude-code", help="agent to import into")
    s.add_argument("--cwd", help="project folder to resume in (with --import; default: the current directory)")
    s.add_argument("--same-account", action="store_true", help="keep thinking blocks on import")
    s.add_argument("--yes", action="store_true", help="accept the offer without asking")
    s.add_argument("--pretty", action="store_true", help="write the .a2a.json indented (default: compact)")
    s.add_argument("--signal", help="signaling server URL (default: $P2PD_SIGNAL, config, ws://127.0.0.1:8765)")
    s.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the sender (default 300)")
    netopts.add(s)
    s.set_defaults(func=cmd_receive)

    s = sub.add_parser("demo", help="run the main job on this machine: signaling server, sender and receiver")
    s.add_argument("session", help="a Claude Code transcript (.jsonl)")
    s.set_defaults(func=cmd_demo)


# ---------------------------------------------------------------- send / receive
def cmd_send(args: argparse.Namespace) -> int:
    if args.to or args.link:
        from p2pd.cli.daemon import send_via_daemon

        return send_via_daemon(args)
    from p2pd.cli.codeentry import given_code
    from p2pd.config import signal_url
    from p2pd.exchange.handover import send_document

    code = given_code(args.code, exact=args.exact_code)  # a typo is refused before the session is read
    with status(f"Reading {args.session}…"):
        doc = load_conversation(args.session)
    doc = redacted(doc, args.redact)
    url = args.signal or signal_url()
    ui = CliUI(signal_url=url)
    outcome = run(send_document(doc, signal_url=url, code=str(code) if code else None, ui=ui,
                                peer_timeout=args.timeout, fallback_dir=Path(args.fallback_dir),
                                connect_timeout=netopts.apply(args)), ui)
    if outcome.sent:
        r = outcome.result
        resumed = f", {human(r.resumed_bytes)} already there" if r.resumed_bytes else ""
        err.print(f"Sent [bold]{shown(doc.title or doc.context_id)}[/]: {human(r.bytes_sent)} in {r.elapsed:.1f}s"
                  f"{resumed}; the receiver verified SHA-256 {r.sha256.hex()[:16]}…")
        return ExitCode.OK
    path = outcome.fallback_path
    err.print(f"[yellow]No peer connection[/] ({shown(outcome.fallback_reason or 'unknown reason')}).")
    err.print(f"The conversation was written to {escape(str(path))}; copy it to the other machine and run:")
    print(f"p2pd import {path.name if path else ''}")
    return ExitCode.FALLBACK_WRITTEN


def cmd_receive(args: argparse.Namespace) -> int:
    from p2pd.config import signal_url
    from p2pd.exchange.handover import receive_document

    out_dir = Path(args.output)
    if args.file:
        from p2pd.agents.sources import load_file
        from p2pd.exchange.handover import fallback_file

        doc = load_file(args.file)
        path = Path(args.file)
        if path.resolve().parent != out_dir.resolve():
            path = fallback_file(doc, out_dir, pretty=args.pretty)
        err.print(f"Read [bold]{shown(doc.title or doc.context_id)}[/] ({doc.counts.messages} messages) → "
                  f"{escape(str(path))}")
    else:
        code = _receiving_code(args)
        ui = CliUI(yes=args.yes, receiving=True)
        url = args.signal or signal_url()
        outcome = run(receive_document(signal_url=url, code=str(code) if code else None, ui=ui,
                                       out_dir=out_dir, peer_timeout=args.timeout,
                                       connect_timeout=netopts.apply(args), pretty=args.pretty), ui)
        doc, path = outcome.document, outcome.path
        err.print(f"Received [bold]{shown(doc.title or doc.context_id)}[/] ({doc.counts.messages} messages), "
                  f"SHA-256 verified → {escape(str(path))}")
    if args.do_import:
        from p2pd.agents.importing import import_document, target_name

        result = import_document(doc, to=args.to, cwd=args.cwd, same_account=args.same_account)
        for w in result.warnings:
            err.print(f"[yellow]note[/]: {escape(w)}")
        err.print(f"Imported into {target_name(args.to)} as session {result.session_id}: {escape(str(result.path))}")
        err.print("  resume with:")
        print(result.resume_command)
    else:
        print(path)
    return ExitCode.OK


def _receiving_code(args: argparse.Namespace) -> Any:
    """The code ``receive`` pairs with (None: make one), from the arguments or a prompt; refuses a likely typo, and
    a run that could not ask "Accept?" (no terminal, no --yes) before anything is sent."""
    from p2pd.cli.codeentry import given_code, prompt_code, usage_error

    if args.make_code and args.code:
        raise usage_error("--make-code makes a new code: give no code with it")
    code = None if args.make_code else given_code(args.code, exact=args.exact_code)
    terminal = sys.stdin.isatty()
    if code is None and not args.make_code and not terminal:
        raise usage_error("no code: give the sender's code (as an argument, '-' to read it from standard input, or "
                          "$P2PD_CODE), or --make-code to make one for the sender")
    if not args.yes and not terminal:
        how = "the code came on standard input, so" if args.code == "-" else "standard input is not a terminal:"
        raise usage_error(f"{how} there is no terminal to ask whether to accept the offer; add --yes to accept "
                          "it without asking")
    return prompt_code(exact=args.exact_code) if code is None and not args.make_code else code


# ---------------------------------------------------------------- demo
def cmd_demo(args: argparse.Namespace) -> int:
    """The main job on one machine: a signaling server, a receiver and a sender — three processes on loopback —
    hand a session across peer to peer, and the receiver imports it into a throwaway Claude home."""
    import re
    import subprocess

    src = Path(args.session).resolve()
    if not src.is_file():
        raise NotFoundError(f"transcript not found: {src}")
    work = Path(tempfile.mkdtemp(prefix="p2pd-demo-"))
    home, project, inbox = work / "claude-home", work / "project", work / "inbox"
    project.mkdir()
    py = sys.executable
    server = subprocess.Popen([py, "-m", "signaling", "--port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        m = re.search(r"ws://[^\s]+", line)
        if not m:
            raise P2pdError(f"the signaling server did not start: {line.strip()}")
        url = m.group(0)
        err.print(f"1. signaling server: {escape(url)} (pid {server.pid})")
        env = {**os.environ, "P2PD_SIGNAL": url, "P2PD_ICE_HOST_ADDRESSES": "127.0.0.1",
               "CLAUDE_CONFIG_DIR": str(home)}
        code = f"{os.getpid() % 9000 + 1000}-demo-run"
        sender = subprocess.Popen([py, "-m", "p2pd", "send", str(src), "--code", code, "--timeout", "60"],
                                  env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert sender.stderr is not None
        early: list[str] = []
        for sline in sender.stderr:  # the sender is our own child process: its "Code:" line says it is waiting
            early.append(sline)
            if "Code:" in sline:
                break
        else:
            raise P2pdError("the sender stopped before pairing: " + " ".join(early).strip())
        err.print(f"2. sender: p2pd send {escape(src.name)} --code {code} (pid {sender.pid})")
        err.print(f"3. receiver: p2pd receive {code} --yes --import --cwd {escape(str(project))}")
        receiver = subprocess.run([py, "-m", "p2pd", "receive", code, "--yes", "-o", str(inbox), "--import",
                                   "--cwd", str(project)], env=env, capture_output=True, text=True, timeout=300)
        _, s_err = sender.communicate(timeout=60)
        for text in (receiver.stderr, s_err):
            for ln in text.strip().splitlines():
                err.print(f"   {escape(ln)}")
        if receiver.returncode != 0 or sender.returncode != 0:
            raise P2pdError(f"the demo transfer failed (sender exit {sender.returncode}, "
                            f"receiver exit {receiver.returncode})")
    finally:
        server.kill()
        server.wait()
    err.print(f"4. done. Resume it with: CLAUDE_CONFIG_DIR={escape(str(home))} and")
    print(receiver.stdout.strip())
    return ExitCode.OK
