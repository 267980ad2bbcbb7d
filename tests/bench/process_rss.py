"""Peak RSS of the p2pd processes a big conversation goes through besides the daemons and the handover
(``tests/bench/memory.py --rss``; the sender and receiver: ``tests/bench/handover.py``).

For each size, on a generated real-shaped session (``tests/transfer/gen.py``): the daemon's packing process
(``python -m p2pd.daemon.packer``, run by ``POST /send``, handoffs and ``POST /export``), ``p2pd export`` (compact
JSON, then ``--compressed``), ``p2pd import`` of that document and of that blob into a throwaway Claude Code home
and of that document into Codex, ``p2pd export --redact`` and ``--pretty``, ``p2pd convert`` both ways, ``p2pd
show`` and ``show --json``, the daemon's packing process given that document, and ``p2pd send`` of that document
and ``send --redact`` of the session, with no peer (their whole packing, then the fallback file), and ``p2pd
sessions`` of a folder holding the session; then a generated Codex rollout of the same size
(``tests/transfer/gen.py``), exported, sent, imported into Claude Code and into Codex, and converted back; and a
generated Gemini CLI recording (``generate_recording``), exported, sent, imported into Claude Code and into Codex,
and shown, and the same messages as a JSON session, exported, sent and imported; and a Claude Code session of a
lead and its agent team (``generate_conversation(team_every=20)``), exported, sent and imported; and one of a
single prompt and an agent run (``one_run=True``), imported into Codex. ``--only TEXT`` runs the processes whose
description holds TEXT.
Peak RSS from ``wait4``; seconds are wall time on a shared machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MB = 1_000_000
BAR_MIB = 200.0


def run(argv: list[str], env: dict[str, str], cwd: Path, ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """(peak RSS MiB, seconds) of one process; it must end with a status in ``ok``."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) not in ok:
        raise SystemExit(f"{' '.join(argv[2:])} failed: {err[-2000:]}")
    return usage.ru_maxrss / 1024, seconds


def generated(path: Path, call: str, env: dict[str, str]) -> Path:
    """``path`` written by ``call`` of ``tests.transfer.gen`` (e.g. ``generate_rollout(1000, 7)``), in a child: the
    generator's memory stays out of this process."""
    subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; from tests.transfer import gen; "
                    f"Path(sys.argv[1]).write_bytes(gen.{call})", str(path)], check=True, env=env, cwd=ROOT)
    return path


def listed(session: Path, work: Path) -> Path:
    """A Claude Code folder whose one project holds ``session`` (linked, not copied)."""
    root = work / "listed"
    project = root / "projects" / "-work"
    project.mkdir(parents=True, exist_ok=True)
    target = project / "5f0e1c9a-1111-2222-3333-444444444444.jsonl"
    target.unlink(missing_ok=True)
    os.link(session, target)
    return root


def main(sizes: list[float], only: str | None = None) -> int:
    from p2pd.daemon.packer import Job
    from p2pd.errors import ExitCode

    py = sys.executable
    rows: list[tuple[str, str, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="p2pd-rss-") as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("P2PD_", "CLAUDE_"))}
        env.update(PYTHONPATH=str(ROOT), P2PD_HOME=str(work / "home"), P2PD_CONFIG=str(work / "config.toml"),
                   CLAUDE_CONFIG_DIR=str(work / "claude"), HOME=str(work))
        for mb in sizes:
            session = work / f"s{mb:g}.jsonl"
            subprocess.run([py, str(ROOT / "tests" / "bench" / "memory.py"), "--generate", str(session),
                            str(int(mb * MB)), "7"], check=True, env=env)
            label = f"{mb:g} MB"
            doc, blob = work / f"s{mb:g}.a2a.json", work / f"s{mb:g}.a2a.p2pd"
            no_peer = ["--signal", "ws://127.0.0.1:9/", "--timeout", "2", "--connect-timeout", "2", "--fallback-dir",
                       str(work / "fallback")]
            steps = [
                ("daemon packing process (send)", [py, "-m", "p2pd.daemon.packer",
                                                   Job(str(session), str(work / "packed.a2a.p2pd")).to_arg()]),
                ("p2pd export", [py, "-m", "p2pd", "export", str(session), "-o", str(doc)]),
                ("p2pd export --compressed", [py, "-m", "p2pd", "export", str(session), "--compressed", "-o",
                                              str(blob)]),
                ("p2pd import (.a2a.json)", [py, "-m", "p2pd", "import", str(doc), "--cwd", str(work)]),
                ("p2pd import (.a2a.p2pd)", [py, "-m", "p2pd", "import", str(blob), "--cwd", str(work)]),
                ("p2pd import (.a2a.json) --agent codex (readable turns made one at a time)",
                 [py, "-m", "p2pd", "import", str(doc), "--agent", "codex", "--cwd", str(work)]),
                ("p2pd export --redact", [py, "-m", "p2pd", "export", str(session), "--redact", "-o",
                                          str(work / "redacted.a2a.json")]),
                ("p2pd export --pretty (compact into a spool, then indented as a stream)",
                 [py, "-m", "p2pd", "export", str(session), "--pretty", "-o", str(work / "pretty.a2a.json")]),
                ("p2pd convert SESSION.jsonl X.a2a.json", [py, "-m", "p2pd", "convert", str(session),
                                                           str(work / "converted.a2a.json")]),
                ("p2pd convert X.a2a.json back.jsonl --keep-ids (read into a spool, written line by line)",
                 [py, "-m", "p2pd", "convert", str(doc), str(work / "back.jsonl"), "--keep-ids"]),
                ("p2pd convert X.a2a.json back.jsonl (its active chain under a new id)",
                 [py, "-m", "p2pd", "convert", str(doc), str(work / "back-new.jsonl")]),
                ("p2pd show X.a2a.json (read one message at a time)",
                 [py, "-m", "p2pd", "show", str(doc), "--no-pager"]),
                ("p2pd show --json X.a2a.json", [py, "-m", "p2pd", "show", str(doc), "--json"]),
                ("daemon packing process (send of the .a2a.json)",
                 [py, "-m", "p2pd.daemon.packer", Job(str(doc), str(work / "packed.a2a.p2pd")).to_arg()]),
                # No peer (a signaling server that refuses): the whole packing runs, then the fallback file.
                ("p2pd send (.a2a.json; no peer: the fallback file)", [py, "-m", "p2pd", "send", str(doc), *no_peer]),
                ("p2pd send --redact (no peer: the fallback file)",
                 [py, "-m", "p2pd", "send", str(session), "--redact", *no_peer]),
                ("p2pd import SESSION.jsonl (the session file itself)",
                 [py, "-m", "p2pd", "import", str(session), "--cwd", str(work)]),
                ("p2pd sessions --json (a Claude Code folder holding that session)",
                 ["env", f"CLAUDE_CONFIG_DIR={listed(session, work)}", py, "-m", "p2pd", "sessions", "--json"]),
            ]
            size = int(mb * MB)
            rollout = generated(work / f"rollout-{mb:g}.jsonl", f"generate_rollout({size}, 7)", env)  # (Codex)
            steps += [
                ("p2pd export (Codex rollout)", [py, "-m", "p2pd", "export", str(rollout), "-o",
                                                 str(work / "rollout.a2a.json")]),
                ("p2pd send (Codex rollout; no peer: the fallback file)",
                 [py, "-m", "p2pd", "send", str(rollout), *no_peer]),
                ("p2pd import of a Codex rollout into Claude Code (readable turns made one at a time)",
                 [py, "-m", "p2pd", "import", str(rollout), "--cwd", str(work)]),
                ("p2pd import of a Codex rollout into Codex (written back line for line)",
                 [py, "-m", "p2pd", "import", str(rollout), "--agent", "codex", "--cwd", str(work)]),
                ("p2pd convert of that document back to the rollout",
                 [py, "-m", "p2pd", "convert", str(work / "rollout.a2a.json"), str(work / "rollout-back.jsonl")]),
            ]
            recording = generated(work / f"gemini-{mb:g}.jsonl", f"generate_recording({size}, 7)", env)
            steps += [
                ("p2pd export (Gemini CLI recording)", [py, "-m", "p2pd", "export", str(recording), "-o",
                                                        str(work / "gemini.a2a.json")]),
                ("p2pd send (Gemini CLI recording; no peer: the fallback file)",
                 [py, "-m", "p2pd", "send", str(recording), *no_peer]),
                ("p2pd import of a Gemini CLI recording into Claude Code",
                 [py, "-m", "p2pd", "import", str(recording), "--cwd", str(work)]),
                ("p2pd import of a Gemini CLI recording into Codex",
                 [py, "-m", "p2pd", "import", str(recording), "--agent", "codex", "--cwd", str(work)]),
                ("p2pd show (Gemini CLI recording)", [py, "-m", "p2pd", "show", str(recording)]),
            ]
            gemini_json = generated(work / f"session-{mb:g}.json",  # the same messages as a JSON session
                                    f"as_json_session(Path({str(recording)!r}).read_bytes())", env)
            steps += [
                ("p2pd export (Gemini CLI JSON session)", [py, "-m", "p2pd", "export", str(gemini_json), "-o",
                                                           str(work / "gemini-json.a2a.json")]),
                ("p2pd send (Gemini CLI JSON session; no peer: the fallback file)",
                 [py, "-m", "p2pd", "send", str(gemini_json), *no_peer]),
                ("p2pd import of a Gemini CLI JSON session into Claude Code",
                 [py, "-m", "p2pd", "import", str(gemini_json), "--cwd", str(work)]),
            ]
            team = generated(work / f"team-{mb:g}.jsonl",  # a Claude Code session of a lead and its agent team
                             f"generate_conversation({size}, 7, team_every=20)", env)
            steps += [
                ("p2pd export (agent-team session)", [py, "-m", "p2pd", "export", str(team), "-o",
                                                      str(work / "team.a2a.json")]),
                ("p2pd send (agent-team session; no peer: the fallback file)",
                 [py, "-m", "p2pd", "send", str(team), *no_peer]),
                ("p2pd import of an agent-team session (the session file itself)",
                 [py, "-m", "p2pd", "import", str(team), "--cwd", str(work)]),
            ]
            one_run = generated(work / f"one-run-{mb:g}.jsonl",  # one prompt, then an agent run of the whole size
                                f"generate_conversation({size}, 7, one_run=True)", env)
            steps += [
                ("p2pd import --agent codex of a single-prompt session (one agent run)",
                 [py, "-m", "p2pd", "import", str(one_run), "--agent", "codex", "--cwd", str(work)]),
            ]
            steps = [(name, argv) for name, argv in steps if only is None or only in name]
            for name, argv in steps:
                rss, seconds = run(argv, env, work, ok=(0, ExitCode.FALLBACK_WRITTEN))
                rows.append((label, name, rss, seconds))
                print(f"  {label} {name}: {rss:.0f} MiB, {seconds:.1f} s", flush=True)
            for f in (doc, blob, work / "packed.a2a.p2pd", work / "redacted.a2a.json", session, rollout,
                      work / "rollout.a2a.json", work / "pretty.a2a.json", work / "converted.a2a.json",
                      work / "back.jsonl", work / "back-new.jsonl", work / "rollout-back.jsonl", recording,
                      work / "gemini.a2a.json", team, work / "team.a2a.json", gemini_json,
                      work / "gemini-json.a2a.json", one_run, *(work / "fallback").glob("*")):
                f.unlink(missing_ok=True)
    print()
    print("| session | process | peak RSS MiB | seconds |")
    print("|---|---|---:|---:|")
    for label, name, rss, seconds in rows:
        print(f"| {label} | {name} | {rss:.0f}{' **over**' if rss > BAR_MIB else ''} | {seconds:.1f} |")
    return 1 if any(rss > BAR_MIB for *_, rss, _ in rows) else 0


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sizes", nargs="*", type=float, default=[50.0, 200.0], help="session sizes in MB")
    ap.add_argument("--only", help="only the processes whose description holds this text (e.g. Gemini)")
    args = ap.parse_args()
    sys.exit(main(args.sizes, args.only))
