"""A handoff imported into Codex (``handoff_agent = "codex"``) reaches the resumed Codex session through Codex's
SessionStart hook: two real daemons paired through a real signaling server, the sender's agent through a real MCP
client, the real ``codex exec resume`` on the receiving side (stand-in model API) with the p2pd hooks installed —
the model request carries the handoff's goal, summary, notes and files."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.conftest import SESSION_ID, PairMaker
from tests.daemon.sessions_fixtures import model_api
from tests.daemon.test_codex_session_links import Codex
from tests.daemon.test_mcp import call, mcp_client
from tests.realclients import programs, standin

pytestmark = pytest.mark.slow
__all__ = ["model_api"]  # fixture


async def test_the_resumed_codex_session_is_told_the_handoff(paired: PairMaker, model_api: standin.StandIn,
                                                              tmp_path: Path) -> None:
    why = programs.missing()
    if why:
        pytest.skip(why)
    a, b = paired(names=("desk", "laptop"), b_env={"P2PD_HANDOFF_AGENT": "codex"}, wait_online=True)
    project = tmp_path / "project"  # the sender's folder; the same path exists on the receiving side here
    project.mkdir()
    codex = Codex(b, model_api, project)
    r = b.p2pd("hook", "install", "--agent", "codex")
    assert r.returncode == 0, r.stderr
    async with mcp_client(a.url, a.token) as sender:
        created = await call(sender, "handoff", summary="Parser split; 3 tests red", goal="make the tests green",
                             notes="run pytest -x", cwd=str(project), session_id=SESSION_ID, target="laptop",
                             files=[{"path": "src/parser.py", "summary": "the new parser"}])
    hid = created["id"]

    imported: dict[str, Any] | None = None
    deadline = time.monotonic() + 120
    with b.client() as http:
        while imported is None and time.monotonic() < deadline:
            offer = next((o for o in http.get("/offers").json() if o["id"] == hid), None)
            if offer and offer.get("inbox_id"):
                imported = http.get(f"/inbox/{offer['inbox_id']}").json().get("imported")
            if imported is None:
                await asyncio.sleep(0.3)
    assert imported, "the handoff was not imported into Codex at the laptop"

    sid, asked = codex.exec("carry on", resume=str(imported["session_id"]))
    assert sid == imported["session_id"]
    seen = json.dumps(asked)
    for text in ("make the tests green", "Parser split; 3 tests red", "run pytest -x", "src/parser.py", hid,
                 f"P2PD_SESSION_ID={sid}"):
        assert text in seen, text
