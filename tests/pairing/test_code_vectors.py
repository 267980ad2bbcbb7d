"""p2pd/pairing/codes.py and typos.py against tests/vectors/codes.json (the page's codes.js is held to the same file
in web/tests/codes.test.mjs)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from p2pd.pairing.codes import InvalidCodeError, parse_code
from p2pd.pairing.typos import suggestions
from tests.pairing.code_vectors import PATH, render

VECTORS = json.loads(PATH.read_text(encoding="utf-8"))


def test_the_vector_file_is_what_the_generator_writes() -> None:
    assert PATH.read_text(encoding="utf-8") == render(), "regenerate with python -m tests.pairing.code_vectors"


@pytest.mark.parametrize("case", VECTORS["parse"], ids=lambda case: ascii(case["input"])[:40])
def test_parse(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(InvalidCodeError) as caught:
            parse_code(case["input"])
        assert caught.value.details["reason"] == case["error"]
    else:
        code = parse_code(case["input"])
        assert (str(code), code.password.hex()) == (case["code"], case["password"])


@pytest.mark.parametrize("case", VECTORS["typos"], ids=lambda case: case["input"])
def test_typos(case: dict[str, Any]) -> None:
    assert [str(c) for c in suggestions(parse_code(case["input"]))] == case["suggestions"]


def test_the_issue_s_example_normalizes_by_folding() -> None:
    by_input = {case["input"]: case for case in VECTORS["parse"]}
    assert by_input["7-Straße-Maß"]["code"] == by_input["7-STRASSE-MASS"]["code"] == "7-strasse-mass"
