"""Commands on conversations on this machine: ``p2pd sessions``, ``export``, ``import``, ``convert``, ``show``."""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from p2pd.cli import options
from p2pd.cli.output import err, escape, human, out, print_json, real_console, shown, shown_block, status, table
from p2pd.errors import ExitCode, InvalidInputError, writing
from p2pd.support.text import counted

if TYPE_CHECKING:
    from p2pd.agents.spec import Agent


def register(sub: Any) -> None:
    from p2pd.agents import registry

    s = sub.add_parser("sessions", help="list local agent sessions, newest first")
    s.add_argument("--platform", choices=registry.names(), default=None)
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
    s.add_argument("--pretty", action="store_true", help="indented JSON (default: compact, one message a line)")
    s.add_argument("--redact", action=argparse.BooleanOptionalAction, default=None,
                   help="mask secrets (keys, tokens, private keys, passwords) before writing; default from "
                        "P2PD_REDACT or 'redact' in the p2pd config file")
    options.add_json(s)
    s.set_defaults(func=cmd_export)

    s = sub.add_parser("import", help="import a conversation document so the agent can resume it here")
    s.add_argument("file", help="a .a2a.json document, .a2a.p2pd blob, or a Claude Code/Codex/Gemini session file")
    options.add_agent(s, "the agent to resume in (default: claude-code)")
    s.add_argument("--cwd", help="the project folder to resume in (default: the current directory)")
    s.add_argument("--dry-run", action="store_true", help="say what would be written, write nothing")
    s.add_argument("--same-account", action="store_true",
                   help="keep signed thinking / encrypted reasoning (only valid for the account that made them)")
    options.add_json(s)
    s.set_defaults(func=cmd_import)

    s = sub.add_parser("convert", help="convert between an agent session file and an A2A document")
    s.add_argument("input")
    s.add_argument("output")
    formats = (*registry.names(), "a2a")
    s.add_argument("--format", choices=formats,
                   help="target format (default: from OUTPUT's suffix); an agent's own format only for a "
                        "conversation that came from that agent (Gemini: none)")
    s.add_argument("--to", dest="format", choices=formats, action=options.DeprecatedAlias, new="--format")
    s.add_argument("--keep-ids", action="store_true", help="give back the original lines exactly")
    s.set_defaults(func=cmd_convert)

    s = sub.add_parser("show", help="print a conversation readably")
    s.add_argument("file", help="a .a2a.json/.a2a.p2pd file, or a session id/path")
    s.add_argument("--full", action="store_true", help="unfold tool results and long texts")
    s.add_argument("--all", action="store_true", help="include side branches")
    s.add_argument("--no-pager", dest="pager", action="store_false",
                   help="print straight to the terminal (default: through $PAGER, or less, when stdout is one)")
    s.add_argument("--json", action="store_true", help="print the conversation document (A2A JSON) instead")
    s.set_defaults(func=cmd_show)


def load_conversation(ref: str) -> Any:
    """A session (id, prefix, ``latest``, a Claude Code/Codex/Gemini file) or a conversation file → document."""
    from p2pd.agents.sources import load_conversation as load

    return load(ref)


def redacted(doc: Any, flag: bool | None) -> Any:
    """``doc`` with secrets masked when ``--redact`` (or the configured default) asks for it; prints the counts."""
    from p2pd.config import redact_default

    if not (flag if flag is not None else redact_default()):
        return doc
    from p2pd.conversation.redact import redact_document

    with status("Masking secrets…"):
        doc, report = redact_document(doc)
    err.print(f"Redaction: {escape(report.describe())}")
    return doc


# ---------------------------------------------------------------- sessions
def cmd_sessions(args: argparse.Namespace) -> int:
    from p2pd.agents.sessions import list_sessions

    with status("Reading sessions…"):
        infos = list_sessions(args.platform, limit=args.limit)
    if args.json:
        print(json.dumps([i.to_json() for i in infos], ensure_ascii=False, indent=1))
        return ExitCode.OK
    if not infos:
        err.print("No sessions found (Claude Code keeps them under $CLAUDE_CONFIG_DIR or ~/.claude/projects, "
                  "Codex under $CODEX_HOME or ~/.codex/sessions, Gemini CLI under ~/.gemini/tmp/*/chats).")
        return ExitCode.OK
    width = out.width
    # On a terminal the title keeps its room: narrow terminals drop the size, then the project folder
    # (`--json` and a pipe have them all).
    columns = ["id", "agent", "project", "title", "msgs", "size", "last activity"]
    if width < 100:
        columns.remove("size")
    if width < 90:
        columns.remove("project")
    rows, plain = [], []
    for i in infos:
        # titles and folders come from the transcripts: shown, never read as markup
        cells = {"id": shown(i.session_id[:8]), "agent": i.platform, "project": shown(Path(i.cwd or "").name),
                 "title": shown(i.title), "msgs": str(i.messages), "size": human(i.size),
                 "last activity": escape(i.last_activity.replace("T", " ").removesuffix("Z")[:16])}
        rows.append([cells[c] for c in columns])
        plain.append([i.session_id, i.platform, i.cwd or "", i.title, str(i.messages), str(i.size),
                      i.last_activity, i.path])
    table(columns, rows, plain, plain_columns=("id", "agent", "project", "title", "messages", "bytes",
                                               "last_activity", "path"))
    if args.summary:
        for i in infos:
            out.print(f"[bold]{shown(i.session_id[:8])}[/] {shown_block(i.summary)}")
    return ExitCode.OK


# ---------------------------------------------------------------- export
def cmd_export(args: argparse.Namespace) -> int:
    from p2pd.agents.sources import document_file_name, streamable_session
    from p2pd.config import redact_default
    from p2pd.conversation.document_io import write_document

    started = time.perf_counter()
    masking = args.redact if args.redact is not None else redact_default()
    session = streamable_session(args.session)
    suffix = ".a2a.p2pd" if args.compressed else ".a2a.json"
    if session is not None:  # converted as it is written: memory bounded by a message, not the session
        folder = Path(args.output).parent if args.output else Path(".")
        with writing(args.output or f"the export into {folder.resolve()}", reading=session):
            doc, target, size = _export_streamed(args, session, suffix, masking)
    else:
        with status(f"Reading and converting {escape(args.session)}…"):
            doc = load_conversation(args.session)
        if doc.issues or any(s.issues for s in doc.subagents):
            _report_issues(doc)
            if args.strict:
                raise InvalidInputError("malformed lines found (--strict): nothing written")
        doc = redacted(doc, args.redact)
        target = Path(args.output) if args.output else Path(document_file_name(doc, suffix))
        with status(f"Writing {escape(str(target))}…"), writing(target):
            size = write_document(doc, target, compressed=args.compressed, codec=args.codec, pretty=args.pretty)
    c = doc.counts
    seconds = time.perf_counter() - started
    err.print(f"Exported [bold]{shown(doc.title or doc.context_id)}[/]: {counted(c.messages, 'message')}, "
              f"{counted(c.tool_calls, 'tool call')}, {counted(c.subagents, 'subagent')} → {escape(str(target))} "
              f"({human(size)}, {seconds:.2f}s)")
    if args.json:
        print_json({"file": str(target), "bytes": size, "title": doc.title, "platform": doc.origin.platform,
                    "session_id": doc.origin.session_id or doc.context_id, "messages": c.messages,
                    "tool_calls": c.tool_calls, "subagents": c.subagents, "compressed": args.compressed,
                    "malformed_lines": c.malformed_lines, "seconds": round(seconds, 3)})
    else:
        print(target)
    return ExitCode.OK


def _export_streamed(args: argparse.Namespace, session: Path, suffix: str, masking: bool) -> tuple[Any, Path, int]:
    """A Claude Code session written as it is converted (:mod:`p2pd.daemon.packer`; masked as a stream when
    ``masking``) to a staging file, which becomes the target once it is known to be kept (``--strict``). Returns
    the envelope, the target, its size."""
    from collections import Counter

    from p2pd.agents.file_source import document_envelope
    from p2pd.agents.sources import document_file_name
    from p2pd.conversation.document_json import document_from_json
    from p2pd.conversation.redact import RedactionReport
    from p2pd.daemon.packer import Job, run

    folder = Path(args.output).parent if args.output else Path(".")
    staged = folder / f".p2pd-export-{os.getpid()}{suffix}.part"
    try:
        with status(f"Reading, converting and writing {escape(args.session)}…"):
            result = run(Job(str(session), str(staged), kind=args.codec if args.compressed else "json",
                             redact=masking, pretty=args.pretty and not args.compressed))
        doc = document_from_json({**result["head"], "messages": []}, source=str(session))
        if doc.counts.malformed_lines:
            _report_issues(document_envelope(staged))  # (read back as a stream: the envelope holds the issues)
            if args.strict:
                raise InvalidInputError("malformed lines found (--strict): nothing written")
        if masking:
            err.print(f"Redaction: {escape(RedactionReport(Counter(result['masked'])).describe())}")
        target = Path(args.output) if args.output else Path(document_file_name(doc, suffix))
        size = staged.stat().st_size
        staged.replace(target)
    finally:
        staged.unlink(missing_ok=True)
    return doc, target, size


def _report_issues(doc: Any) -> None:
    def show(where: str, issues: Sequence[Any]) -> None:
        for issue in issues[:20]:
            err.print(f"[yellow]warning[/]: {escape(where)} line {issue.line}: {escape(issue.reason)} (kept as is)")
        if len(issues) > 20:
            err.print(f"[yellow]warning[/]: {escape(where)}: {len(issues) - 20} more malformed lines")

    show(doc.origin.transcript_path or "transcript", doc.issues)
    for sub in doc.subagents:
        show(f"subagent {sub.file_name}", sub.issues)
    total = len(doc.issues) + sum(len(s.issues) for s in doc.subagents)
    err.print(f"[yellow]{total} malformed line(s) reported; they travel unchanged in the document[/]")


# ---------------------------------------------------------------- import
def import_json(result: Any, agent: str) -> dict[str, Any]:
    """An import's result as the ``--json`` outputs give it."""
    return {"agent": agent, "session_id": result.session_id, "path": str(result.path), "lines": result.lines,
            "dry_run": bool(result.dry_run), "resume_command": result.resume_command,
            "warnings": [str(w) for w in result.warnings]}


def cmd_import(args: argparse.Namespace) -> int:
    from p2pd.agents.importing import import_file, target_name

    target = target_name(args.agent)
    with status(f"Importing {escape(args.file)} into {target}…"):
        result, doc = import_file(args.file, to=args.agent, cwd=args.cwd, same_account=args.same_account,
                                  dry_run=args.dry_run)
    for w in result.warnings:
        err.print(f"[yellow]note[/]: {escape(w)}")
    verb = "Would import" if result.dry_run else "Imported"
    err.print(f"{verb} [bold]{shown(doc.title or doc.context_id)}[/] ({shown(doc.origin.platform)}) as {target} "
              f"session {result.session_id} ({counted(result.lines, 'line')})")
    err.print(f"  file: {escape(str(result.path))}")
    if args.json:
        print_json({"title": doc.title, "platform": doc.origin.platform, **import_json(result, args.agent)})
        return ExitCode.OK
    err.print("  resume with:")
    print(result.resume_command)
    return ExitCode.OK


# ---------------------------------------------------------------- convert
def cmd_convert(args: argparse.Namespace) -> int:
    """A session file to a document (the packing process's way: converted as it is written, or checked and
    written as it is), or a document back to the agent's session file it came from (read into a spool, written
    one line at a time): memory is bounded by an element, not the conversation, both ways."""
    from p2pd.agents.file_source import origin_platform, said_platform
    from p2pd.agents.sources import named_file

    src, dst = named_file(args.input), Path(args.output)
    to = args.format
    guessed = False
    if to is None and dst.suffix == ".jsonl":  # a .jsonl goes back to the agent it came from
        own = said_platform(src)  # (the envelope p2pd writes says it: the read below checks it)
        guessed = own is not None
        if own is None:
            with status(f"Reading {escape(str(src))}…"):
                own = origin_platform(src)
        to = _restore_target(own)
    if to is None or to == "a2a":
        from p2pd.daemon.packer import Job, run

        compressed = dst.name.endswith(".p2pd")
        with status(f"Converting {escape(str(src))} and writing {escape(str(dst))}…"), \
                writing(dst, reading=src):
            run(Job(str(src), str(dst), kind="lz4" if compressed else "json", pretty=not compressed))
        err.print(f"Wrote A2A conversation {escape(str(dst))} ({human(dst.stat().st_size)})")
        return ExitCode.OK
    agent = _restore_to(src, dst, to, keep_ids=args.keep_ids, check_guess=guessed)
    err.print(f"Wrote {agent.display} session file {escape(str(dst))} ({human(dst.stat().st_size)}"
              f"{', ids kept' if args.keep_ids else ''})")
    return ExitCode.OK


def _restore_target(platform: str) -> str:
    """The agent a document from ``platform`` goes back to (Claude Code for one no agent restores)."""
    from p2pd.agents import registry

    return platform if platform in registry.restore_targets() else "claude-code"


def _restore_to(src: Path, dst: Path, to: str, *, keep_ids: bool, check_guess: bool) -> Agent:
    """The document at ``src`` written back as ``to``'s session file at ``dst``. ``check_guess``: ``to`` was
    chosen from what the document's envelope says; should the document read say otherwise (a later ``origin``
    key wins), it is read again for the agent it names, before anything is written."""
    from p2pd.agents import registry
    from p2pd.agents.file_source import file_source
    from p2pd.support.atomic import atomic_writer

    agent = registry.get(to)
    if agent.restore is None or agent.restore_lines is None:
        raise InvalidInputError(agent.no_restore_reason)
    with status(f"Converting to {agent.display} and writing {escape(str(dst))}…"), \
            file_source(src, agent.restore_lines) as source:
        read = _restore_target(source.document.origin.platform)
        if not check_guess or read == to:
            with writing(dst, reading=src), atomic_writer(dst) as fh:
                agent.restore(source, fh.write, keep_ids=keep_ids)
            return agent
    return _restore_to(src, dst, read, keep_ids=keep_ids, check_guess=False)


# ---------------------------------------------------------------- show
def cmd_show(args: argparse.Namespace) -> int:
    """The conversation read one message at a time (:mod:`p2pd.agents.file_source`; ``--json``: written by the
    packing process's way, then indented as a stream): memory is bounded by a message, not the conversation."""
    from p2pd.agents.sources import named_file

    src = named_file(args.file)
    if args.json:
        return _show_json(src)
    from p2pd.agents.file_source import file_source, no_lines
    from p2pd.cli.pager import paged, pager_command
    from p2pd.conversation.render import render

    with contextlib.ExitStack() as stack:
        with status(f"Reading {escape(args.file)}…"):
            conversation = stack.enter_context(file_source(src, no_lines))
        console = real_console(out)
        show = functools.partial(render, doc=conversation.document, full=args.full, all_branches=args.all,
                                 messages=conversation.messages())
        if args.pager and console.is_terminal and (command := pager_command()) is not None:
            paged(console, command, show)  # (the first page shows while the rest is rendered)
        else:
            show(console)
    return ExitCode.OK


def _show_json(src: Path) -> int:
    """The document, indented, on standard output: written in the line layout to a spool file, then indented from
    there as a stream."""
    from p2pd.conversation.indented import write_indented
    from p2pd.daemon.packer import Job, run
    from p2pd.support import workroom

    with workroom.held_folder(workroom.SHOW) as spool:
        compact = spool / "compact.a2a.json"
        with status(f"Reading {escape(str(src))}…"), writing(f"the work folder {spool}", reading=src):
            run(Job(str(src), str(compact), kind="json"))
        write_indented(compact, sys.stdout.buffer.write)  # (it ends with a newline)
    return ExitCode.OK
