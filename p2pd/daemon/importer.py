"""The daemon's import process: ``python -m p2pd.daemon.importer JOB`` (JOB: JSON ``{"path", "to", "cwd",
"same_account", "spool_dir"}``).

A received conversation (``.a2a.json`` in the inbox, or a delegation's fork) is imported into an agent here, in a
child process (:mod:`p2pd.daemon.children`): the import reads the document as a stream into a spool, but what it
keeps per message grows with the session, and that memory goes back to the system when this process ends. The
folder to resume in is ``cwd``, else the handoff package's project folder or working directory, else the
conversation's own, whichever exists here. Result: ``{"to", "session_id", "path", "cwd", "lines", "warnings",
"resume_command"}``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from p2pd.conversation.model import ConversationDocument
from p2pd.errors import InvalidInputError, NotFoundError


def resume_folder(doc: ConversationDocument, cwd: str | None) -> str:
    """Where to resume ``doc``: ``cwd``, else its handoff package's folder, else its own (it must exist here)."""
    from p2pd.daemon.handoffs import package_of

    folder = cwd
    if folder is None:
        package = package_of(doc) or {}
        for candidate in (package.get("project_path"), package.get("cwd"), doc.origin.cwd):
            if isinstance(candidate, str) and candidate and Path(candidate).is_dir():
                folder = candidate
                break
    if folder is None:
        raise InvalidInputError("say which project folder to resume in (cwd): the conversation's own "
                                "folder does not exist on this machine")
    if not Path(folder).is_dir():
        raise NotFoundError(f"the folder to resume in does not exist: {folder}")
    return folder


def run(job: dict[str, Any]) -> dict[str, Any]:
    from p2pd.agents.importing import import_file

    chosen: list[str] = []

    def where(doc: ConversationDocument) -> str:
        chosen.append(resume_folder(doc, job.get("cwd")))
        return chosen[-1]

    result, _ = import_file(job["path"], to=job["to"], cwd=where, same_account=bool(job.get("same_account")),
                            spool_dir=job.get("spool_dir"))
    return {"to": job["to"], "session_id": result.session_id, "path": str(result.path), "cwd": chosen[0],
            "lines": result.lines, "warnings": [str(w) for w in result.warnings],
            "resume_command": result.resume_command}


async def import_in_child(path: str | os.PathLike[str], *, to: str, cwd: str | None, same_account: bool = False,
                          spool_dir: Path | None = None) -> dict[str, Any]:
    from p2pd.daemon.children import run_child

    job = {"path": str(path), "to": to, "cwd": cwd, "same_account": same_account,
           "spool_dir": str(spool_dir) if spool_dir is not None else None}
    return await run_child("p2pd.daemon.importer", json.dumps(job))


def main(argv: list[str]) -> int:
    from p2pd.daemon.children import child_main

    return child_main(lambda arg: run(json.loads(arg)), argv)


if __name__ == "__main__":
    os._exit(main(sys.argv))
