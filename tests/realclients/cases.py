"""The matrix of real-program checks, and the jobs that run one case or one control.

A case is one corpus session imported into one agent (Claude Code or Codex) in one working directory, optionally
into a Codex home that already has a session index; its job imports the session with ``python -m p2pd import``
and resumes it with the real program. A control resumes the original session with its own program.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.corpus import CORPUS, claude_code_files, codex_files, file_id, gemini_files
from tests.realclients import programs
from tests.realclients.programs import Home, Imported, Run

# Working directory names: plain ASCII; an emoji (two UTF-16 code units); a decomposed accent ('e' + U+0301).
CWD_NAMES = {"plain": "proj", "emoji": "emoji\U0001f600dir", "decomposed": "cafe\u0301"}
PLATFORMS = {"claude-code": "claude-code", "codex": "codex", "gemini": "gemini"}


# Sessions the corpus lacks, made here: one prompt, then an agent run longer than a cross-agent import's agent
# message (p2pd/agents/crossagent.py TURN_TEXT), so the receiving program reads consecutive agent messages.
GENERATED = Path(tempfile.gettempdir()) / "p2pd-realclients-sessions"
RUN_CALLS, RUN_OUTPUT_LINES = 60, 1500  # ~40 KB of output per call: ~2.5 MB of text in one turn


def source_id(source: Path) -> str:
    """``platform/…``: a corpus file's path below the corpus, or a generated one's below GENERATED."""
    return file_id(source) if CORPUS and source.is_relative_to(CORPUS) else str(source.relative_to(GENERATED))


def platform_of(source: Path) -> str:
    return {"claude-code": "claude-code", "codex": "codex", "gemini": "gemini"}[Path(source_id(source)).parts[0]]


def _place(path: Path, text: str) -> Path:
    """Write ``text`` at ``path`` unless it is there already (every worker makes the same bytes: atomic)."""
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return path


def long_runs() -> list[Path]:
    """A Claude Code session and a Codex rollout of one prompt, then RUN_CALLS tool calls with long outputs, a
    closing answer and a last prompt; their ids made the same on every run (the files are written once)."""
    from tests.agents.claude_code.helpers import Session
    from tests.agents.helpers import Rollout

    s = Session(session_id="5e551000-0000-4000-8000-00000000c1a0")
    r = Rollout(session_id="0199a1b2-0000-7000-8000-00000000c0de")
    s.user("Port the parser module, every step, without stopping to ask")
    r.user("Port the parser module, every step, without stopping to ask")
    for i in range(RUN_CALLS):
        output = f"step {i}\n" + f"ok {i}: compiled and checked\n" * RUN_OUTPUT_LINES
        s.tool_call("Bash", {"command": f"make port-step-{i}"}, output)
        r.call("exec_command", {"cmd": f"make port-step-{i}"}, output, f"call_run_{i}")
    s.assistant([{"type": "text", "text": "All steps are done."}])
    r.assistant("All steps are done.")
    s.user("Thanks. What is left?")
    r.user("Thanks. What is left?")
    ids: dict[str, str] = {}  # the helper's random uuids and tool ids, renumbered in order of appearance
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}|(?:toolu|msg)_[0-9a-f]{20}",
                  lambda m: ids.setdefault(m.group(), m.group()[:-8] + f"{len(ids):08x}"), s.text())
    return [_place(GENERATED / "claude-code" / "long-run.jsonl", text),
            _place(GENERATED / "codex" / "long-run.jsonl", r.text())]


@dataclass(frozen=True)
class Case:
    source: Path
    target: str  # "claude-code" or "codex"
    cwd: str = "plain"  # a key of CWD_NAMES
    index: bool = False  # Codex: a session index exists before the import
    # "resume": -p --resume ID / exec resume ID; "continue": a genuine Claude Code session in the same working
    # directory first (which names the project folder), then the import, then claude -p --continue;
    # "screen": the interactive `codex resume ID` under tmux.
    how: str = "resume"

    @property
    def platform(self) -> str:
        return platform_of(self.source)

    @property
    def id(self) -> str:
        extra = "" if self.cwd == "plain" else f"-{self.cwd}"
        extra += "-indexed" if self.index else ""
        extra += "" if self.how == "resume" else f"-{self.how}"
        return f"{self.platform}>{self.target}{extra}:{source_id(self.source).split('/', 1)[1]}"


def sources() -> list[Path]:
    # Subagent transcripts are parts of their parent session (Claude Code itself does not open them by id).
    return claude_code_files(include_subagents=False) + codex_files() + gemini_files()


# A real (not hand-made) session of each platform, for the cases run once per platform.
_PREFERRED = ("claude-code/spotter/short.jsonl", "codex/unleash/codex-10turn.jsonl",
              "gemini/unleash/gemini-sample.json")


def _representatives(srcs: list[Path], prefer: tuple[str, ...] = ()) -> list[Path]:
    out = []
    for platform in PLATFORMS:
        mine = [s for s in srcs if platform_of(s) == platform]
        preferred = [s for s in mine if file_id(s) in prefer] + [s for s in mine if file_id(s) in _PREFERRED]
        if mine:
            out.append((preferred or mine)[0])
    return out


def all_cases() -> list[Case]:
    """Each session into Claude Code and into a Codex home with an index (the usual state since Codex 0.99); per
    source platform, one into a fresh Codex home and the unusual working directories into both."""
    out: list[Case] = []
    srcs = sources()
    for src in srcs:
        out.append(Case(src, "claude-code"))
        out.append(Case(src, "codex", index=True))
    for src in _representatives(srcs):
        out.append(Case(src, "codex"))
        for cwd in ("plain", "emoji", "decomposed"):
            if cwd != "plain":
                out.append(Case(src, "claude-code", cwd))
                out.append(Case(src, "codex", cwd, index=True))
            out.append(Case(src, "claude-code", cwd, how="continue"))
    # Codex's screen draws a session's history from its event lines; codex-10turn has none, codex-sample has.
    for src in _representatives(srcs, ("codex/unleash/codex-sample.jsonl",)):
        out.append(Case(src, "codex", index=True, how="screen"))
    claude_run, codex_run = long_runs()  # one agent run, carried in several agent messages
    out += [Case(claude_run, "codex", index=True), Case(codex_run, "claude-code")]
    return out


@dataclass
class Outcome:
    """What a case's job did: the import (an Imported, or the failed Run) and the resume."""

    case: Case
    cwd: Path
    imported: Imported | Run
    resumed: Run | None = None
    reported_id: str | None = None
    screen: str | None = None  # the interactive screen, for "screen" cases
    genuine: Run | None = None  # "continue" cases: the genuine session made before the import
    genuine_folders: list[str] | None = None  # the project folders Claude Code made for it
    imported_folders: list[str] | None = None  # the project folders that hold the imported session


def run_case(case: Case, base: Path, index_template: Path | None) -> Outcome:
    work = Path(tempfile.mkdtemp(prefix="case-", dir=base))
    home = programs.new_home(work)
    cwd = work / CWD_NAMES[case.cwd]
    cwd.mkdir(parents=True)
    if case.index:
        assert index_template is not None
        shutil.copytree(index_template, home.codex)
    genuine = genuine_folders = None
    if case.how == "continue":
        genuine, _ = programs.claude_new_session(home, cwd)
        genuine_folders = programs.claude_folders_holding(home, "*")
    imported = programs.import_session(case.source, to=case.target, cwd=cwd, home=home)
    out = Outcome(case, cwd, imported, genuine=genuine, genuine_folders=genuine_folders)
    if not isinstance(imported, Imported):
        return out
    if case.how == "screen":
        if shutil.which("tmux") is None:
            return out
        out.screen = programs.codex_screen(home, cwd, imported.session_id, imported.first_user_text)
    elif case.how == "continue":
        out.imported_folders = programs.claude_folders_holding(home, imported.session_id)
        out.resumed, out.reported_id = programs.resume_claude(home, cwd, None)
    elif case.target == "claude-code":
        out.resumed, out.reported_id = programs.resume_claude(home, cwd, imported.session_id)
    else:
        out.resumed, out.reported_id = programs.resume_codex(home, cwd, imported.session_id)
    return out


@dataclass
class Control:
    source: Path
    run: Run
    session_id: str
    reported_id: str | None


def run_control(source: Path, base: Path) -> Control:
    """The original session resumed by its own program: what that program sends is the expectation."""
    work = Path(tempfile.mkdtemp(prefix="control-", dir=base))
    home = programs.new_home(work)
    cwd = work / "control"
    cwd.mkdir(parents=True)
    if platform_of(source) == "claude-code":
        sid = programs.place_claude_original(source, home, cwd)
        run, reported = programs.resume_claude(home, cwd, sid)
    else:
        sid = programs.place_codex_original(source, home)
        run, reported = programs.resume_codex(home, cwd, sid)
    return Control(source, run, sid, reported)


def make_index_template(base: Path) -> tuple[Path, Run]:
    """A Codex home with a session index made by one genuine session; cases copy it."""
    home = Home(base / "index-template")
    home.root.mkdir(parents=True)
    cwd = base / "index-template-cwd"
    cwd.mkdir()
    run = programs.codex_first_session(home, cwd)
    return home.codex, run


def needs_control(case: Case) -> bool:
    return case.platform in ("claude-code", "codex")


__all__ = ["CWD_NAMES", "Case", "Control", "Home", "Outcome", "all_cases", "make_index_template", "needs_control",
           "run_case", "run_control"]
