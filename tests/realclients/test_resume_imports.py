"""Every corpus session, imported with p2pd into Claude Code and into Codex, opens in the real program.

Pass: ``python -m p2pd import`` succeeds; ``claude -p --resume ID ping`` / ``codex exec resume ID ping`` exits 0
against the stand-in with its reply; the session id the program reports is the imported id; and the request it
sends the model holds the imported turns: every tool call of the original's active chain (the control: the
original resumed by its own program) — as a tool call within one agent, as its ``tool call: NAME (id ID)`` text
across agents — and the original's last user text (when the control has one).

Two generated sessions (``cases.long_runs``: one prompt, then an agent run past a cross-agent agent message's
text) go across, and must reach the model as consecutive agent messages. ``continue`` cases first make a genuine
session in the working directory and check that the import went into the project folder Claude Code made for it
(Claude Code 2.1.330 also finds sessions in a wrongly named folder, so resuming alone cannot tell), then
``claude -p --continue ping``. ``screen`` cases open the interactive
``codex resume ID`` under tmux in a home with a session index: it must show the history, not a refusal.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from tests.realclients import programs, standin
from tests.realclients.cases import GENERATED, Case, Outcome, all_cases, needs_control
from tests.realclients.conftest import RealRuns
from tests.realclients.programs import Imported
from tests.realclients.turns import Turns, conversation_request, gemini_turns, request_turns

pytestmark = pytest.mark.slow

CASES = all_cases()

def _param(case: Case) -> object:
    return pytest.param(case, id=case.id)


def _expected(case: Case, runs: RealRuns) -> Turns:
    if not needs_control(case):
        return gemini_turns(case.source)
    control = runs.control(case.source)
    assert control.run.returncode == 0, f"the control (original session, own program) failed:\n{control.run.describe()}"
    body = conversation_request(control.run.requests, "messages" if case.platform == "claude-code" else "input")
    assert body is not None, f"the control sent no request ending in the prompt:\n{control.run.describe()}"
    return request_turns(body)


def _resumed(out: Outcome) -> tuple[programs.Run, str]:
    assert isinstance(out.imported, Imported), f"p2pd import failed:\n{out.imported.describe()}"
    run = out.resumed
    assert run is not None
    context = f"{run.describe()}\n--- import\n{out.imported.run.describe()}"
    assert run.returncode == 0, context
    return run, context


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_import_resumes_in_real_program(case: Case, real_runs: RealRuns) -> None:
    out = real_runs.outcome(case)
    if case.how == "screen":
        if shutil.which("tmux") is None:
            pytest.skip("tmux is not installed (.ci/setup installs it)")
        _check_screen(out)
        return
    if case.how == "continue":
        _check_folder(out)
    run, context = _resumed(out)
    assert isinstance(out.imported, Imported)
    if case.target == "claude-code":
        assert json.loads(run.stdout).get("result") == standin.REPLY, context
        assert "could not be restored" not in run.stdout + run.stderr, context
    else:
        assert standin.REPLY in run.stdout, context
    assert out.reported_id == out.imported.session_id, context

    body = conversation_request(run.requests, "messages" if case.target == "claude-code" else "input")
    assert body is not None, f"no model request ended in the prompt\n{context}"
    got = request_turns(body)
    want = _expected(case, real_runs)
    print(f"{case.id}: {len(want.calls)} tool calls, {len(want.user_texts)} user texts expected; "
          f"request has {len(got.calls)} calls, {len(got.user_texts)} user texts")
    if case.platform == case.target:
        missing = [c for c in want.calls if c not in got.calls]
    else:
        # by id: Claude Code renames some tools when it loads a session (Task → Agent), the text keeps the original
        text = got.all_text()
        missing = [c for c in want.calls if not re.search(rf"tool call: \S+ \(id {re.escape(c.id)}\)\]", text)]
    assert not missing, f"{len(missing)} of {len(want.calls)} tool calls missing from the request: {missing}"
    if case.source.is_relative_to(GENERATED):  # one agent run, carried as consecutive agent messages
        run_texts = [t for t in got.agent_texts if "tool call: " in t]
        assert len(run_texts) >= 2, f"the run reached the model as {len(run_texts)} agent message(s)"
    last = want.last_user_text
    if last is None:  # hand-made files whose lines are all roots: Claude Code's chain is the last line only
        return
    assert any(last.strip() in t for t in got.user_texts), (
        f"the last user text is missing: {last[:200]!r}\nexpected user texts: {[t[:80] for t in want.user_texts]}"
        f"\nrequest's user texts: {[t[:80] for t in got.user_texts]}")


def _check_folder(out: Outcome) -> None:
    """The import is in the project folder Claude Code itself made for the working directory."""
    assert out.genuine is not None and out.genuine.returncode == 0, out.genuine and out.genuine.describe()
    assert out.genuine_folders and len(out.genuine_folders) == 1, out.genuine_folders
    assert out.imported_folders == out.genuine_folders, (
        f"Claude Code keeps {out.cwd}'s sessions in {out.genuine_folders}; the import is in {out.imported_folders}")


def _check_screen(out: Outcome) -> None:
    """The interactive ``codex resume ID`` shows the imported history (its first user text as a past prompt)."""
    assert isinstance(out.imported, Imported), f"p2pd import failed:\n{out.imported.describe()}"
    screen = out.screen or ""
    needle = out.imported.first_user_text.rstrip("…").strip()[:40]
    assert needle, out.imported.run.describe()
    failures = [f for f in programs.SCREEN_FAILURES if f in screen]
    assert not failures, f"codex resume showed {failures}:\n{screen[-2500:]}"
    assert programs.shows_prompt(screen, needle), f"the screen does not show '› …{needle}':\n{screen[-2500:]}"


def test_index_template_has_an_index(real_runs: RealRuns) -> None:
    """The Codex home the "indexed" cases start from holds the session index a genuine session made."""
    if not any(c.index for c in CASES):
        pytest.skip("no indexed cases")
    codex_home, run = real_runs.index_template()
    assert run.returncode == 0, run.describe()
    assert (codex_home / "state_5.sqlite").is_file(), sorted(p.name for p in codex_home.iterdir())
