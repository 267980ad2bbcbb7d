"""The line index read the fast way (msgspec, only the kept keys) is the index read the exact way (every line
parsed whole, then made light), line for line: on the corpus, on lines of every odd shape, and on corpus lines
damaged at random (seeded; the seed is printed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p2pd.agents.claude_code import line_index
from p2pd.agents.claude_code.export import message_count
from p2pd.agents.jsonl import iter_lines
from p2pd.agents.sources import load_file
from tests.corpus import claude_code_files, file_id
from tests.seeds import seeded

ODD_LINES = [
    b"", b"   ", "\u3000".encode(), b"not json", b"[1, 2]", b'"a string"', b"42", b"null",
    b' {"type":"user","uuid":"lead-space","message":{"content":"hi"}}',
    b'{"type":"user","uuid":"cr","message":{"content":"hi"}}\r',
    b'{"type":"user","uuid":"bad-utf8","message":{"content":"caf\xe9"}}',
    b'{"type":"user","uuid":"bad-\xff","message":{"content":"x"}}',
    b'{"type":"user","uuid":"surrogate","message":{"content":"\\ud800 alone"}}',
    b'{"type":"user","uuid":"pair","message":{"content":"\\ud83d\\ude00 ok"}}',
    b'{"type":"user","uuid":"bigint","n":123456789012345678901234567890,"message":{"content":"x"}}',
    b'{"type":"user","uuid":123456789012345678901234567890,"message":{"content":"x"}}',
    b'{"type":"user","uuid":"nan","x":NaN,"message":{"content":"x"}}',
    b'{"type":"user","uuid":"inf","x":1e999,"message":{"content":"x"}}',
    b'{"type":"user","uuid":"inf-kept","timestamp":1e999,"message":{"content":"x"}}',
    b'{"type":"system","uuid":"msg-str","message":"just text"}',
    b'{"type":"user","uuid":"msg-num","message":7}',
    b'{"type":"user","uuid":"msg-null","message":null}',
    b'{"type":"user","uuid":"no-content","message":{"id":"m1"}}',
    b'{"type":"user","uuid":"content-obj","message":{"content":{"a":[1,2]}}}',
    b'{"type":"user","uuid":"content-null","message":{"content":null}}',
    b'{"type":"assistant","uuid":"blocks","message":{"id":"r1","content":["s",1,null,[2],'
    b'{"type":"text","text":"t"},{"text":"no type"},{"type":5},{"type":"tool_use","id":"c1","name":"Bash"},'
    b'{"type":"tool_result","tool_use_id":"c1"}]}}',
    b'{"type":"user","uuid":"dup","uuid":"dup2","parentUuid":"a","parentUuid":null,"message":{"content":"x"}}',
    b'{"type":"user","uuid":"team-text","message":{"content":"<teammate-message from=x>hi"}}',
    b'{"type":"assistant","uuid":"team-call","message":{"content":[{"type":"tool_use","id":"t","name":"TeamCreate"}]}}',
    b'{"type":"assistant","uuid":"name-num","message":{"content":[{"type":"tool_use","id":"t","name":5}]}}',
    b'{"type":"user","uuid":"deep","x":' + b"[" * 2000 + b"]" * 2000 + b',"message":{"content":"x"}}',
    b'{"type":"custom-title","customTitle":"My title","sessionId":"s","cwd":"/w","gitBranch":"main"}',
    b'{"type":"user","uuid":"cut","message":{"content":"the file ends here',
]


def both(path: Path) -> tuple[list, list]:
    return list(line_index.index_lines(path)), list(line_index.index_lines(path, exact=True))


@pytest.mark.parametrize("path", claude_code_files(include_subagents=False), ids=file_id)
def test_fast_index_is_the_exact_index_on_the_corpus(path):
    fast, exact = both(path)
    assert fast == exact
    # and it counts the messages the conversion makes
    assert message_count(line_index.read_index(path)) == load_file(path).counts.messages


@pytest.mark.parametrize("i", range(len(ODD_LINES)))
def test_fast_index_is_the_exact_index_on_odd_lines(i, tmp_path):
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b'{"type":"user","uuid":"first","message":{"content":"hello"}}\n' + ODD_LINES[i]
                     + (b"" if ODD_LINES[i].endswith(b"here") else b"\n"))
    fast, exact = both(path)
    assert fast == exact
    assert len(fast) == 2


def test_fast_index_is_the_exact_index_on_damaged_lines(tmp_path):
    seed, rng = seeded()
    source = claude_code_files(include_subagents=False)[0].read_bytes().split(b"\n")
    lines = []
    for _ in range(400):
        line = bytearray(rng.choice(source))
        for _ in range(rng.randint(1, 3)):
            if not line:
                break
            at = rng.randrange(len(line))
            action = rng.random()
            if action < 0.4:
                line[at] = rng.choice(b'{}[]",:\\ \x00\xff\xc3aZ0')
            elif action < 0.7:
                del line[at:at + rng.randint(1, 40)]
            else:
                line[at:at] = rng.choice([b'"', b"\\u00e9", b"\\ud800", b"1e999", b'{"type":"tool_use"}', b","])
        lines.append(bytes(line).replace(b"\n", b""))
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    fast, exact = both(path)
    assert len(fast) == len(exact) == 400
    for f, e in zip(fast, exact, strict=True):
        assert f == e, (seed, e.n, lines[e.n - 1][:300])
    assert any(line.obj is None for line in exact) and any(line.obj for line in exact)  # both kinds seen


def test_a_tool_name_that_is_no_string_is_read_both_ways(tmp_path):
    """A tool call named by an object (a damaged line: seed 401 of the test above) is indexed alike both ways."""
    path = tmp_path / "named.jsonl"
    path.write_bytes(b'{"type":"user","uuid":"a","message":{"content":"go"}}\n'
                     b'{"type":"assistant","uuid":"b","parentUuid":"a","message":{"id":"r","content":'
                     b'[{"type":"tool_use","id":"t","name":{"TeamCreate":1}}]}}\n')
    fast, exact = both(path)
    assert fast == exact
    assert exact[1].obj["message"]["content"] == [{"type": "tool_use", "id": "t"}]


def test_index_without_msgspec_is_the_same(monkeypatch):
    path = claude_code_files(include_subagents=False)[0]
    fast = line_index.read_index(path)
    monkeypatch.setattr(line_index, "msgspec", None)
    assert line_index.read_index(path) == fast


def test_a_team_line_is_indexed_as_any_other(tmp_path):
    """The index no longer marks agent-team lines (the streamed writer derives the team state from the messages
    it converts): a team call's line is one entry like any other, both ways."""
    path = tmp_path / "team.jsonl"
    path.write_bytes(b"".join(json.dumps(o).encode() + b"\n" for o in [
        {"type": "user", "uuid": "a", "message": {"content": "go"}},
        {"type": "assistant", "uuid": "b", "message": {"content": [{"type": "tool_use", "id": "t",
                                                                       "name": "SendMessage"}]}}]))
    fast, exact = both(path)
    assert fast == exact == line_index.read_index(path)
    assert [line.obj["uuid"] for line in fast] == ["a", "b"]


@pytest.mark.parametrize("i", range(len(ODD_LINES)))
def test_lines_read_without_their_text_are_the_same_lines(i, tmp_path):
    """``iter_lines(keep_text=False)`` (the conversion pass) gives each line the value and reason the exact way
    does; only a well-formed object's text may be left out."""
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b'{"type":"user","uuid":"first","message":{"content":"h\xc3\xa9llo"}}\n' + ODD_LINES[i]
                     + (b"" if ODD_LINES[i].endswith(b"here") else b"\n"))
    exact = list(iter_lines(path))
    bare = list(iter_lines(path, keep_text=False))
    assert [(x.n, x.value, x.error, x.obj, x.type) for x in bare] == [(x.n, x.value, x.error, x.obj, x.type)
                                                                       for x in exact]
    assert all(b.text == e.text or (b.text == "" and e.obj is not None) for b, e in zip(bare, exact, strict=True))
    assert bare[0].text == ""  # (an ordinary line: parsed from its bytes)
