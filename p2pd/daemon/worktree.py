"""A new git worktree for a delegated session: ``git worktree add`` run as the user would.

:func:`add_worktree` finds the repository holding ``start`` (``git rev-parse --show-toplevel``), checks the branch
name (``git check-ref-format --branch``), and adds a worktree at ``path`` (default: beside the repository, named
``<repository>-<branch>``) on a new branch made from ``base`` (default ``HEAD``) — or on the branch itself when it
exists already and is checked out nowhere. Git's own words, when it refuses, are kept for people (``peer_text``) and
never read.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from p2pd.errors import ConflictError, InvalidInputError, NotFoundError

GIT_TIMEOUT = 120.0


@dataclass(frozen=True)
class Worktree:
    repo: str  # the repository's top folder
    path: str  # the new worktree
    branch: str
    created_branch: bool  # False: an existing branch was checked out there


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    git = shutil.which("git")
    if git is None:
        raise NotFoundError("git is not installed, so no worktree can be made (give a folder instead)")
    return subprocess.run([git, *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT,
                          stdin=subprocess.DEVNULL)


def repository_of(start: Path) -> Path:
    if not start.is_dir():
        raise NotFoundError(f"the folder does not exist: {start}")
    r = _git("rev-parse", "--show-toplevel", cwd=start)
    if r.returncode != 0 or not r.stdout.strip():
        raise InvalidInputError(f"{start} is not inside a git repository, so no worktree can be made there",
                                peer_text=r.stderr.strip() or None)
    return Path(r.stdout.strip())


def default_path(repo: Path, branch: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", branch).strip("-.") or "delegate"
    return repo.parent / f"{repo.name}-{slug}"


def add_worktree(start: Path, branch: str, *, path: Path | None = None, base: str | None = None) -> Worktree:
    repo = repository_of(start)
    branch = branch.strip()
    check = _git("check-ref-format", "--branch", branch, cwd=repo)
    if not branch or check.returncode != 0:
        raise InvalidInputError(f"{branch!r} is not a valid branch name")
    target = (path or default_path(repo, branch)).expanduser()
    if not target.is_absolute():
        target = repo / target
    if target.exists():
        raise ConflictError(f"the worktree folder exists already: {target}; name another one (path)")
    exists = _git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", cwd=repo).returncode == 0
    if exists:
        if base:
            raise ConflictError(f"branch {branch!r} exists already; leave out the base or name a new branch")
        r = _git("worktree", "add", str(target), branch, cwd=repo)
    else:
        r = _git("worktree", "add", "-b", branch, str(target), *([base] if base else []), cwd=repo)
    if r.returncode != 0:
        raise ConflictError(f"git could not add a worktree for branch {branch!r} at {target}",
                            peer_text=r.stderr.strip()[-2000:] or None)
    return Worktree(repo=str(repo), path=str(target), branch=branch, created_branch=not exists)


def subfolder_in(worktree: Path, repo: Path, cwd: Path | None) -> Path:
    """Where in the worktree the agent works: the same folder, relative to the repository, as ``cwd`` (when it
    is inside the repository and exists in the worktree), else the worktree's top."""
    if cwd is not None:
        try:
            inner = worktree / cwd.resolve().relative_to(repo.resolve())
        except ValueError:
            return worktree
        if inner.is_dir():
            return inner
    return worktree
