"""What the processes of a handover import on their common path: only what they use (pydantic alone is ~0.1 s of
start-up here). Checked on ``sys.modules`` in a fresh interpreter after the real work, not by timing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agents.helpers import LEFT_WHOLE_GEMINI_JSON
from tests.corpus import claude_code_files
from tests.signal_process import signal_server

ROOT = Path(__file__).resolve().parents[2]
MODELS = ("pydantic", "p2pd.conversation.model", "p2pd.conversation.document_json")

_PRODUCE = """
import json, sys
from pathlib import Path
from p2pd.exchange.producer import produce

class Sink:
    def __init__(self): self.size, self.heads = 0, []
    def write(self, data): self.size += len(data)
    def head(self, fields): self.heads.append(fields)
    def finish(self): pass

sink = Sink()
produce(Path(sys.argv[1]), Path(sys.argv[2]), sink)
print(json.dumps({"modules": sorted(sys.modules), "size": sink.size, "heads": len(sink.heads)}))
"""


def _produce(session: Path, work: Path) -> dict[str, object]:
    r = subprocess.run([sys.executable, "-c", _PRODUCE, str(session), str(work)], capture_output=True, text=True,
                       timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    out: dict[str, object] = json.loads(r.stdout)
    return out


def _models(modules: object) -> list[str]:
    assert isinstance(modules, list)
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in MODELS))


def _with_subagents() -> list[Path]:
    """Corpus sessions with subagents and spilled tool results beside them (the real 3.5 MB one has both)."""
    return [p for p in claude_code_files(include_subagents=False) if p.with_suffix("").is_dir()]


@pytest.mark.skipif(not _with_subagents(), reason="no corpus session with subagents")
def test_the_packing_child_streams_a_session_without_the_models(tmp_path: Path) -> None:
    session = _with_subagents()[0]
    got = _produce(session, tmp_path)
    assert got["size"] and got["heads"] == 1  # it did write the document and say its offer
    assert _models(got["modules"]) == []


ODD_RECORDS = (b'{"type":"user","uuid":"u","sessionId":"s","message":{"content":"hello"}}\n'
               b'not json\n\n[1, 2]\n{"type":"progress","n":123456789012345678901234567890}\n'
               b'{"type":"system","x":NaN}\n{"no":"type"}\n{"type":"user","uuid":"v","message":7}\n'
               b'{"type":"progress","cut":"caf\xe9"}\n{"type":"user","message":{"content":"the file ends here')


def test_records_orjson_refuses_stream_without_the_models(tmp_path: Path) -> None:
    """Lines that are no JSON object, or whose numbers orjson refuses, become records and issues the exact way —
    still without the models."""
    session = tmp_path / "odd.jsonl"
    session.write_bytes(ODD_RECORDS)
    got = _produce(session, tmp_path)
    assert got["size"] and got["heads"] == 1
    assert _models(got["modules"]) == []


TEAM_SESSION = (b'{"type":"user","uuid":"u","sessionId":"s","message":{"content":"start a team"}}\n'
                b'{"type":"assistant","uuid":"a","parentUuid":"u","message":{"id":"r","content":'
                b'[{"type":"tool_use","id":"t","name":"TeamCreate","input":{"team_name":"x"}}]}}\n'
                b'{"type":"user","uuid":"v","parentUuid":"a","message":{"content":'
                b'[{"type":"tool_result","tool_use_id":"t","content":"Team x created"}]}}\n')


def test_an_agent_team_session_streams_without_the_models(tmp_path: Path) -> None:
    """A session holding agent-team state was loaded whole, through the models; its team state is now derived
    from the messages as they are written."""
    session = tmp_path / "team.jsonl"
    session.write_bytes(TEAM_SESSION)
    got = _produce(session, tmp_path)
    assert got["size"] and got["heads"] == 1
    assert _models(got["modules"]) == []


def test_the_probe_sees_the_models_on_the_whole_document_path(tmp_path: Path) -> None:
    """The probe can fail: a Gemini CLI JSON session only the whole reading takes is loaded whole, through the
    models."""
    session = tmp_path / "session-left.json"
    session.write_bytes(LEFT_WHOLE_GEMINI_JSON)
    got = _produce(session, tmp_path)
    assert got["size"]
    assert "pydantic" in _models(got["modules"])


# ---- p2pd send up to pairing: no pydantic (the signaling messages are msgspec structs) ---------------------------


def _p2pd(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-X", "importtime", "-m", "p2pd", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env, cwd=cwd)


def _imported_until(proc: subprocess.Popen[str], pattern: str) -> tuple[list[str], re.Match[str]]:
    """The modules ``proc`` imported (its ``-X importtime`` lines) until ``pattern`` showed on its stderr."""
    assert proc.stderr is not None
    modules: list[str] = []
    for line in proc.stderr:
        if line.startswith("import time:") and line.count("|") == 2:
            modules.append(line.rsplit("|", 1)[1].strip())
        elif (match := re.search(pattern, line)) is not None:
            return modules, match
    raise AssertionError(f"{pattern!r} never showed (exit {proc.wait(10)})")


def _pydantic(modules: list[str]) -> list[str]:
    return [m for m in modules if m == "pydantic" or m.startswith("pydantic.")]


@pytest.mark.parametrize(("config_text", "pydantic"), [
    (None, False),
    ('signal = "ws://127.0.0.1:9/"\n', False),  # (overridden by P2PD_SIGNAL below)
    ('signal = "ws://127.0.0.1:9/\u00e9"\n', True)])  # valid, but past the quick check's ASCII-only rule
def test_the_sender_pairs_without_pydantic(tmp_path: Path, config_text: str | None, pydantic: bool) -> None:
    """``p2pd send --code`` to a waiting ``p2pd receive`` imports no pydantic until it has paired (the receiver
    may: it imports the document models while it waits, not after the transfer) — with a config file too, which
    the quick check takes (p2pd/config_quick.py). The probe can fail: a file the quick check is not sure of is
    checked with pydantic (p2pd/config_file.py) before any command runs."""
    config = tmp_path / "config.toml"
    if config_text is not None:
        config.write_text(config_text)
    session = next(f for f in claude_code_files(include_subagents=False) if f.name == "short.jsonl")
    with signal_server() as server:
        env = {**os.environ, "P2PD_SIGNAL": server.url, "P2PD_ICE_HOST_ADDRESSES": "127.0.0.1",
               "P2PD_CONFIG": str(config), "P2PD_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
        env.pop("P2PD_CODE", None)
        receiver = _p2pd(["receive", "--make-code", "--yes", "-o", str(tmp_path / "in")], env, tmp_path)
        sender = None
        try:
            _, code = _imported_until(receiver, r"Code: (\S+)")
            sender = _p2pd(["send", str(session), "--code", code[1]], env, tmp_path)
            before_pairing, _ = _imported_until(sender, r"^Paired\. ")
            assert sender.wait(120) == 0 and receiver.wait(120) == 0
        finally:
            for proc in (receiver, sender):
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait()
    assert "p2pd.pairing.client" in before_pairing and "signaling.protocol" in before_pairing
    assert len(list((tmp_path / "in").glob("*.a2a.json"))) == 1
    assert bool(_pydantic(before_pairing)) is pydantic
