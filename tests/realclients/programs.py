"""Running the real agent programs (pinned in package-lock.json here) offline against the stand-in.

Each run gets its own home folder (``HOME``, ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME`` inside it) and its own stand-in,
so runs can go in parallel. :func:`import_session` runs ``python -m p2pd import`` as a user would;
:func:`resume_claude` / :func:`resume_codex` resume a session with one prompt and return what the program said and
what it sent to the model.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.realclients import standin

HERE = Path(__file__).resolve().parent
BIN = HERE / "node_modules" / ".bin"
CLAUDE = BIN / "claude"
CODEX = BIN / "codex"
PROMPT = "ping"
TIMEOUT = 90.0


def missing() -> str | None:
    """Why the programs cannot run here, or None when both are installed."""
    for exe in (CLAUDE, CODEX):
        if not exe.exists():
            how = "run .ci/setup" if shutil.which("npm") else "npm is not installed"
            return f"{exe.name} is not installed in {BIN} ({how})"
    return None


# The environment the programs start from, taken once, in the thread that imports this module: the cases run in
# a thread pool while pytest's own thread sets and deletes PYTEST_CURRENT_TEST, and iterating os.environ during
# such a change raises KeyError (CI, 1271f63). The agents' own variables are left out: each home sets its own.
_BASE_ENV = {k: v for k, v in os.environ.items()
             if not k.startswith(("ANTHROPIC_", "CLAUDE", "CODEX_", "OPENAI_")) and k != "PYTEST_CURRENT_TEST"}


@dataclass
class Home:
    """A user's home for one run: the Claude Code and Codex configuration folders live inside it."""

    root: Path

    @property
    def claude(self) -> Path:
        return self.root / ".claude"

    @property
    def codex(self) -> Path:
        return self.root / ".codex"

    def env(self) -> dict[str, str]:
        env = dict(_BASE_ENV)
        env.update(HOME=str(self.root), CLAUDE_CONFIG_DIR=str(self.claude), CODEX_HOME=str(self.codex),
                   DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1", DISABLE_ERROR_REPORTING="1",
                   CLAUDE_CODE_MAX_RETRIES="0", NO_COLOR="1")
        return env


def new_home(base: Path) -> Home:
    root = base / f"home-{uuid.uuid4().hex[:8]}"
    root.mkdir(parents=True)
    return Home(root)


@dataclass
class Run:
    """What one program run did: its exit code and output, and the model requests it sent."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    requests: list[Any] = field(default_factory=list)

    def describe(self) -> str:
        return (f"$ {' '.join(self.argv)}\nexit {self.returncode}\n--- stdout\n{self.stdout[-3000:]}\n"
                f"--- stderr\n{self.stderr[-3000:]}")


def _run(argv: list[str], *, cwd: Path, env: dict[str, str], stdin: str | None = None,
         timeout: float = TIMEOUT) -> Run:
    try:
        r = subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=timeout,
                           stdin=None if stdin is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return Run(argv, -1, out, err + f"\n[timed out after {timeout} s]")
    return Run(argv, r.returncode, r.stdout, r.stderr)


@dataclass
class Imported:
    session_id: str
    run: Run

    @property
    def first_user_text(self) -> str:
        """The title p2pd prints ("Imported TITLE (platform) as …"): the first user text, maybe shortened."""
        m = re.search(r"^Imported (.*) \([\w-]+\) as ", self.run.stderr, re.M)
        return m.group(1) if m else ""


_RESUME = re.compile(r"(?:claude --resume|codex resume) (\S+)\s*$")


def import_session(source: Path, *, to: str, cwd: Path, home: Home) -> Imported | Run:
    """``python -m p2pd import SOURCE --to TO --cwd CWD``; the id comes from the printed resume command."""
    run = _run([sys.executable, "-m", "p2pd", "import", str(source), "--agent", to, "--cwd", str(cwd)],
               cwd=cwd, env=home.env())
    m = _RESUME.search(run.stdout.strip().splitlines()[-1]) if run.returncode == 0 and run.stdout.strip() else None
    return Imported(m.group(1), run) if m else run


def resume_claude(home: Home, cwd: Path, session_id: str | None, *, new: bool = False) -> tuple[Run, str | None]:
    """``claude -p --resume ID ping`` (``--continue`` when no id is given, a new session when ``new``); returns the
    run and the session id Claude Code reports."""
    with standin.running() as api:
        env = home.env()
        env.update(ANTHROPIC_API_KEY="sk-ant-standin-key", ANTHROPIC_BASE_URL=api.url)
        which = [] if new else ["--resume", session_id] if session_id else ["--continue"]
        run = _run([str(CLAUDE), "-p", "--output-format", "json", *which, PROMPT], cwd=cwd, env=env)
        run.requests = api.model_requests("/v1/messages")
    reported = None
    try:
        result = json.loads(run.stdout)
        reported = result.get("session_id") if isinstance(result, dict) else None
    except ValueError:
        pass
    return run, reported


def claude_new_session(home: Home, cwd: Path) -> tuple[Run, str | None]:
    """A genuine new Claude Code session in ``cwd`` (Claude Code names its project folder)."""
    return resume_claude(home, cwd, None, new=True)


def claude_folders_holding(home: Home, session_id: str) -> list[str]:
    """The names of the project folders holding ``SESSION_ID.jsonl`` (``*``: any session)."""
    root = home.claude / "projects"
    return sorted({p.parent.name for p in root.glob(f"*/{session_id}.jsonl")}) if root.is_dir() else []


def codex_config(home: Home, url: str, cwd: Path) -> None:
    """Point Codex at the stand-in, trust ``cwd``, and log in with a dummy API key."""
    home.codex.mkdir(parents=True, exist_ok=True)
    project = json.dumps(str(cwd), ensure_ascii=False)  # a TOML basic string
    (home.codex / "config.toml").write_text(
        f'openai_base_url = "{url}/v1"\n\n[projects.{project}]\ntrust_level = "trusted"\n', encoding="utf-8")


def _codex_login(home: Home, cwd: Path) -> Run:
    return _run([str(CODEX), "login", "--with-api-key"], cwd=cwd, env=home.env(), stdin="sk-standin-key")


_HEADER_ID = re.compile(r"^session id: (\S+)\s*$", re.M)


def resume_codex(home: Home, cwd: Path, session_id: str) -> tuple[Run, str | None]:
    """``codex exec resume ID ping``; returns the run and the id of the header's ``session id:`` line."""
    with standin.running() as api:
        codex_config(home, api.url, cwd)
        login = _codex_login(home, cwd)
        if login.returncode != 0:
            return login, None
        run = _run([str(CODEX), "exec", "--skip-git-repo-check", "resume", session_id, PROMPT], cwd=cwd,
                   env=home.env())
        run.requests = api.model_requests("/v1/responses")
    m = _HEADER_ID.search(run.stderr + "\n" + run.stdout)
    return run, (m.group(1) if m else None)


SCREEN_FAILURES = ("Model provider unavailable", "No saved session found", "no rollout found")


def shows_prompt(screen: str, text: str) -> bool:
    """Whether a past prompt line (``› …``) of the screen holds ``text`` (the line may carry tags before it)."""
    return any(line.lstrip().startswith("› ") and text in line for line in screen.splitlines())


def codex_screen(home: Home, cwd: Path, session_id: str, first_text: str, wait: float = 40.0) -> str:
    """The screen of the interactive ``codex resume --no-daemon ID`` under tmux, once it shows the first user
    text as a past prompt (``› TEXT``) or a failure, or after ``wait`` seconds."""
    tmux = shutil.which("tmux")
    assert tmux, "tmux is needed for the interactive check (.ci/setup installs it)"
    codex_config(home, "http://127.0.0.1:9", cwd)  # the screen check sends nothing
    env = home.env()
    env["TERM"] = "xterm-256color"
    name = f"p2pd-rc-{uuid.uuid4().hex[:10]}"
    tmux_run = [tmux, "-L", name]  # a server of its own, started with this home's environment
    subprocess.run([*tmux_run, "new-session", "-d", "-s", name, "-x", "200", "-y", "50", "-c", str(cwd),
                    str(CODEX), "resume", "--no-daemon", session_id], env=env, check=True, timeout=30)
    screen = ""
    needle = first_text.rstrip("…").strip()[:40]
    capture = [*tmux_run, "capture-pane", "-p", "-S", "-", "-t", name]  # with the scrollback
    socket = subprocess.run([*tmux_run, "display-message", "-p", "#{socket_path}"], capture_output=True, text=True,
                            timeout=30).stdout.strip()
    try:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            time.sleep(1.0)
            r = subprocess.run(capture, capture_output=True, text=True, timeout=30)
            screen = r.stdout if r.returncode == 0 else screen
            if any(f in screen for f in SCREEN_FAILURES) or shows_prompt(screen, needle):
                time.sleep(1.0)  # let a failure notice that follows the history be drawn too
                r = subprocess.run(capture, capture_output=True, text=True, timeout=30)
                return r.stdout if r.returncode == 0 else screen
    finally:
        subprocess.run([*tmux_run, "kill-server"], capture_output=True, timeout=30)
        if socket:
            Path(socket).unlink(missing_ok=True)
    return screen


def codex_first_session(home: Home, cwd: Path) -> Run:
    """One genuine ``codex exec`` session, which makes Codex create its session index (``state_5.sqlite``)."""
    with standin.running() as api:
        codex_config(home, api.url, cwd)
        login = _codex_login(home, cwd)
        if login.returncode != 0:
            return login
        run = _run([str(CODEX), "exec", "--skip-git-repo-check", "say hello"], cwd=cwd, env=home.env())
        run.requests = api.model_requests("/v1/responses")
    return run


def claude_folder(cwd: Path) -> str:
    """Claude Code's project folder name for ``cwd``: each UTF-16 code unit outside [a-zA-Z0-9] becomes ``-``.

    Used only to place original sessions for the control runs (whose working directories are plain ASCII).
    """
    text = str(cwd)
    assert text.isascii(), text
    return re.sub(r"[^a-zA-Z0-9]", "-", text)


def place_claude_original(source: Path, home: Home, cwd: Path) -> str:
    """Put a Claude Code session file where Claude Code looks for ``cwd``'s sessions; returns its session id."""
    sid = ""
    for raw in source.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict) and isinstance(line.get("sessionId"), str):
            sid = line["sessionId"]
            break
    try:
        sid = str(uuid.UUID(sid))
    except ValueError:
        sid = str(uuid.uuid4())
    folder = home.claude / "projects" / claude_folder(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, folder / f"{sid}.jsonl")
    return sid


def place_codex_original(source: Path, home: Home) -> str:
    """Put a Codex rollout under ``$CODEX_HOME/sessions`` as Codex names them; returns its session id.

    Codex opens only rollouts with a UUID id and a configured model provider, so a copy whose id is not a UUID
    gets a fresh one, and one made with another provider (the corpus has ``"local"``) is marked ``"openai"``, the
    provider configured here; nothing else changes.
    """
    lines = source.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    meta = first["payload"]
    try:
        sid = str(uuid.UUID(str(meta["id"])))
    except ValueError:
        sid = str(uuid.uuid4())
    meta["id"] = sid
    meta["model_provider"] = "openai"
    day = home.codex / "sessions" / "2026" / "01" / "01"
    day.mkdir(parents=True, exist_ok=True)
    text = "\n".join([json.dumps(first), *lines[1:]]) + "\n"
    (day / f"rollout-2026-01-01T00-00-00-{sid}.jsonl").write_text(text, encoding="utf-8")
    return sid
