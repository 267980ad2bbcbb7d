"""What the browser tests do again and again, in one place: the corpus sessions they send, a big conversation that
takes seconds to move, the page's state, a ``p2pd send`` the page receives (offer accepted), waiting for
progress, and what the page keeps in IndexedDB for resuming."""

from __future__ import annotations

import base64
import json
import random
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.corpus import claude_code_files
from tests.signal_process import SignalProcess, p2pd, p2pd_env
from tests.web.conftest import LINK, read_until, stop

SESSION = next(f for f in claude_code_files(include_subagents=False) if f.name.startswith("4d5611e5"))
SMALL = next(f for f in claude_code_files(include_subagents=False) if f.name == "short.jsonl")
ENDED = "body[data-state=done], body[data-state=sent], body[data-state=failed]"


def export(source: Path) -> dict[str, Any]:
    from p2pd.agents.claude_code.export import export_session

    return export_session(source).to_json_dict()  # type: ignore[no-any-return]


def state(page: Any) -> str:
    return str(page.get_attribute("body", "data-state"))


def big_conversation(path: Path, megabytes: int) -> None:
    """A valid conversation with a large, poorly compressible tool output (so the transfer takes seconds)."""
    doc = export(SMALL)
    rng = random.Random(7)
    blob = base64.b64encode(rng.randbytes(megabytes * 750_000)).decode()
    doc["messages"][0]["parts"].append({"text": blob, "mediaType": "text/plain"})
    path.write_text(json.dumps(doc))


def receiving(server: SignalProcess, page: Any, big: Path, cwd: Path, **env: str) -> subprocess.Popen[str]:
    """``p2pd send big`` (``env`` added to its environment) with the page receiving it (the offer accepted; the
    page may be there already)."""
    sender = p2pd("send", str(big), "--timeout", "60", env=p2pd_env(server, **env), cwd=cwd)
    try:
        link, _ = read_until(sender, LINK)
        page.goto(link.group(1))
        page.wait_for_selector("#accept", state="visible")
        page.click("#accept")
    except BaseException:
        stop(sender)
        raise
    return sender


def wait_for_progress(page: Any, at_least: float, *states: str) -> int:
    deadline = time.monotonic() + 90
    while True:
        done = int(page.get_attribute("#progress", "data-done") or 0)
        total = float(page.get_attribute("#progress", "max") or 1)
        if done >= at_least * total and done > 0:
            return done
        assert time.monotonic() < deadline, "no progress"
        assert state(page) in states, page.inner_text("#session")
        time.sleep(0.05)


# What the page keeps for resuming (web/src/partial.js), read from its IndexedDB.
PARTIALS = """() => new Promise((resolve, reject) => {
  const open = indexedDB.open('p2pd-partials', 1);
  open.onupgradeneeded = () => { open.result.createObjectStore('partials', { keyPath: 'sha' });
    open.result.createObjectStore('blocks'); };
  open.onerror = () => reject(open.error);
  open.onsuccess = () => { const db = open.result;
    const get = db.transaction('partials').objectStore('partials').getAll();
    get.onsuccess = () => { db.close(); resolve(get.result.map((r) => ({ sha: r.sha, ranges: r.ranges }))); }; };
})"""



def held_ranges(page: Any) -> int:
    """The bytes the page keeps in IndexedDB for its one partial (which starts at the payload's start)."""
    kept = page.evaluate(PARTIALS)
    assert len(kept) == 1 and kept[0]["ranges"] and kept[0]["ranges"][0][0] == 0, kept
    return sum(end - start for start, end in kept[0]["ranges"])


def exported_small(server: SignalProcess, tmp_path: Path) -> Path:
    """The short corpus session exported as a ``.a2a.json`` (what the page sends)."""
    path = tmp_path / "small.a2a.json"
    assert p2pd("export", str(SMALL), "-o", str(path), env=p2pd_env(server)).wait(60) == 0
    return path


def opened(page: Any, server: SignalProcess) -> None:
    """The page, loaded and ready to work."""
    page.goto(server.http + "/")
    page.wait_for_selector("body[data-ready=true]")


def accepted(page: Any) -> None:
    """Accept the offer the page shows, and wait until the conversation is received."""
    page.wait_for_selector("#accept", state="visible")
    page.click("#accept")
    page.wait_for_selector(ENDED)
    assert state(page) == "done", page.inner_text("#session")
