"""The accept policy (pure) and its config table: size, senders, rate per device, ask."""

from __future__ import annotations

import pytest

from p2pd.daemon.accept_policy import HOUR, Accepted, AcceptPolicy, Decision, parse_policy
from p2pd.errors import Cause, InvalidInputError
from p2pd.transfer.codes import Code

NOW = 1_000_000.0


def judge(policy: AcceptPolicy, *, size: int = 1000, sha: str = "new", device: str = "dev1", name: str = "laptop",
          recent: list[Accepted] | None = None, handoff: bool = False):  # type: ignore[no-untyped-def]
    return policy.judge(device_id=device, device_name=name, sha256=sha, size=size, recent=recent or [], now=NOW,
                        claimed_handoff=handoff)


def test_no_policy_accepts_everything() -> None:
    assert judge(AcceptPolicy(), size=10**12).decision is Decision.ACCEPT


def test_max_size_refuses_larger_offers_as_too_large() -> None:
    policy = AcceptPolicy(max_size=5000)
    assert judge(policy, size=5000).decision is Decision.ACCEPT
    v = judge(policy, size=5001)
    assert (v.decision, v.code, v.cause) == (Decision.REFUSE, Code.TOO_LARGE, Cause.TOO_LARGE)


def test_only_listed_devices_by_id_or_name() -> None:
    policy = AcceptPolicy(devices=("dev2", "laptop"))
    assert judge(policy, device="dev2", name="x").decision is Decision.ACCEPT
    assert judge(policy, device="dev9", name="laptop").decision is Decision.ACCEPT
    v = judge(policy, device="dev9", name="phone")
    assert (v.decision, v.code, v.cause) == (Decision.REFUSE, Code.NOT_ALLOWED, Cause.NOT_ALLOWED)
    assert judge(AcceptPolicy(devices=()), device="dev1").code == Code.NOT_ALLOWED  # an empty list: nobody


def test_transfers_per_hour_counts_distinct_conversations_of_the_last_hour() -> None:
    policy = AcceptPolicy(transfers_per_hour=2)
    recent = [Accepted("a", 10, NOW - 10), Accepted("a", 10, NOW - 5), Accepted("old", 10, NOW - HOUR - 1)]
    assert judge(policy, recent=recent).decision is Decision.ACCEPT  # "a" once; "old" is over an hour ago
    recent.append(Accepted("b", 10, NOW - 1))
    v = judge(policy, recent=recent)
    assert (v.decision, v.code, v.cause) == (Decision.REFUSE, Code.RATE_LIMITED, Cause.RATE_LIMITED)
    assert judge(policy, recent=recent, sha="b").decision is Decision.ACCEPT  # a resume of one already taken


def test_bytes_per_hour() -> None:
    policy = AcceptPolicy(bytes_per_hour=1000)
    recent = [Accepted("a", 600, NOW - 100)]
    assert judge(policy, size=400, recent=recent).decision is Decision.ACCEPT
    assert judge(policy, size=401, recent=recent).code == Code.RATE_LIMITED
    assert judge(policy, size=401, recent=[Accepted("a", 600, NOW - HOUR)]).decision is Decision.ACCEPT


def test_ask_holds_plain_transfers_but_not_claimed_handoffs_and_refusals_come_first() -> None:
    policy = AcceptPolicy(ask=True, max_size=100)
    assert judge(policy, size=10).decision is Decision.ASK
    assert judge(policy, size=10, handoff=True).decision is Decision.ACCEPT
    assert judge(policy, size=101).decision is Decision.REFUSE  # nobody is asked about what would be refused


def test_parse_policy_reads_the_table_and_names_bad_keys() -> None:
    assert parse_policy(None) == AcceptPolicy()
    policy = parse_policy({"max_size": 10, "devices": ["laptop", " dev2 "], "transfers_per_hour": 3,
                           "bytes_per_hour": 0, "ask": True})
    assert policy == AcceptPolicy(max_size=10, devices=("laptop", "dev2"), transfers_per_hour=3, bytes_per_hour=0,
                                  ask=True)
    for bad, key in (({"max_size": -1}, "max_size"), ({"max_size": True}, "max_size"),
                     ({"devices": "laptop"}, "devices"), ({"devices": [""]}, "devices"), ({"ask": "yes"}, "ask"),
                     ({"per_hour": 3}, "per_hour"), ({"transfers_per_hour": 1.5}, "transfers_per_hour")):
        with pytest.raises(InvalidInputError, match=f"accept.{key}"):
            parse_policy(bad, "cfg")
    with pytest.raises(InvalidInputError, match="table"):
        parse_policy(["x"], "cfg")
