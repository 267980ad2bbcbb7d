"""Vectors of the pairing code rules, shared with the browser: how a typed code is normalized (or refused), and
which typed codes look mistyped.

``parse`` cases: ``input`` → either ``code`` (the normalized code, ``str(parse_code(input))``) and ``password``
(its PAKE password, hex of the UTF-8 bytes), or ``error`` (the kind of refusal: ``details["reason"]`` in Python,
``error.reason`` in web/src/codes.js). ``typos`` cases: ``input`` → ``suggestions`` (what
``p2pd.pairing.typos.suggestions`` proposes; empty: the code is used as typed).

Written to ``tests/vectors/codes.json``; regenerate (only when the rule is meant to change) with
``python -m tests.pairing.code_vectors``. Every case states what it expects, so a change of behaviour stops the
generator rather than being written down silently. Checked by tests/pairing/test_code_vectors.py (Python) and
web/tests/codes.test.mjs (the page).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from p2pd.pairing.codes import InvalidCodeError, parse_code
from p2pd.pairing.typos import suggestions

PATH = Path(__file__).resolve().parents[1] / "vectors" / "codes.json"

# (input, the normalized code or the refusal's reason)
PARSE: list[tuple[str, str]] = [
    ("7-guitar-meadow", "7-guitar-meadow"),
    ("  7-Guitar-MEADOW\n", "7-guitar-meadow"),
    ("7 guitar meadow", "7-guitar-meadow"),
    ("7 - guitar -- meadow", "7-guitar-meadow"),
    ("007-guitar-meadow", "7-guitar-meadow"),
    ("123-zzyzx-quokka", "123-zzyzx-quokka"),
    ("9-a1-b2-c3", "9-a1-b2-c3"),
    # case folding, not lowercasing: ß and ẞ fold to ss, final sigma to sigma, Cherokee to its capitals
    ("7-Straße-Maß", "7-strasse-mass"),
    ("7-STRASSE-MASS", "7-strasse-mass"),
    ("7-ẞ-strasse", "7-ss-strasse"),
    ("3-ΟΔΟΣ-οδος", "3-οδοσ-οδοσ"),
    ("3-ꮳꮃꭹ-ᏣᎳᎩ", "3-ᏣᎳᎩ-ᏣᎳᎩ"),
    ("5-İstanbul-KIRMIZI", "5-i̇stanbul-kirmizi"),
    ("5-straße-café", "5-strasse-café"),
    ("5-cafe\u0301-caf\u00e9", "5-café-café"),  # composed or not: one word
    ("4-ǰ-j\u030c", "4-ǰ-ǰ"),  # folding decomposes ǰ; the second NFKC composes it again
    # compatibility forms (NFKC)
    ("４-ｆｕｌｌ-ｗｉｄｔｈ", "4-full-width"),
    ("2-ﬁsh-ﬀ", "2-fish-ff"),
    ("6-Ⅻ-①", "6-xii-1"),
    # separators: any White_Space, hyphens and dashes; invisible characters dropped
    ("7\u00a0guitar\u3000meadow", "7-guitar-meadow"),
    ("7\u2013guitar\u2014meadow", "7-guitar-meadow"),
    ("7\u2212guitar\u2011meadow", "7-guitar-meadow"),
    ("7\uff0dguitar\ufe63meadow", "7-guitar-meadow"),
    ("\ufeff7-guitar-meadow", "7-guitar-meadow"),
    ("7-gui\u00adtar-mea\u200bdow", "7-guitar-meadow"),
    ("7\tguitar\nmeadow\r\n", "7-guitar-meadow"),
    # words in other scripts
    ("8-日本-東京", "8-日本-東京"),
    ("8-مرحبا-سلام", "8-مرحبا-سلام"),
    ("8-привет-МИР", "8-привет-мир"),
    # refusals
    ("", "empty"),
    ("   ", "empty"),
    ("---", "empty"),
    ("\u200b", "empty"),
    ("guitar-meadow", "no-nameplate"),
    ("٧-guitar-meadow", "no-nameplate"),  # digits, but not ASCII ones
    ("7", "too-few-words"),
    ("7-guitar", "too-few-words"),
    ("1234567890-a-b", "nameplate-too-long"),
    ("0001234567-a-b", "1234567-a-b"),
    ("7-" + "-".join(["w"] * 9), "too-many-words"),
    ("7-" + "a" * 33 + "-b", "word-too-long"),
    ("7-" + "é" * 32 + "-b", "7-" + "é" * 32 + "-b"),
    ("7-gui!tar-meadow", "not-letters"),
    ("7-guitar_meadow-x", "not-letters"),
    ("7-guitar-😀", "not-letters"),
    ("7-\u0301ab-x", "not-letters"),  # a word starts with a letter or digit, not a combining mark
    ("7-a\u0301b\u0301-x", "7-\u00e1b\u0301-x"),  # marks after it are part of the word (composed where they can)
    ("8-नमस्ते-ไทย", "8-नमस्ते-ไทย"),
]

# (input, suggestions)
TYPOS: list[tuple[str, list[str]]] = [
    ("5-amber-lotus", []),
    ("5-amber-lotos", ["5-amber-lotus"]),  # a letter changed
    ("5-amber-lotuss", ["5-amber-lotus"]),  # added
    ("5-amber-lots", ["5-amber-lotus"]),  # dropped
    ("5-ambre-lotus", ["5-amber-lotus"]),  # two neighbours swapped
    ("5-Amber-LOTOS", ["5-amber-lotus"]),  # after normalization
    ("5-ambr-lotos", ["5-amber-lotus"]),  # both words
    ("7-dor-amber", ["7-door-amber", "7-odor-amber"]),  # one edit from two list words
    ("7-quiet-harbour", []),  # hand-chosen, far from every list word
    ("7-quiet-harbor", ["7-quiet-arbor"]),  # hand-chosen, but one letter from a list word
    ("8-zzyzx-quokka", []),
    ("8-lotos-zzyzx", []),  # a word far from the list: hand-chosen, even though "lotos" is near "lotus"
    ("8-purple-monkey", ["8-purple-donkey"]),
    ("4242-apple-river", ["4242-ample-river"]),
    ("8-日本-東京", []),
    ("3-Ämber-lotus", ["3-amber-lotus"]),  # a letter changed to one outside a–z
    ("3-lone-corn", ["3-alone-acorn", "3-alone-coin", "3-alone-horn"]),  # at most three, in list order
    ("3-amber-lotus-lotos", ["3-amber-lotus-lotus"]),  # three words
    ("3-amber-lotus-zzyzx", []),  # list words and a hand-chosen one
]


def parse_case(text: str) -> dict[str, Any]:
    try:
        code = parse_code(text)
    except InvalidCodeError as exc:
        return {"input": text, "error": exc.details["reason"]}
    return {"input": text, "code": str(code), "password": code.password.hex()}


def build() -> dict[str, Any]:
    parse = []
    for text, expected in PARSE:
        case = parse_case(text)
        assert case.get("code", case.get("error")) == expected, (text, case, expected)
        parse.append(case)
    typos = []
    for text, expected_codes in TYPOS:
        got = [str(c) for c in suggestions(parse_code(text))]
        assert got == expected_codes, (text, got, expected_codes)
        typos.append({"input": text, "suggestions": got})
    return {
        "description": "How p2pd and the page read a typed pairing code: NFKC, invisible characters dropped, full "
                       "case folding, NFKC again, split on White_Space/hyphens/dashes; the first part is the "
                       "nameplate (ASCII digits), the rest the words (letters and digits). parse: input -> code "
                       "and password (hex), or the refusal's reason. typos: input -> the codes it probably meant.",
        "provenance": "Generated by tests/pairing/code_vectors.py from p2pd/pairing/codes.py and typos.py. Checked "
                      "by tests/pairing/test_code_vectors.py and web/tests/codes.test.mjs.",
        "parse": parse,
        "typos": typos,
    }


def render() -> str:
    return json.dumps(build(), indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    PATH.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {PATH}\n")
