"""The ``p2pd`` command line. Errors are one clear line (``--debug`` shows the traceback); exit codes are in
:class:`p2pd.errors.ExitCode` and README.md."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from p2pd import __version__
from p2pd.cli import netopts
from p2pd.errors import ExitCode, InvalidInputError, NotFoundError, P2pdError
from p2pd.support.eventloop import run as run_async

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def _status(message: str) -> AbstractContextManager[Any]:
    """A spinner on a terminal, nothing otherwise (progress for long work)."""
    return err.status(message) if err.is_terminal else nullcontext()


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


# ---------------------------------------------------------------- sessions
def cmd_sessions(args: argparse.Namespace) -> int:
    from p2pd.agents.sessions import list_sessions

    with _status("Reading sessions…"):
        infos = list_sessions(args.platform, limit=args.limit)
    if args.json:
        print(json.dumps([i.to_json() for i in infos], ensure_ascii=False, indent=1))
        return ExitCode.OK
    if not infos:
        err.print("No sessions found (Claude Code keeps them under $CLAUDE_CONFIG_DIR or ~/.claude/projects, "
                  "Codex under $CODEX_HOME or ~/.codex/sessions, Gemini CLI under ~/.gemini/tmp/*/chats).")
        return ExitCode.OK
    table = Table(show_lines=False)
    for col in ("id", "platform", "project", "title", "msgs", "size", "last activity"):
        table.add_column(col, overflow="fold" if col == "title" else "ellipsis", no_wrap=col != "title")
    for i in infos:
        table.add_row(i.session_id[:8], i.platform, i.cwd or "", i.title, str(i.messages), _human(i.size),
                      i.last_activity.replace("T", " ").removesuffix("Z"))
    out.print(table)
    if args.summary:
        for i in infos:
            out.print(f"[bold]{i.session_id[:8]}[/] {_escape(i.summary)}")
    return ExitCode.OK


# ---------------------------------------------------------------- export
def load_conversation(ref: str) -> Any:
    """A session (id, prefix, ``latest``, a Claude Code/Codex/Gemini file) or a conversation file → document."""
    from p2pd.agents.sources import load_conversation as load

    return load(ref)


def _redacted(doc: Any, flag: bool | None) -> Any:
    """``doc`` with secrets masked when ``--redact`` (or the configured default) asks for it; prints the counts."""
    from p2pd.config import redact_default

    if not (flag if flag is not None else redact_default()):
        return doc
    from p2pd.conversation.redact import redact_document

    with _status("Masking secrets…"):
        doc, report = redact_document(doc)
    err.print(f"Redaction: {_escape(report.describe())}")
    return doc


def cmd_export(args: argparse.Namespace) -> int:
    from p2pd.conversation.document_io import write_document

    started = time.perf_counter()
    with _status(f"Converting {args.session}…"):
        doc = load_conversation(args.session)
    if doc.issues or any(s.issues for s in doc.subagents):
        _report_issues(doc)
        if args.strict:
            raise InvalidInputError("malformed lines found (--strict): nothing written")
    doc = _redacted(doc, args.redact)
    suffix = ".a2a.p2pd" if args.compressed else ".a2a.json"
    target = Path(args.output) if args.output else Path(f"{doc.context_id}{suffix}")
    with _status(f"Writing {target}…"):
        size = write_document(doc, target, compressed=args.compressed, codec=args.codec)
    c = doc.counts
    err.print(f"Exported [bold]{doc.title or doc.context_id}[/]: {c.messages} messages, {c.tool_calls} tool calls,"
              f" {c.subagents} subagents → {target} ({_human(size)}, {time.perf_counter() - started:.2f}s)")
    print(target)
    return ExitCode.OK


def _report_issues(doc: Any) -> None:
    def show(where: str, issues: Sequence[Any]) -> None:
        for issue in issues[:20]:
            err.print(f"[yellow]warning[/]: {where} line {issue.line}: {issue.reason} (kept as is)")
        if len(issues) > 20:
            err.print(f"[yellow]warning[/]: {where}: {len(issues) - 20} more malformed lines")

    show(doc.origin.transcript_path or "transcript", doc.issues)
    for sub in doc.subagents:
        show(f"subagent {sub.file_name}", sub.issues)
    total = len(doc.issues) + sum(len(s.issues) for s in doc.subagents)
    err.print(f"[yellow]{total} malformed line(s) reported; they travel unchanged in the document[/]")


# ---------------------------------------------------------------- import
def cmd_import(args: argparse.Namespace) -> int:
    from p2pd.agents.sources import load_file

    with _status(f"Reading {args.file}…"):
        doc = load_file(args.file)
    from p2pd.agents.importing import import_document, target_name

    result = import_document(doc, to=args.to, cwd=args.cwd, same_account=args.same_account, dry_run=args.dry_run)
    target = target_name(args.to)
    for w in result.warnings:
        err.print(f"[yellow]note[/]: {_escape(w)}")
    verb = "Would import" if result.dry_run else "Imported"
    err.print(f"{verb} [bold]{_escape(doc.title or doc.context_id)}[/] ({doc.origin.platform}) as {target} session "
              f"{result.session_id} ({result.lines} lines)")
    err.print(f"  file: {result.path}")
    err.print("  resume with:")
    print(result.resume_command)
    return ExitCode.OK


# ---------------------------------------------------------------- convert
def cmd_convert(args: argparse.Namespace) -> int:
    from p2pd.agents.claude_code.importer import linearize, source_objects
    from p2pd.agents.claude_code.restore import has_claude_code_source, to_jsonl
    from p2pd.conversation.document_io import write_document
    from p2pd.support.atomic import atomic_write_bytes

    src, dst = Path(args.input), Path(args.output)
    to = args.to or ("claude-code" if dst.suffix == ".jsonl" else "a2a")
    doc = load_conversation(str(src))
    if to == "a2a":
        size = write_document(doc, dst, compressed=dst.name.endswith(".p2pd"))
        err.print(f"Wrote A2A conversation {dst} ({_human(size)})")
        return ExitCode.OK
    main = doc.main_transcript()
    if not has_claude_code_source(main):
        raise InvalidInputError(f"{src} did not come from Claude Code; use `p2pd import` to rebuild it as a session")
    if args.keep_ids:
        data = to_jsonl(main).encode("utf-8", errors="surrogateescape")
    else:
        import uuid

        sid = str(uuid.uuid4())
        lines = linearize(source_objects(main), sid, doc.origin.cwd or os.getcwd(), keep_thinking=True)
        data = "".join(json.dumps(v, ensure_ascii=False, separators=(",", ":")) + "\n" for v in lines).encode()
    atomic_write_bytes(dst, data)
    err.print(f"Wrote Claude Code transcript {dst} ({_human(len(data))}{', ids kept' if args.keep_ids else ''})")
    return ExitCode.OK


# ---------------------------------------------------------------- show
def cmd_show(args: argparse.Namespace) -> int:
    from p2pd.conversation.render import render

    doc = load_conversation(args.file)
    render(out, doc, full=args.full, all_branches=args.all)
    return ExitCode.OK


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
        err.print(f"1. signaling server: {url} (pid {server.pid})")
        env = {**os.environ, "P2PD_SIGNAL": url, "P2PD_ICE_HOST_ADDRESSES": "127.0.0.1",
               "CLAUDE_CONFIG_DIR": str(home)}
        code = f"{os.getpid() % 9000 + 1000}-demo-run"
        sender = subprocess.Popen([py, "-m", "p2pd", "send", str(src), "--code", code, "--timeout", "60"],
                                  env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert sender.stderr is not None
        early: list[str] = []
        for sline in sender.stderr:
            early.append(sline)
            if "Code:" in sline:
                break
        else:
            raise P2pdError("the sender stopped before pairing: " + " ".join(early).strip())
        err.print(f"2. sender: p2pd send {src.name} --code {code} (pid {sender.pid})")
        err.print(f"3. receiver: p2pd receive {code} --yes --import --cwd {project}")
        receiver = subprocess.run([py, "-m", "p2pd", "receive", code, "--yes", "-o", str(inbox), "--import",
                                   "--cwd", str(project)], env=env, capture_output=True, text=True, timeout=300)
        _, s_err = sender.communicate(timeout=60)
        for text in (receiver.stderr, s_err):
            for ln in text.strip().splitlines():
                err.print(f"   {_escape(ln)}")
        if receiver.returncode != 0 or sender.returncode != 0:
            raise P2pdError(f"the demo transfer failed (sender exit {sender.returncode}, "
                            f"receiver exit {receiver.returncode})")
    finally:
        server.kill()
        server.wait()
    err.print(f"4. done. Resume it with: CLAUDE_CONFIG_DIR={home} and")
    print(receiver.stdout.strip())
    return ExitCode.OK


# ---------------------------------------------------------------- send / receive
class CliUI:
    """Terminal side of send/receive: the code, the verification string, the offer prompt, a progress bar."""

    def __init__(self, *, yes: bool = False, receiving: bool = False, signal_url: str | None = None) -> None:
        self.yes = yes
        self.receiving = receiving
        self.signal_url = signal_url
        self._progress: Any = None
        self._task: Any = None

    def code_ready(self, code: str) -> None:
        if self.receiving:
            err.print(f"Waiting for the sender. Code: [bold]{_escape(code)}[/]")
            err.print(f"  on the sending machine run: [bold]p2pd send SESSION --code {_escape(code)}[/]")
        else:
            err.print(f"Code: [bold]{_escape(code)}[/]")
            err.print(f"  on the receiving machine run: [bold]p2pd receive {_escape(code)}[/]")
            if self.signal_url:
                from p2pd.exchange.weblink import page_link, qr_text

                link = page_link(self.signal_url, code)
                err.print(f"  or open in a browser: {_escape(link)}", soft_wrap=True)
                if sys.stdout.isatty():
                    out.print(qr_text(link), end="", highlight=False, markup=False)

    def paired(self, verification: str) -> None:
        err.print(f"Paired. Verification string (the same on both sides): [bold]{_escape(verification)}[/]")

    def status(self, text: str) -> None:
        err.print(f"[dim]{_escape(text)}[/dim]")

    def progress(self, done: int, total: int) -> None:
        if not err.is_terminal:
            return
        if self._progress is None:
            from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

            self._progress = Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                                      TransferSpeedColumn(), console=err, transient=True)
            self._progress.start()
            self._task = self._progress.add_task("acknowledged", total=total)
        self._progress.update(self._task, completed=done, total=total)
        if done >= total:
            self.stop()

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    async def decide(self, offer: Any) -> bool:
        info = offer.info
        err.print(f"Offered: [bold]{_escape(info.title)}[/]")
        err.print(f"  from {_escape(info.platform)} session {_escape(info.session_id)}, {info.message_count} messages,"
                  f" {_human(offer.raw_size)} ({_human(offer.compressed_size)} on the wire)")
        if self.yes:
            return True
        if not sys.stdin.isatty():
            err.print("[yellow]declining: no terminal to ask on (pass --yes to accept)[/]")
            return False
        import asyncio

        answer = await asyncio.to_thread(input, "Accept? [y/N] ")
        return answer.strip().lower() in ("y", "yes")


def cmd_send(args: argparse.Namespace) -> int:
    if args.to or args.link:
        from p2pd.cli.daemon import send_via_daemon

        return send_via_daemon(args)
    from p2pd.config import signal_url
    from p2pd.exchange.handover import send_document
    from p2pd.pairing.codes import read_code

    with _status(f"Reading {args.session}…"):
        doc = load_conversation(args.session)
    doc = _redacted(doc, args.redact)
    code = read_code(args.code)
    url = args.signal or signal_url()
    ui = CliUI(signal_url=url)
    try:
        outcome = run_async(send_document(doc, signal_url=url, code=str(code) if code else None, ui=ui,
                                           peer_timeout=args.timeout, fallback_dir=Path(args.fallback_dir),
                                           connect_timeout=netopts.apply(args)))
    finally:
        ui.stop()
    if outcome.sent:
        r = outcome.result
        resumed = f", {_human(r.resumed_bytes)} already there" if r.resumed_bytes else ""
        err.print(f"Sent [bold]{_escape(doc.title or doc.context_id)}[/]: {_human(r.bytes_sent)} in {r.elapsed:.1f}s"
                  f"{resumed}; the receiver verified SHA-256 {r.sha256.hex()[:16]}…")
        return ExitCode.OK
    path = outcome.fallback_path
    err.print(f"[yellow]No peer connection[/] ({_escape(outcome.fallback_reason or 'unknown reason')}).")
    err.print(f"The conversation was written to {path}; copy it to the other machine and run:")
    print(f"p2pd import {path.name if path else ''}")
    return ExitCode.FALLBACK_WRITTEN


def cmd_receive(args: argparse.Namespace) -> int:
    from p2pd.config import signal_url
    from p2pd.exchange.handover import receive_document
    from p2pd.pairing.codes import read_code

    out_dir = Path(args.output)
    if args.file:
        from p2pd.agents.sources import load_file
        from p2pd.exchange.handover import fallback_file

        doc = load_file(args.file)
        path = Path(args.file)
        if path.resolve().parent != out_dir.resolve():
            path = fallback_file(doc, out_dir)
        err.print(f"Read [bold]{_escape(doc.title or doc.context_id)}[/] ({doc.counts.messages} messages) → {path}")
    else:
        code = read_code(args.code)
        ui = CliUI(yes=args.yes, receiving=True)
        url = args.signal or signal_url()
        try:
            outcome = run_async(receive_document(signal_url=url, code=str(code) if code else None, ui=ui,
                                                  out_dir=out_dir, peer_timeout=args.timeout,
                                                  connect_timeout=netopts.apply(args)))
        finally:
            ui.stop()
        doc, path = outcome.document, outcome.path
        err.print(f"Received [bold]{_escape(doc.title or doc.context_id)}[/] ({doc.counts.messages} messages), "
                  f"SHA-256 verified → {path}")
    if args.do_import:
        from p2pd.agents.importing import import_document, target_name

        result = import_document(doc, to=args.to, cwd=args.cwd, same_account=args.same_account)
        for w in result.warnings:
            err.print(f"[yellow]note[/]: {_escape(w)}")
        err.print(f"Imported into {target_name(args.to)} as session {result.session_id}: {result.path}")
        err.print("  resume with:")
        print(result.resume_command)
    else:
        print(path)
    return ExitCode.OK


# ---------------------------------------------------------------- main
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="p2pd", description="Hand an AI agent conversation to another machine.")
    p.add_argument("--version", action="version", version=f"p2pd {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("sessions", help="list local agent sessions, newest first")
    s.add_argument("--platform", choices=["claude-code", "codex", "gemini"], default=None)
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.add_argument("--limit", type=int, default=None, help="at most N sessions")
    s.add_argument("--summary", action="store_true", help="print each session's summary under the table")
    s.set_defaults(func=cmd_sessions)

    s = sub.add_parser("export", help="write a session as a conversation document (.a2a.json)")
    s.add_argument("session", help="session id, unique prefix, 'latest', or a Claude Code/Codex/Gemini file")
    s.add_argument("-o", "--output", help="output file (default: <session id>.a2a.json in this folder)")
    s.add_argument("--compressed", action="store_true", help="write the compressed wire blob (.a2a.p2pd)")
    s.add_argument("--codec", choices=["lz4", "zstd"], default="lz4", help="codec for --compressed")
    s.add_argument("--strict", action="store_true", help="fail (writing nothing) if any line is malformed")
    s.add_argument("--redact", action=argparse.BooleanOptionalAction, default=None,
                   help="mask secrets (keys, tokens, private keys, passwords) before writing; default from "
                        "P2PD_REDACT or 'redact' in the p2pd config file")
    s.set_defaults(func=cmd_export)

    s = sub.add_parser("import", help="import a conversation document so the agent can resume it here")
    s.add_argument("file", help="a .a2a.json document, .a2a.p2pd blob, or a Claude Code/Codex/Gemini session file")
    s.add_argument("--to", choices=["claude-code", "codex"], default="claude-code",
                   help="the agent to resume in (default: claude-code)")
    s.add_argument("--cwd", help="the project folder to resume in (default: the current directory)")
    s.add_argument("--dry-run", action="store_true", help="say what would be written, write nothing")
    s.add_argument("--same-account", action="store_true",
                   help="keep signed thinking / encrypted reasoning (only valid for the account that made them)")
    s.set_defaults(func=cmd_import)

    s = sub.add_parser("convert", help="convert between a Claude Code transcript and an A2A document")
    s.add_argument("input")
    s.add_argument("output")
    s.add_argument("--to", choices=["claude-code", "a2a"], help="target format (default: from OUTPUT's suffix)")
    s.add_argument("--keep-ids", action="store_true", help="give back the original lines exactly")
    s.set_defaults(func=cmd_convert)

    s = sub.add_parser("show", help="print a conversation readably")
    s.add_argument("file", help="a .a2a.json/.a2a.p2pd file, or a session id/path")
    s.add_argument("--full", action="store_true", help="unfold tool results and long texts")
    s.add_argument("--all", action="store_true", help="include side branches")
    s.set_defaults(func=cmd_show)

    s = sub.add_parser("send", help="send a conversation to another machine (pairing code, peer to peer)")
    s.add_argument("session", help="session id, unique prefix, 'latest', transcript path, or .a2a.json file")
    s.add_argument("--code", help="use this code (else one is made); '-' reads it from stdin; or $P2PD_CODE")
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
    s.add_argument("code", nargs="?", help="the sender's code ('-' reads stdin; default $P2PD_CODE; none: make "
                   "a code for the sender to use)")
    s.add_argument("-o", "--output", default=".", help="folder for the received .a2a.json (default: here)")
    s.add_argument("--file", help="take a .a2a.json handed over as a file instead (the sender's fallback)")
    s.add_argument("--import", dest="do_import", action="store_true", help="import it for resume right away")
    s.add_argument("--to", choices=["claude-code", "codex"], default="claude-code", help="agent to import into")
    s.add_argument("--cwd", help="project folder to resume in (with --import; default: the current directory)")
    s.add_argument("--same-account", action="store_true", help="keep thinking blocks on import")
    s.add_argument("--yes", action="store_true", help="accept the offer without asking")
    s.add_argument("--signal", help="signaling server URL (default: $P2PD_SIGNAL, config, ws://127.0.0.1:8765)")
    s.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the sender (default 300)")
    netopts.add(s)
    s.set_defaults(func=cmd_receive)

    s = sub.add_parser("demo", help="run the main job on this machine: signaling server, sender and receiver")
    s.add_argument("session", help="a Claude Code transcript (.jsonl)")
    s.set_defaults(func=cmd_demo)

    from p2pd.cli.daemon import register as register_daemon_commands

    register_daemon_commands(sub)
    from p2pd.cli.devices import register as register_device_commands

    register_device_commands(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return int(func(args))
    except P2pdError as exc:
        if args.debug:
            raise
        err.print(f"[bold red]error:[/] {_escape(str(exc))}")
        return int(exc.exit_code)
    except KeyboardInterrupt:
        err.print("interrupted")
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:  # one clear line, never a traceback without --debug
        if args.debug:
            raise
        err.print(f"[bold red]error:[/] unexpected {type(exc).__name__}: {_escape(str(exc))} (run with --debug)")
        return int(ExitCode.ERROR)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


if __name__ == "__main__":
    sys.exit(main())
