"""``p2pd-signal`` / ``python -m signaling`` entry point (filled in by the signaling issue)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    print("the signaling server is not built yet", file=sys.stderr)
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
