"""Handing a conversation across: ``p2pd send``, ``receive`` (with a code, peer to peer) and ``demo`` (the two
on this machine). ``send --to DEVICE`` goes through the daemon (:func:`p2pd.cli.daemon.send_via_daemon`)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from p2pd.cli import netopts, options
from p2pd.cli.conversations import import_json
from p2pd.cli.output import CliUI, err, escape, human, print_json, run, shown, status
from p2pd.errors import ConflictError, ExitCode, NotFoundError, P2pdError, writing
from p2pd.support.text import counted


def register(sub: Any) -> None:
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
    options.add_json(s)
    netopts.add(s)
    s.set_defaults(func=cmd_send)

    s = sub.add_parser("receive", help="receive a conversation sent with 'p2pd send'")
    s.add_argument("code", nargs="?", help="the sender's code ('-' reads stdin; default $P2PD_CODE; none: type "
                   "it at a prompt, with Tab completing its words)")
    s.add_argument("--make-code", action="store_true", help="make a code for the sender to use instead "
                   "(the receiver goes first: p2pd send SESSION --code CODE)")
    s.add_argument("--exact-code", action="store_true", help="use the code as given, even with a word one letter "
                   "from a word of p2pd's list (else refused as a likely typo)")
    s.add_argument("-o", "--output", default=".", help="folder for the received .a2a.json (default: here), or "
                   "the file itself when it ends in .a2a.json")
    s.add_argument("--file", help="take a .a2a.json handed over as a file instead (the sender's fallback)")
    s.add_argument("--import", dest="do_import", action="store_true", help="import it for resume right away")
    options.add_agent(s, "the agent to import into, with --import (default: claude-code)")
    s.add_argument("--cwd", help="project folder to resume in (with --import; default: the current directory)")
    s.add_argument("--same-account", action="store_true", help="keep thinking blocks on import")
    s.add_argument("--yes", action="store_true", help="accept the offer without asking")
    s.add_argument("--pretty", action="store_true", help="write the .a2a.json indented (default: compact)")
    s.add_argument("--signal", help="signaling server URL (default: $P2PD_SIGNAL, config, ws://127.0.0.1:8765)")
    s.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the sender (default 300)")
    options.add_json(s)
    netopts.add(s)
    s.set_defaults(func=cmd_receive)

    s = sub.add_parser("demo", help="run the main job on this machine: signaling server, sender and receiver")
    s.add_argument("session", nargs="?", help="a Claude Code transcript (.jsonl); default: a small sample session "
                   "shipped with p2pd")
    s.set_defaults(func=cmd_demo)


# ---------------------------------------------------------------- send / receive
def cmd_send(args: argparse.Namespace) -> int:
    if args.to or args.link:
        from p2pd.cli.daemon import send_via_daemon

        return send_via_daemon(args)
    from p2pd.exchange.spare import prespawn

    prespawn()  # a file is packed by a process of its own: it imports while this one does (started already when
    # the program began: p2pd.cli.launch)
    from p2pd.agents.sources import named_file
    from p2pd.cli.codeentry import given_code

    code = given_code(args.code, exact=args.exact_code)  # a typo is refused before the session is read
    if _redacting(args):
        with masked_copy(args.session) as masked:
            return _send(args, masked, code)
    packable = named_file(args.session)  # (NotFoundError, saying where it looked, when nothing matches)
    # Packed by a process of its own (a Claude Code session converted as a stream, a document checked, any other
    # loaded there): memory bounded by a message for those two, and none of it on this process's event loop.
    if not Path(args.session).expanduser().is_file():  # `latest` or an id prefix: say which one before the code
        from p2pd.agents import registry

        agent = registry.detect_agent(packable)
        err.print(f"Picked {agent.display if agent else 'the'} session [bold]{escape(packable.stem)}[/] "
                  f"({human(packable.stat().st_size)}, {escape(str(packable.parent))})")
    return _send(args, packable, code)


@contextlib.contextmanager
def masked_copy(ref: str) -> Iterator[Path]:
    """The conversation ``ref`` names, its secrets masked, as a document in a private work folder (removed after;
    one a killed send left is swept by a later send): a Claude Code session converted and masked as streams
    (:mod:`p2pd.daemon.packer`, memory bounded by a message); the counts are printed before the code is."""
    from collections import Counter

    from p2pd.conversation.redact import RedactionReport
    from p2pd.daemon.packer import Job
    from p2pd.daemon.packer import run as pack
    from p2pd.support import workroom

    with workroom.held_folder(workroom.SEND) as work:
        out = work / "masked.a2a.json"
        with status(f"Reading {escape(ref)} and masking secrets…"):
            result = pack(Job(ref, str(out), kind="json", redact=True))
        err.print(f"Redaction: {escape(RedactionReport(Counter(result['masked'])).describe())}")
        yield out


def _send(args: argparse.Namespace, doc: Any, code: Any) -> int:
    from p2pd.config import DEFAULT_SIGNAL_URL, config_path, signal_url
    from p2pd.exchange.handover import send_document

    url = args.signal or signal_url()
    if not args.signal and url == DEFAULT_SIGNAL_URL:
        err.print(f"[yellow]note[/]: no signaling server is configured, so this tries {escape(url)} (this machine). "
                  f"Set one with --signal URL, $P2PD_SIGNAL, or signal = \"wss://…\" in {escape(str(config_path()))}.")
    ui = CliUI(signal_url=url, qr=not args.json)
    outcome = run(send_document(doc, signal_url=url, code=str(code) if code else None, ui=ui,
                                peer_timeout=args.timeout, fallback_dir=Path(args.fallback_dir),
                                connect_timeout=netopts.apply(args)), ui)
    about = outcome.about
    if outcome.sent:
        r = outcome.result
        moving = max(0.0, r.elapsed - r.decision_seconds)
        resumed = f", {human(r.resumed_bytes)} already there" if r.resumed_bytes else ""
        waited = f" (the receiver took {r.decision_seconds:.1f}s to accept)" if r.decision_seconds >= 0.05 else ""
        if r.cancel_too_late:  # Ctrl-C after the last chunk, answered by the receiver's DONE: it has it
            waited += "; the receiver had it before the interrupt reached it"
        if args.json:
            print_json({"sent": True, "session": about, "code": outcome.code, "verification": outcome.verification,
                        "bytes_sent": r.bytes_sent, "resumed_bytes": r.resumed_bytes, "seconds": round(moving, 3),
                        "decision_seconds": round(r.decision_seconds, 3), "sha256": r.sha256.hex(),
                        "cancel_too_late": r.cancel_too_late})
        err.print(f"Sent [bold]{shown(outcome.title)}[/]: {human(r.bytes_sent)}{resumed} in "
                  f"{moving:.1f}s from acceptance to verified{waited}; the receiver checked SHA-256 "
                  f"{r.sha256.hex()[:16]}…")
        return ExitCode.OK
    path = outcome.fallback_path
    name = path.name if path else ""
    if args.json:
        print_json({"sent": False, "session": about, "fallback_file": str(path) if path else None,
                    "reason": outcome.fallback_reason,
                    "cause": outcome.fallback_cause.value if outcome.fallback_cause else None,
                    "import_command": f"p2pd import {name}", "redacted": bool(_redacting(args))})
    err.print(f"[yellow]No peer connection[/] ({shown(outcome.fallback_reason or 'unknown reason')}).")
    err.print(f"The conversation was written to {escape(str(path))}; copy it to the other machine and run:")
    if not _redacting(args):
        err.print("  [yellow]note[/]: the file is not redacted: any secrets in the conversation are in it as they "
                  "are (--redact masks them)")
    if not args.json:
        print(f"p2pd import {name}")
    else:
        err.print(f"  p2pd import {escape(name)}")
    return ExitCode.FALLBACK_WRITTEN


def _redacting(args: argparse.Namespace) -> bool:
    from p2pd.config import redact_default

    return bool(args.redact if args.redact is not None else redact_default())


def _output(arg: str) -> tuple[Path, Path | None]:
    """``-o``: a folder, or the output file itself when it ends in ``.a2a.json`` (which must not exist yet)."""
    path = Path(arg)
    if not path.name.endswith(".a2a.json") or path.is_dir():
        return path, None
    if path.exists():
        raise ConflictError(f"{path} exists: choose another name, or remove it first")
    return path.parent, path


def _place(path: Path, target: Path | None) -> Path:
    """Move the received file to the name asked for with ``-o NAME.a2a.json`` (never over another file)."""
    if target is None or path == target:
        return path
    try:
        os.link(path, target)  # no-clobber, atomic: the name appears complete or not at all
    except FileExistsError:
        raise ConflictError(f"{target} appeared meanwhile; the conversation is in {path}") from None
    os.unlink(path)
    return target


def cmd_receive(args: argparse.Namespace) -> int:
    from p2pd.config import signal_url
    from p2pd.exchange.handover import receive_document

    out_dir, out_file = _output(args.output)
    outcome = None
    if args.file:
        from p2pd.agents.file_source import document_envelope
        from p2pd.agents.importing import is_document_file

        path = Path(args.file)
        move = out_file is not None or path.resolve().parent != out_dir.resolve()
        if is_document_file(path) and not args.pretty:  # read (and copied) as a stream, within the limits
            with status(f"Reading {escape(args.file)}…"), writing(out_file or out_dir, reading=path):
                staged = out_dir / f".{path.name}.part" if move else None
                if staged is not None:
                    out_dir.mkdir(parents=True, exist_ok=True)
                    staged.unlink(missing_ok=True)  # (what a killed run left)
                doc: Any = document_envelope(path, copy_to=staged)
            if staged is not None:
                from p2pd.agents.sources import safe_file_stem
                from p2pd.exchange.packing import place

                path = _place(place(staged, out_dir, safe_file_stem(doc.context_id)), out_file)
        elif move:  # (a session file, or --pretty: written the packing process's way, never whole in memory)
            from p2pd.agents.sources import safe_file_stem
            from p2pd.conversation.document_json import document_from_json
            from p2pd.daemon.packer import Job
            from p2pd.daemon.packer import run as pack
            from p2pd.exchange.packing import place

            with status(f"Reading {escape(args.file)} and writing the conversation document…"), \
                    writing(out_file or out_dir, reading=path):
                out_dir.mkdir(parents=True, exist_ok=True)
                staged = out_dir / f".{path.name}.part"
                head = pack(Job(str(path), str(staged), kind="json", pretty=args.pretty))["head"]
                doc = document_from_json({**head, "messages": []}, source=str(path))
            path = _place(place(staged, out_dir, safe_file_stem(doc.context_id)), out_file)
        else:  # (read one element at a time for what it is: nothing is written)
            from p2pd.agents.file_source import file_source, no_lines

            with status(f"Reading {escape(args.file)}…"), file_source(path, no_lines) as source:
                doc = source.document
        err.print(f"Read [bold]{shown(doc.title or doc.context_id)}[/] ({counted(doc.counts.messages, 'message')}) "
                  f"→ {escape(str(path))}")
    else:
        code = _receiving_code(args)
        ui = CliUI(yes=args.yes, receiving=True)
        url = args.signal or signal_url()
        outcome = run(receive_document(signal_url=url, code=str(code) if code else None, ui=ui,
                                       out_dir=out_dir, peer_timeout=args.timeout,
                                       connect_timeout=netopts.apply(args), pretty=args.pretty), ui)
        doc, path = outcome.summary, _place(outcome.path, out_file)
        err.print(f"Received [bold]{shown(doc.title or doc.context_id)}[/] "
                  f"({counted(doc.counts.messages, 'message')}), SHA-256 verified → {escape(str(path))}")
    imported = None
    if args.do_import:
        from p2pd.agents.importing import import_file, target_name

        with status(f"Importing into {target_name(args.agent)}…"):  # the file written, read again as a stream
            result, _ = import_file(path, to=args.agent, cwd=args.cwd, same_account=args.same_account)
        imported = import_json(result, args.agent)
        for w in result.warnings:
            err.print(f"[yellow]note[/]: {escape(w)}")
        err.print(f"Imported into {target_name(args.agent)} as session {result.session_id}: "
                  f"{escape(str(result.path))}")
        if not args.json:
            err.print("  resume with:")
            print(result.resume_command)
    elif not args.json:
        print(path)
    if args.json:
        print_json({"received": True, "file": str(path), "title": doc.title, "platform": doc.origin.platform,
                    "session_id": doc.origin.session_id or doc.context_id, "messages": doc.counts.messages,
                    "verification": outcome.verification if outcome else None,
                    "bytes_received": outcome.bytes_received if outcome else 0,
                    "resumed_bytes": outcome.resumed_bytes if outcome else 0, "imported": imported})
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
def sample_session() -> Path:
    """The session ``p2pd demo`` hands over when none is given: the start of a real Claude Code session,
    sanitized, installed with the package (source and license: ``demo_session.NOTICE.txt`` beside it)."""
    from importlib import resources

    return Path(str(resources.files("p2pd.cli").joinpath("demo_session.jsonl")))


def cmd_demo(args: argparse.Namespace) -> int:
    """The main job on one machine: a signaling server, a receiver and a sender — three processes on loopback —
    hand a session across peer to peer, and the receiver imports it into a throwaway Claude home."""
    import re
    import subprocess

    src = Path(args.session).resolve() if args.session else sample_session()
    if not src.is_file():
        raise NotFoundError(f"transcript not found: {src}")
    if not args.session:
        err.print("No session given: handing over the sample shipped with p2pd (`p2pd demo FILE` for one of yours).")
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
        # each side's lines under its own label: the two ran at the same time
        for side, text in (("receiver", receiver.stderr), ("sender", "".join(early) + s_err)):
            for ln in text.strip().splitlines():
                err.print(f"   [bold]{side}:[/] {escape(ln)}")
        if receiver.returncode != 0 or sender.returncode != 0:
            raise P2pdError(f"the demo transfer failed (sender exit {sender.returncode}, "
                            f"receiver exit {receiver.returncode})")
    finally:
        server.kill()
        server.wait()
    err.print(f"4. done. Resume it with: CLAUDE_CONFIG_DIR={escape(str(home))} and")
    print(receiver.stdout.strip())
    return ExitCode.OK
