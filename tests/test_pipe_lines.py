"""tests/pipe_lines.py: the deadline holds while a living process prints nothing, and nothing after the matching
line is lost to a later ``communicate``."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.pipe_lines import read_until

SILENT = "import sys, time; print('first', file=sys.stderr, flush=True); time.sleep(120)"
TALKS = "import sys; sys.stderr.write('one\\nCode: 7-a-b\\nafter\\r\\nlast')"


def test_a_silent_living_process_does_not_hold_the_reader_past_its_deadline() -> None:
    proc = subprocess.Popen([sys.executable, "-c", SILENT], stderr=subprocess.PIPE, text=True)
    try:
        match, said = read_until(proc.stderr, re.compile(r"Code: (\S+)"), 1.0)  # type: ignore[arg-type]
        assert match is None and said == "first\n"
        assert proc.poll() is None  # it gave up on a process that still runs (it sleeps 120 s)
    finally:
        proc.kill()
        proc.communicate(timeout=30)


def test_what_follows_the_match_is_left_for_communicate() -> None:
    proc = subprocess.Popen([sys.executable, "-c", TALKS], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    match, said = read_until(proc.stderr, re.compile(r"Code: (\S+)"), 30)  # type: ignore[arg-type]
    assert match is not None and match.group(1) == "7-a-b" and said == "one\nCode: 7-a-b\n"
    _, rest = proc.communicate(timeout=30)
    assert rest == "after\nlast"  # communicate reads the descriptor itself


def test_the_last_line_counts_at_end_of_file_and_a_closed_pipe_ends_the_wait() -> None:
    proc = subprocess.Popen([sys.executable, "-c", TALKS], stderr=subprocess.PIPE, text=True)
    assert read_until(proc.stderr, re.compile(r"^last$"), 30)[0] is not None  # type: ignore[arg-type]
    proc.wait(30)
    proc = subprocess.Popen([sys.executable, "-c", TALKS], stderr=subprocess.PIPE, text=True)
    match, said = read_until(proc.stderr, re.compile("never"), 30)  # type: ignore[arg-type]
    assert match is None and said.endswith("last")
    proc.wait(30)
