"""Pairing codes: generation, parsing, normalization, clear errors, and where a code may come from."""

from __future__ import annotations

import io

import pytest

from p2pd.errors import ExitCode
from p2pd.pairing.codes import Code, InvalidCodeError, generate_code, parse_code, read_code, wordlist


def _one_edit_apart(a: str, b: str) -> bool:
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) == 1
    if abs(len(a) - len(b)) != 1:
        return False
    short, long_ = sorted((a, b), key=len)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def test_wordlist_is_ours_and_well_formed():
    words = wordlist()
    assert len(words) == 1024 and len(set(words)) == 1024
    assert all(w.isascii() and w.isalpha() and w.islower() and 3 <= len(w) <= 6 for w in words)
    assert len({w[:4] for w in words}) == 1024  # unique 4-letter prefixes (completion, typo detection)
    by_length: dict[int, list[str]] = {}
    for w in words:
        by_length.setdefault(len(w), []).append(w)
    for w in words:  # no two words one typo apart
        for n in (len(w) - 1, len(w), len(w) + 1):
            assert not any(_one_edit_apart(w, other) for other in by_length.get(n, []) if other != w), w


def test_generate_code_uses_the_list_and_the_nameplate():
    code = generate_code(42)
    assert code.nameplate == "42" and len(code.words) == 2 and code.in_wordlist
    assert str(code).startswith("42-") and parse_code(str(code)) == code
    assert len(generate_code("7", words=3).words) == 3
    assert len({str(generate_code(1)) for _ in range(50)}) > 40  # random words
    with pytest.raises(ValueError):
        generate_code(1, words=0)


@pytest.mark.parametrize(
    ("text", "nameplate", "words"),
    [
        ("7-guitar-meadow", "7", ("guitar", "meadow")),
        ("  7-Guitar-MEADOW\n", "7", ("guitar", "meadow")),
        ("7 guitar meadow", "7", ("guitar", "meadow")),
        ("7 - guitar -- meadow", "7", ("guitar", "meadow")),
        ("007-guitar-meadow", "7", ("guitar", "meadow")),
        ("123-zzyzx-quokka", "123", ("zzyzx", "quokka")),  # words outside the list are fine
        ("5-straße-café", "5", ("strasse", "café")),
        ("9-a1-b2-c3", "9", ("a1", "b2", "c3")),
        ("４-ｆｕｌｌ-ｗｉｄｔｈ", "4", ("full", "width")),
    ],
)
def test_parse_code_normalizes(text: str, nameplate: str, words: tuple[str, ...]):
    code = parse_code(text)
    assert code.nameplate == nameplate and code.words == words
    assert code.password == "-".join(words).encode()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("---", "empty"),
        ("guitar-meadow", "starts with a number"),
        ("7", "at least 2 words"),
        ("7-guitar", "at least 2 words"),
        ("7-gui!tar-meadow", "letters and digits"),
        ("7-" + "a" * 40 + "-b", "longer than"),
        ("1234567890-a-b", "longer than 9 digits"),
        ("7-" + "-".join(["w"] * 9), "at most 8"),
    ],
)
def test_parse_code_errors_are_clear_and_do_not_echo_words(text: str, message: str):
    with pytest.raises(InvalidCodeError) as caught:
        parse_code(text)
    assert message in str(caught.value)
    assert "gui!tar" not in str(caught.value) and "meadow" not in str(caught.value)
    assert caught.value.exit_code == ExitCode.INVALID_INPUT


def test_repr_hides_the_words():
    code = parse_code("7-guitar-meadow")
    assert "guitar" not in repr(code) and "7" in repr(code)
    assert code == Code("7", ("guitar", "meadow"))


def test_read_code_sources():
    env = {"P2PD_CODE": "8-amber-river"}
    assert str(read_code("7-guitar-meadow", environ=env)) == "7-guitar-meadow"  # argument wins
    assert str(read_code(None, environ=env)) == "8-amber-river"
    assert read_code(None, environ={}) is None
    assert read_code(None, environ={"P2PD_CODE": "  "}) is None
    assert str(read_code("-", stdin=io.StringIO("9-Lemon-Kiwi\nignored\n"), environ={})) == "9-lemon-kiwi"
    with pytest.raises(InvalidCodeError, match="standard input"):
        read_code("-", stdin=io.StringIO(""), environ={})
    with pytest.raises(InvalidCodeError):
        read_code(None, environ={"P2PD_CODE": "nonsense"})


def test_a_likely_typo_is_refused_with_a_suggestion():
    from p2pd.pairing.typos import LikelyTypoError, check_typos

    with pytest.raises(LikelyTypoError) as caught:
        check_typos(parse_code("5-amber-lotos"), hint="(or pass --exact-code)")
    message = str(caught.value)
    assert "did you mean 5-amber-lotus?" in message and message.endswith("(or pass --exact-code)")
    assert caught.value.details == {"reason": "typo", "suggestions": ["5-amber-lotus"]}
    assert caught.value.exit_code == ExitCode.INVALID_INPUT
    assert str(check_typos(parse_code("5-amber-lotus"))) == "5-amber-lotus"
    assert str(check_typos(parse_code("7-quiet-harbour"))) == "7-quiet-harbour"  # hand-chosen, far from the list


def test_near_words_finds_every_single_edit_of_every_list_word():
    from p2pd.pairing.typos import near_words

    for word in wordlist()[::37]:
        edits = {word[:i] + word[i + 1:] for i in range(len(word))}  # dropped
        edits |= {word[:i] + "q" + word[i:] for i in range(len(word) + 1)}  # added
        edits |= {word[:i] + word[i + 1] + word[i] + word[i + 2:] for i in range(len(word) - 1)}  # swapped
        for typo in edits - set(wordlist()):
            assert word in near_words(typo), (word, typo)
    assert near_words("amber") == ()
