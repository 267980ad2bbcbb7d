"""One normalization for pairing codes in Python and the page, beyond the shared vectors (tests/vectors/codes.json,
replayed by both): every code point the Python here knows is normalized alike by p2pd/pairing/codes.py and
web/src/codes.js, and alike allowed or refused in a word.

Code points assigned after the Python's Unicode version (unidata_version) are left out: the two Unicode databases
differ there, and such a code fails as a wrong code on both sides, never silently."""

from __future__ import annotations

import json
import subprocess
import unicodedata

from p2pd.pairing.codes import normalize_text
from tests.signal_process import ROOT
from tests.web.conftest import node


def test_every_known_code_point_is_normalized_and_classified_alike() -> None:
    made = subprocess.run([node(), "web/tests/tools/code_points.mjs"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert made.returncode == 0, made.stderr
    page = json.loads(made.stdout)
    changed = {int(k, 16): v for k, v in page["changed"].items()}
    first, inner = ({int(h, 16) for h in page[key]} for key in ("first", "inner"))
    differ: list[str] = []
    checked = 0
    for cp in range(0x110000):
        ch = chr(cp)
        if 0xD800 <= cp <= 0xDFFF or unicodedata.category(ch) == "Cn":
            continue
        checked += 1
        category = unicodedata.category(ch)[0]
        if normalize_text(ch) != changed.get(cp, ch):
            differ.append(f"U+{cp:04X} normalizes to {normalize_text(ch)!r} here, {changed.get(cp, ch)!r} in the page")
        if (category in "LN") != (cp in first) or (category in "LMN") != (cp in inner):
            differ.append(f"U+{cp:04X} ({unicodedata.category(ch)}) is classified differently in the page")
    assert checked > 140_000
    assert not differ, f"{len(differ)} of {checked} code points differ (Unicode {unicodedata.unidata_version} here, " \
                       f"{page['unicode']} in node): " + "; ".join(differ[:20])
