"""p2pd/transfer/nomedia.py: aiortc is imported without PyAV in p2pd's processes, and media code fails loudly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.probe import probe as run_probe

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, resource, sys
import p2pd.transfer.peer
from p2pd.transfer import nomedia
import aiortc
print(json.dumps({"placeholder": nomedia.active(), "av": type(sys.modules["av"]).__name__,
                  "aiortc": aiortc.RTCPeerConnection.__module__}))
"""


def probe(**env: str) -> dict[str, object]:
    return run_probe(PROBE, **env)


def test_the_peer_module_brings_aiortc_without_pyav() -> None:
    got = probe()
    assert got == {"placeholder": True, "av": "_Module", "aiortc": "aiortc.rtcpeerconnection"}


def test_p2pd_real_av_keeps_pyav() -> None:
    got = probe(P2PD_REAL_AV="1")
    assert got["placeholder"] is False and got["av"] == "module"


def test_media_code_fails_loudly_with_the_placeholder() -> None:
    code = """
import p2pd.transfer.peer
from aiortc.mediastreams import AudioFrame  # (aiortc's name for av.AudioFrame)
from p2pd.transfer.nomedia import MediaUnavailable
try:
    AudioFrame(format="s16", layout="mono", samples=960)
except MediaUnavailable as exc:
    print("refused:", exc)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("refused: AudioFrame: p2pd does not load PyAV"), r.stdout
