"""The browser client's JS unit tests (``node --test web/tests``) as one pytest test, plus Python reading what
the page's code makes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from p2pd.blob import container as blob
from tests.signal_process import ROOT
from tests.web.conftest import node


def test_node_unit_tests_pass() -> None:
    env = {**os.environ, "P2PD_PYTHON": sys.executable}
    result = subprocess.run([node(), "--test", "web/tests/"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env=env)
    summary = "\n".join(line for line in result.stdout.splitlines() if line.startswith(("# ", "not ok")))
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert "# fail 0" in result.stdout and "# pass 0" not in result.stdout, summary


def test_python_reads_a_blob_made_by_the_page(tmp_path) -> None:
    from p2pd.agents.claude_code.export import export_session
    from p2pd.conversation.document_io import dumps
    from tests.corpus import claude_code_files

    source = next(f for f in claude_code_files(include_subagents=False) if f.name == "tool_heavy.jsonl")
    document = dumps(export_session(source), pretty=False)
    made = subprocess.run([node(), "web/tests/tools/make_blob.mjs"], cwd=ROOT, input=document, capture_output=True,
                          timeout=120)
    assert made.returncode == 0, made.stderr.decode()
    assert blob.decode(made.stdout) == document
    header = blob.BlobHeader.unpack(made.stdout)
    assert (header.codec, header.raw_size) == ("lz4", len(document))
    assert json.loads(blob.decode(made.stdout))["messages"] == json.loads(document)["messages"]


def test_the_page_draws_generated_codes_from_the_same_word_list() -> None:
    from p2pd.pairing.codes import wordlist

    script = "import('./web/src/wordlist.js').then((m) => process.stdout.write(JSON.stringify(m.WORDS)))"
    result = subprocess.run([node(), "--input-type=module", "-e", script], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert tuple(json.loads(result.stdout)) == wordlist()


def test_visible_text_vectors_hold_for_python() -> None:
    """The shared vector file is what p2pd.support.text.visible makes today (the JS side is web/tests/text.test.mjs)."""
    from tests.web.visible_vectors import PATH, vectors

    assert json.loads(PATH.read_text()) == vectors(), "run python -m tests.web.visible_vectors"
