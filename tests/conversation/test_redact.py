"""Secret redaction: every kind masked in text, tool input and tool output; counts by kind; nothing else changed;
no secret in any output."""

from __future__ import annotations

import json
import random
import string

import pytest

from p2pd.agents.codex.export import export_rollout
from p2pd.agents.sources import load_file
from p2pd.cli.main import main
from p2pd.config import redact_default
from p2pd.conversation.document_io import read_document
from p2pd.conversation.redact import (
    KINDS,
    MASK,
    NEEDS,
    may_hold_secret,
    redact_document,
    redact_text,
    scan_text,
)
from p2pd.errors import InvalidInputError
from tests.agents.claude_code.helpers import Session
from tests.agents.helpers import Rollout
from tests.corpus import claude_code_files, codex_files, file_id, gemini_files
from tests.seeds import seeded

PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7Vx3rS1q2w3e4r5t6y7u8i9o0pLkJhGfDsAzXcVbNm\n"
       "QwErTyUiOpAsDfGhJkLzXcVbNm1234567890abcdefABCDEF==\n-----END RSA PRIVATE KEY-----")
SECRETS = {  # kind -> (text holding it, the secret part that must vanish)
    "private-key": (PEM, "MIIEowIBAAKCAQEA7Vx3rS1q2w3e4r5t6y7u8i9o0pLkJhGfDsAzXcVbNm"),
    "jwt": ("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "eyJzdWIiOiIxMjM0NTY3ODkwIn0"),
    "anthropic-key": ("ANTHROPIC key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCd",
                      "sk-ant-api03-AbCdEfGhIjKlMnOp"),
    "openai-key": ("key: sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCd", "sk-proj-AbCdEfGhIjKlMnOp"),
    "github-token": ("git clone https://x-access-token@github.com with ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
                     "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    "gitlab-token": ("GITLAB glpat-AbCdEfGhIjKlMnOpQrSt12", "glpat-AbCdEfGhIjKlMnOpQrSt12"),
    "slack-token": ("slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
                    "xoxb-123456789012-1234567890123"),
    "aws-access-key": ("aws id AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE"),
    "aws-secret-key": ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                       "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    "gcp-api-key": ("maps AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW ok", "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"),
    "azure-storage-key": ("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
                          "Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFy==;",
                          "Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFy"),
    "url-credentials": ("psql postgres://admin:S3cr3tPassw0rd@db.example.com:5432/app", "S3cr3tPassw0rd"),
    "env-secret": ("DATABASE_PASSWORD=hunter2hunter2\nexport STRIPE_API_KEY='rk_live_51H8abcdef'",
                   "hunter2hunter2"),
    "json-secret": ('config.json: {"user": "bob", "password": "Tr0ub4dor&3x"}', "Tr0ub4dor&3x"),
}


def test_every_kind_has_a_planted_secret():
    assert set(SECRETS) == set(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_is_masked_alone(kind):
    text, secret = SECRETS[kind]
    from collections import Counter

    counts: Counter[str] = Counter()
    out = redact_text(text, counts)
    assert secret not in out and MASK.format(kind) in out
    assert counts[kind] >= 1 and set(counts) == {kind}


def test_harmless_text_is_untouched():
    text = ("API_KEY = os.environ['API_KEY']\nTOKEN=${TOKEN}\npassword = input()\nsk-short\n"
            "https://user@example.com/path AKIA-not-a-key ghp_short eyJnot.a.jwt")
    assert redact_text(text) == text


def _cc_session_with_secrets() -> tuple[Session, list[str]]:
    s = Session()
    secrets = []
    for kind, (text, secret) in SECRETS.items():
        secrets.append(secret)
        s.user(f"here is the {kind}: {text}")
        s.tool_call("Bash", {"command": f"echo '{text}'"}, f"output: {text}")
    s.assistant([{"type": "text", "text": "done"}])
    return s, secrets


def test_masked_in_text_tool_input_and_tool_output(tmp_path):
    s, secrets = _cc_session_with_secrets()
    doc = load_file(s.write(tmp_path))
    red, report = redact_document(doc)
    data = json.dumps(red.to_json_dict())
    for secret in secrets:
        assert secret not in data
    for kind in KINDS:
        # prompt text + tool input + tool output (+ the toolUseResult copy of the output in the source envelope)
        assert report.counts[kind] >= 3, kind
    assert all(s not in report.describe() for s in secrets)
    # title and summary are made again from the masked text (a clipped secret would escape the patterns)
    assert red.title.startswith("here is the private-key: [REDACTED:private-key]")
    assert "[REDACTED:" in red.summary


def test_codex_arguments_json_string_is_masked(tmp_path):
    r = Rollout()
    r.user("deploy")
    text, secret = SECRETS["private-key"]
    r.call("shell", {"command": ["bash", "-lc", f"echo '{text}' > key.pem && echo {SECRETS['openai-key'][0]}"]},
           "ok", "call_1")
    doc = export_rollout(r.write(tmp_path))
    red, report = redact_document(doc)
    data = json.dumps(red.to_json_dict())
    assert secret not in data and "sk-proj-AbCd" not in data
    assert report.counts["private-key"] == 1 and report.counts["openai-key"] == 1
    args = next(p.data_value["arguments"] for m in red.messages for p in m.parts if p.kind == "data")
    json.loads(args)  # the JSON string stays valid JSON


def test_nothing_else_changes(tmp_path):
    """The redacted document equals the same conversation written with the masks in place of the secrets."""
    with_secret, with_mask = Session(session_id="s1"), Session(session_id="s1")
    for s, holder in ((with_secret, "{}"), (with_mask, None)):
        s.t = 0
        for kind, (text, _secret) in SECRETS.items():
            value = text if holder else redact_text(text)
            s.user(f"{kind}: {value}")
            s.tool_call("Bash", {"command": value}, value)
    a = load_file(with_secret.write(tmp_path / "a"))
    b = load_file(with_mask.write(tmp_path / "b"))
    red, _ = redact_document(a)
    ja, jb = red.to_json_dict(), b.to_json_dict()
    for key in ("origin", "createdAt"):
        ja.pop(key), jb.pop(key)
    # uuids differ between the two builds; compare with them normalised
    dump_a = json.dumps(ja["messages"])
    dump_b = json.dumps(jb["messages"])
    for ma, mb in zip(a.messages, b.messages, strict=True):
        dump_a = dump_a.replace(ma.message_id, "ID")
        dump_b = dump_b.replace(mb.message_id, "ID")
        for la, lb in zip(ma.metadata["claudeCode"]["lines"], mb.metadata["claudeCode"]["lines"], strict=True):
            for key in ("uuid", "parentUuid"):
                if la["source"].get(key):
                    dump_a = dump_a.replace(la["source"][key], "U")
                    dump_b = dump_b.replace(lb["source"][key], "U")
    import re

    tool_ids = re.compile(r"(?:toolu|msg)_[0-9a-f]{20}")
    assert tool_ids.sub("T", dump_a) == tool_ids.sub("T", dump_b)


CORPUS_FILES = [f for f in claude_code_files(include_subagents=False) + codex_files() + gemini_files()
                if f.suffix in (".jsonl", ".json")]


@pytest.mark.parametrize("path", CORPUS_FILES, ids=file_id)
def test_corpus_passes_through_unchanged_with_count(path):
    doc = load_file(path)
    red, report = redact_document(doc)
    original = doc.to_json_dict()
    # the (sanitized) corpus holds no secrets: zero masks, and the document is exactly the same
    assert report.total == 0 and report.describe() == "no secrets found"
    assert red.to_json_dict() == original


def test_cli_export_redact_prints_counts_and_no_secret(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("P2PD_REDACT", raising=False)
    monkeypatch.setenv("P2PD_CONFIG", str(tmp_path / "none.toml"))
    s, secrets = _cc_session_with_secrets()
    s.raw("{broken line with " + SECRETS["github-token"][0])  # a malformed line holding a secret
    src = s.write(tmp_path / "src")
    out_file = tmp_path / "out.a2a.json"
    assert main(["export", str(src), "--redact", "-o", str(out_file)]) == 0
    captured = capsys.readouterr()
    written = out_file.read_text()
    for secret in secrets:
        assert secret not in captured.out and secret not in captured.err and secret not in written
    assert "Redaction: masked" in captured.err and "github-token" in captured.err
    assert read_document(out_file).counts.messages > 0
    # without --redact the secret stays (so the test above can fail)
    assert main(["export", str(src), "--no-redact", "-o", str(tmp_path / "plain.a2a.json")]) == 0
    assert secrets[0] in (tmp_path / "plain.a2a.json").read_text()


def test_config_default(tmp_path, monkeypatch):
    monkeypatch.delenv("P2PD_REDACT", raising=False)
    cfg = tmp_path / "config.toml"
    monkeypatch.setenv("P2PD_CONFIG", str(cfg))
    assert redact_default() is False
    cfg.write_text("redact = true\n")
    assert redact_default() is True
    monkeypatch.setenv("P2PD_REDACT", "0")
    assert redact_default() is False
    monkeypatch.setenv("P2PD_REDACT", "maybe")
    with pytest.raises(InvalidInputError, match="P2PD_REDACT"):
        redact_default()
    monkeypatch.delenv("P2PD_REDACT")
    cfg.write_text("redact = [")
    with pytest.raises(InvalidInputError, match="not valid TOML"):
        redact_default()


def test_config_default_applies_to_export(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("P2PD_REDACT", "1")
    s, secrets = _cc_session_with_secrets()
    out_file = tmp_path / "o.a2a.json"
    assert main(["export", str(s.write(tmp_path / "src")), "-o", str(out_file)]) == 0
    assert secrets[0] not in out_file.read_text() and "Redaction: masked" in capsys.readouterr().err


def test_a_key_named_raw_is_scanned_but_image_bytes_are_not(tmp_path):
    webhook = "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
    key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCd"
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    s = Session()
    s.user([{"type": "text", "text": "post it"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}])
    s.tool_call("Notify", {"raw": {"url": webhook}, "opts": {"raw": key}}, {"raw": f"sent with {key}"})
    s.assistant([{"type": "text", "text": "done"}])
    red, report = redact_document(load_file(s.write(tmp_path)))
    data = json.dumps(red.to_json_dict())
    assert webhook not in data and key not in data
    assert report.counts["slack-token"] >= 1 and report.counts["openai-key"] >= 2
    assert png in data  # the image's bytes travel unchanged


def test_json_style_assignments_in_text_and_in_structured_input_are_masked(tmp_path):
    s = Session()
    s.user("read the config")
    s.tool_call("Read", {"file_path": "/app/config.json"},
                '{\n  "db": {"password": "correct-horse"},\n  "api_key":"abc123xyz",\n  "token_type": "Bearer"\n}')
    s.tool_call("Bash", {"command": "curl -d '{\\\"client_secret\\\": \\\"s3cr3t-v4lue\\\"}' x"}, "ok")
    s.tool_call("Login", {"username": "bob", "password": "plain-pass-1"}, "ok")
    s.assistant([{"type": "text", "text": "done"}])
    red, report = redact_document(load_file(s.write(tmp_path)))
    data = json.dumps(red.to_json_dict(), ensure_ascii=False)
    for secret in ("correct-horse", "abc123xyz", "s3cr3t-v4lue", "plain-pass-1"):
        assert secret not in data, secret
    assert "Bearer" in data and '"username": "bob"' in data  # token_type is not a secret key
    assert report.counts["json-secret"] >= 4


def test_the_sessions_own_title_is_kept(tmp_path):
    text, secret = SECRETS["openai-key"]
    s = Session()
    s.user(f"use {text} for the deploy")
    s.assistant([{"type": "text", "text": "ok"}])
    s.add({"type": "custom-title", "customTitle": "Deploy pipeline fix", "sessionId": s.session_id})
    doc = load_file(s.write(tmp_path))
    assert doc.title == "Deploy pipeline fix"
    red, report = redact_document(doc)
    assert report.total and red.title == "Deploy pipeline fix" and secret not in (red.summary or "")


def test_a_line_kept_as_bytes_is_masked_too(tmp_path):
    text, secret = SECRETS["github-token"]
    s = Session()
    s.user("hello")
    s.assistant([{"type": "text", "text": "hi"}])
    src = s.write(tmp_path)
    with src.open("ab") as fh:  # a last line cut inside a character, holding a token
        fh.write(('{"type":"user","message":{"content":"' + text + ' é').encode()[:-1])
    doc = load_file(src)
    assert doc.records[-1].raw is not None
    red, report = redact_document(doc)
    assert report.counts["github-token"] >= 1
    import base64

    kept = base64.b64decode(red.records[-1].raw)
    assert secret.encode() not in kept and b"[REDACTED:github-token]" in kept and kept.endswith(b"\xc3")


def test_the_shortcut_skips_only_text_no_pattern_can_match() -> None:
    assert set(NEEDS) == set(KINDS)
    assert not may_hold_secret("a plain paragraph about keys and passes, and a path //tmp: nothing to mask")
    for kind, (text, _) in SECRETS.items():
        assert may_hold_secret(text), kind


FRAGMENTS = [*(k for k in KINDS), "PRIVATE KEY-----", "-----BEGIN ", "-----END RSA ", "eyJ", "sk-", "sk-ant-",
             "sk-proj-", "ghp_", "github_pat_", "glpat-", "xoxb-", "https://hooks.slack.com/services/", "AKIA", "AIza",
             "AccountKey=", "aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", "://", "user:", "@", "host", "=", ":",
             '"', '\\"', "'", " ", "\n", "export ", "PASSWORD", "Password", "passwd", "PWD", "TOKEN", "token",
             "ToKeN", "SECRET", "ſecret", "Kelvin", "\u212aEY", "credentıal", "credentİal", "CREDENTIALS", "api_key",
             "API_KEY", "apiKey", "access_key", "accessKey", "private_key", "client", "Secret", "[REDACTED:jwt]"]


KEY_WORDS = ["secret", "token", "password", "passwd", "pwd", "api_key", "apikey", "access_key", "accesskey",
             "private_key", "privatekey", "credential", "credentials", "aws_secret_access_key", "awssecretaccesskey"]
ODD_CASE = {"s": "\u017f", "i": "\u0131", "k": "\u212a"}  # what re matches case-insensitively for s, i and k


def _key(rng: random.Random) -> str:
    """A secret-naming key in random case, some letters swapped for their odd case-insensitive twins (ſ, ı, İ, K)."""
    word = rng.choice(["", "client_", "db", "my."]) + rng.choice(KEY_WORDS)
    out = []
    for c in word:
        r = rng.random()
        out.append(ODD_CASE[c] if c in ODD_CASE and r < 0.15 else "\u0130" if c == "i" and r < 0.2 else
                   c.upper() if r < 0.5 else c)
    return "".join(out)


def _random_text(rng: random.Random) -> str:
    alnum = string.ascii_letters + string.digits
    value = "".join(rng.choice(alnum + "/+=") for _ in range(rng.randint(8, 44)))
    pieces = []
    for _ in range(rng.randint(1, 12)):
        r = rng.random()
        if r < 0.15:  # the shapes the key-named patterns match: JSON, escaped JSON, .env, aws_secret_access_key =
            q = rng.choice(['"', '\\"'])
            pieces.append(rng.choice([f"{q}{_key(rng)}{q}: {q}{value}{q}", f"{_key(rng).upper()}={value}",
                                      f"{_key(rng)} = {value}"]))
        elif r < 0.55:
            pieces.append(rng.choice(FRAGMENTS))
        else:
            pieces.append("".join(rng.choice(alnum + "_-./+=") for _ in range(rng.randint(1, 60))))
    return "".join(pieces)


def test_the_shortcut_never_changes_what_is_masked() -> None:
    """Seeded random texts made of the patterns' pieces, case variants and the characters re matches
    case-insensitively for s, i and k: masked the same with and without the shortcut."""
    from collections import Counter

    seed, rng = seeded()
    skipped = 0
    for _ in range(20_000):
        text = _random_text(rng)
        quick: Counter[str] = Counter()
        full: Counter[str] = Counter()
        assert (redact_text(text, quick), quick) == (scan_text(text, full), full), (seed, text)
        skipped += not may_hold_secret(text)
    assert skipped > 1000  # (the shortcut is taken: the test would pass vacuously otherwise)


@pytest.mark.parametrize("path", claude_code_files()[:3], ids=file_id)
def test_the_shortcut_changes_nothing_in_real_sessions(path) -> None:
    from collections import Counter

    strings: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)

    walk(load_file(path).to_json_dict())
    quick: Counter[str] = Counter()
    full: Counter[str] = Counter()
    assert [redact_text(s, quick) for s in strings] == [scan_text(s, full) for s in strings]
    assert quick == full
