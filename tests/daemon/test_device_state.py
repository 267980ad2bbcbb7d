"""The device-session lifecycle (pure): states, refusal and the retry policy, decided on causes."""

from __future__ import annotations

import random

from p2pd.daemon.device_state import BACKOFF_MAX, REFUSED_RETRY, DeviceState, Presence, backoff
from p2pd.errors import (
    Cause,
    DeviceKeyChangedError,
    NoPeerError,
    SignalingError,
    TransferFailedError,
    WrongCodeError,
)


def test_backoff_is_jittered_exponential_and_capped() -> None:
    seed = random.randrange(1 << 30)
    print("seed", seed)
    rng = random.Random(seed)
    for failures in range(0, 20):
        cap = min(BACKOFF_MAX, 0.5 * 2 ** min(failures, 10))
        values = [backoff(failures, rng) for _ in range(50)]
        assert all(0 <= v <= cap for v in values)
    assert max(backoff(30, rng) for _ in range(200)) > BACKOFF_MAX / 2


def test_a_session_goes_connecting_online_offline() -> None:
    p = Presence()
    assert p.state is DeviceState.OFFLINE and not p.online
    since = p.since
    p.attempt()  # waiting alone in the room: still offline, since the same moment
    assert p.state is DeviceState.OFFLINE and p.since == since
    p.peer_arrived()
    assert p.state is DeviceState.CONNECTING
    p.came_online()
    assert p.online and p.failures == 0 and p.view()["state"] == "online"
    since = p.since
    p.ended()
    assert p.state is DeviceState.OFFLINE and p.cause is Cause.PEER_GONE and p.since >= since


def test_nobody_in_the_room_rejoins_at_once_whatever_the_message() -> None:
    p = Presence()
    p.attempt()
    assert p.after_failure(NoPeerError("went away; connection"), "b") == 0.0
    assert p.state is DeviceState.OFFLINE and p.cause is Cause.NO_PEER and p.failures == 1
    # the old text check: "no peer joined" in a lost-connection error no longer means "rejoin at once"
    wait = p.after_failure(SignalingError("no peer joined", cause=Cause.SIGNALING_LOST), "b")
    assert 0 <= wait <= 0.5 * 2 ** 2 and p.failures == 2 and p.cause is Cause.SIGNALING_LOST


def test_a_channel_that_was_online_does_not_count_as_a_failure() -> None:
    p = Presence()
    p.came_online()
    p.after_failure(TransferFailedError("the peer left"), "b")
    assert p.failures == 0 and p.state is DeviceState.OFFLINE
    p.unreachable(OSError("refused"))
    assert p.failures == 1 and p.cause is Cause.SIGNALING_UNREACHABLE
    p.unreachable(SignalingError("refused", cause=Cause.SIGNALING_REFUSED))
    assert p.failures == 2 and p.cause is Cause.SIGNALING_REFUSED


def test_a_changed_key_or_a_lost_pairing_is_refused_and_stays_so_while_retrying() -> None:
    p = Presence()
    assert p.after_failure(DeviceKeyChangedError("DIFFERENT KEY"), "b") == REFUSED_RETRY
    assert p.state is DeviceState.REFUSED and p.cause is Cause.KEY_CHANGED and p.error == "DIFFERENT KEY"
    p.attempt()
    p.peer_arrived()
    assert p.state is DeviceState.REFUSED  # stays refused while it tries again
    q = Presence()
    assert q.after_failure(WrongCodeError("x"), "laptop") == REFUSED_RETRY
    assert q.state is DeviceState.REFUSED and q.error is not None and "'laptop'" in q.error
    q.came_online()
    assert q.state is DeviceState.ONLINE
