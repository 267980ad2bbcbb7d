"""p2pd/cli/codeentry.py: Tab completion of a code's words, the prompt's handling of typos and bad codes (with a
scripted ``ask``), and the prompt on a real pseudo-terminal with GNU readline (tests/cli/terminal.py)."""

from __future__ import annotations

import pytest

from p2pd.cli.codeentry import complete_word, given_code, prompt_code
from p2pd.errors import ExitCode, P2pdError
from p2pd.pairing.codes import wordlist
from p2pd.pairing.typos import LikelyTypoError

WORDS = wordlist()


@pytest.mark.parametrize(("line", "text", "expected"), [
    ("7-amb", "amb", ["amber-"]),  # the first word: a second follows
    ("7-amber-lot", "lot", ["lotus"]),  # the last word: nothing follows
    ("7 AMB", "AMB", ["amber-"]),  # typed in capitals, separated by a space
    ("7-amber-zzz", "zzz", []),
    ("7", "7", []),  # the nameplate is not completed
    ("amb", "amb", []),  # no nameplate yet
])
def test_tab_completes_the_words_of_the_list(line: str, text: str, expected: list[str]) -> None:
    assert complete_word(line, text, WORDS) == expected


def test_tab_after_the_nameplate_offers_every_word() -> None:
    assert complete_word("7-", "", WORDS) == [w + "-" for w in WORDS]


def scripted(*answers: str) -> tuple[list[tuple[str, str]], object]:
    asked: list[tuple[str, str]] = []
    replies = iter(answers)

    def ask(prompt: str, prefill: str) -> str:
        asked.append((prompt, prefill))
        try:
            return next(replies)
        except StopIteration:
            raise EOFError from None

    return asked, ask


def test_the_prompt_offers_the_suggestion_for_a_typo(capsys: pytest.CaptureFixture[str]) -> None:
    asked, ask = scripted("5-amber-lotos", "5-amber-lotus")
    assert str(prompt_code(ask=ask)) == "5-amber-lotus"  # type: ignore[arg-type]
    assert asked == [("Code: ", ""), ("Code: ", "5-amber-lotus")]
    assert "did you mean 5-amber-lotus?" in capsys.readouterr().err


def test_a_code_typed_again_after_a_suggestion_is_kept_as_typed() -> None:
    _, ask = scripted("7-quiet-harbor", "7 Quiet Harbor")
    assert str(prompt_code(ask=ask)) == "7-quiet-harbor"  # type: ignore[arg-type]


def test_the_prompt_asks_again_after_a_code_that_does_not_parse(capsys: pytest.CaptureFixture[str]) -> None:
    asked, ask = scripted("", "amber-lotus", "7-amber-lotus")
    assert str(prompt_code(ask=ask)) == "7-amber-lotus"  # type: ignore[arg-type]
    assert len(asked) == 3 and "starts with a number" in capsys.readouterr().err


def test_the_end_of_input_at_the_prompt_is_a_usage_error() -> None:
    _, ask = scripted()
    with pytest.raises(P2pdError) as caught:
        prompt_code(ask=ask)  # type: ignore[arg-type]
    assert caught.value.exit_code == ExitCode.USAGE


def test_a_given_code_is_checked_unless_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("P2PD_CODE", raising=False)
    with pytest.raises(LikelyTypoError, match=r"did you mean 5-amber-lotus\? \(if the other side really uses"):
        given_code("5-amber-lotos")
    assert str(given_code("5-amber-lotos", exact=True)) == "5-amber-lotos"
    assert given_code(None) is None
    monkeypatch.setenv("P2PD_CODE", "5-amber-lotos")
    with pytest.raises(LikelyTypoError):
        given_code(None)
