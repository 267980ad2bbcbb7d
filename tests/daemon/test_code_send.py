"""A daemon's send with a code (p2pd/daemon/code_transfers.py): packed into the outbox by the packing process
(zstd), then streamed from that blob (p2pd/daemon/ready_blob.py) to a real ``p2pd receive``, which gets the
document ``POST /export`` writes, under the SHA-256 the transfer's row announced."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.daemon.conftest import SESSION_ID, Daemon, wait_for
from tests.signal_process import SignalProcess


def test_a_code_send_streams_its_outbox_blob_to_a_cli_receiver(tmp_path: Path, signaling: SignalProcess) -> None:
    d = Daemon(tmp_path / "d", signal_url=signaling.url).start()
    try:
        with d.client() as c:
            row = c.post("/send", json={"session": SESSION_ID, "to": {"code": ""}}).json()
            assert row["code"] and row["blob_path"].endswith(".a2a.p2pd") and row["size"] > 0, row
            exported = c.post("/export", json={"session": SESSION_ID}).json()
        out = tmp_path / "got"
        out.mkdir()
        r = subprocess.run([sys.executable, "-m", "p2pd", "receive", row["code"], "--yes", "-o", str(out), "--json"],
                           env=d.env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        (got,) = out.glob("*.a2a.json")
        assert json.loads(got.read_bytes()) == json.loads(Path(exported["path"]).read_bytes())
        with d.client() as c:
            done = wait_for(lambda: (t := c.get(f"/transfers/{row['id']}").json())["state"] in ("done", "failed")
                            and t, what="the send's outcome")
        assert done["state"] == "done", done
        assert done["detail"]["verified_sha256"] == row["sha256"]  # the outbox blob's payload, as it was streamed
    finally:
        d.kill()
