"""Choosing ICE servers (merge, TURN order) and explaining a failed connection."""

from __future__ import annotations

from p2pd.transfer.ice import Failure, IcePlan, Outcome, Probe, Server, explain, merge, plan


def test_merge_puts_local_first_and_keeps_one_entry_per_url():
    local = [{"urls": "turn:h:3478?transport=udp", "username": "mine", "credential": "x"}]
    given = [{"urls": ["stun:h:3478"]}, {"urls": ["turn:h:3478?transport=udp", "turn:h:3478?transport=tcp"],
                                          "username": "1:p2pd", "credential": "y"}, {"urls": 5}, "junk"]
    merged = merge(local, given)
    assert [s.url for s in merged] == ["turn:h:3478?transport=udp", "stun:h:3478", "turn:h:3478?transport=tcp"]
    assert merged[0].username == "mine" and merged[2].username == "1:p2pd"
    assert [s.transport for s in merged if s.is_turn] == ["udp", "tcp"]
    assert Server("turns:h:443").transport == "tls"


async def test_plan_without_relays_keeps_only_the_first_stun():
    ice = await plan([Server("stun:h:1"), Server("stun:h:2")])
    assert [s.url for s in ice.servers] == ["stun:h:1"] and ice.turn is None
    assert explain(ice)[0] is Failure.NO_RELAY


def test_explain_names_the_reason():
    udp, tcp = Server("turn:h:3478?transport=udp"), Server("turn:h:3478?transport=tcp")
    refused = IcePlan(servers=[], probes=[Probe(udp, Outcome.REFUSED), Probe(tcp, Outcome.REFUSED)])
    assert explain(refused)[0] is Failure.RELAY_REFUSED
    blocked = IcePlan(servers=[], probes=[Probe(udp, Outcome.UNREACHABLE)])
    assert explain(blocked)[0] is Failure.UDP_BLOCKED and "transport=tcp" in explain(blocked)[1]
    down = IcePlan(servers=[], probes=[Probe(udp, Outcome.UNREACHABLE), Probe(tcp, Outcome.UNREACHABLE)])
    assert explain(down)[0] is Failure.RELAY_UNREACHABLE
    fine = IcePlan(servers=[tcp], turn=tcp, probes=[Probe(udp, Outcome.UNREACHABLE), Probe(tcp, Outcome.OK)])
    assert explain(fine)[0] is Failure.PEER_UNREACHABLE


async def test_a_stun_server_on_a_silent_relay_address_is_skipped(monkeypatch):
    from p2pd.transfer import ice

    async def fake_probe(server: Server, timeout: float = 3.0) -> Probe:
        return Probe(server, Outcome.UNREACHABLE if server.transport == "udp" else Outcome.OK)

    monkeypatch.setattr(ice, "probe", fake_probe)
    said: list[str] = []
    servers = [Server("stun:h:3478"), Server("turn:h:3478?transport=udp"), Server("turn:h:3478?transport=tcp")]
    chosen = await plan(servers, status=said.append)
    assert [s.url for s in chosen.servers] == ["turn:h:3478?transport=tcp"]
    assert any("skipping stun:h:3478" in line for line in said)
    other = await plan([Server("stun:elsewhere:3478"), Server("turn:h:3478?transport=udp")])
    assert [s.url for s in other.servers] == ["stun:elsewhere:3478"] and other.turn is None


async def test_relay_only_without_a_relay_fails_at_once_with_the_reason(monkeypatch):
    import pytest

    from p2pd.errors import ConnectionFailedError
    from p2pd.transfer.peer import connect

    monkeypatch.delenv("P2PD_ICE_SERVERS", raising=False)
    monkeypatch.setenv("P2PD_CONFIG", "/nonexistent/p2pd.toml")
    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    async def recv() -> dict:
        raise AssertionError("nothing should be awaited from the peer")

    with pytest.raises(ConnectionFailedError) as caught:
        await connect("offer", send, recv, relay_only=True, timeout=5)
    assert caught.value.details["reason"] == Failure.NO_RELAY.value and sent == []


def _timed_probes(monkeypatch, answers: dict[str, float | None], cancelled: list[str]) -> None:
    """The relays as the probes would find them: the seconds each transport takes to answer (None: never — a
    network that drops it), with the cancellations of those left waiting recorded."""
    import asyncio

    from p2pd.transfer import ice

    async def fake_probe(server: Server, timeout: float = 3.0) -> Probe:
        after = answers[server.transport]
        try:
            await asyncio.sleep(timeout if after is None else after)
        except asyncio.CancelledError:
            cancelled.append(server.transport)
            raise
        return Probe(server, Outcome.UNREACHABLE if after is None else Outcome.OK)

    monkeypatch.setattr(ice, "probe", fake_probe)


SERVERS = [Server("stun:h:3478"), Server("turn:h:3478?transport=udp"), Server("turn:h:3478?transport=tcp")]


async def test_once_a_tcp_relay_answered_a_silent_udp_one_is_waited_for_only_a_grace(monkeypatch):
    import time

    from p2pd.transfer import ice

    cancelled: list[str] = []
    _timed_probes(monkeypatch, {"udp": None, "tcp": 0.05}, cancelled)
    monkeypatch.setattr(ice, "UDP_GRACE", 0.2)
    said: list[str] = []
    started = time.monotonic()
    chosen = await plan(SERVERS, status=said.append, probe_timeout=30)  # (without the grace: 30 s)
    assert time.monotonic() - started < 10
    assert [s.url for s in chosen.servers] == ["turn:h:3478?transport=tcp"]  # UDP taken as blocked: no STUN
    assert [p.outcome for p in chosen.probes] == [Outcome.UNREACHABLE, Outcome.OK]
    assert cancelled == ["udp"]  # the probe left waiting was stopped (its socket closed), not abandoned
    assert any("skipping stun:h:3478" in line for line in said)


async def test_a_udp_relay_answering_within_the_grace_is_still_preferred(monkeypatch):
    from p2pd.transfer import ice

    cancelled: list[str] = []
    _timed_probes(monkeypatch, {"udp": 0.3, "tcp": 0.05}, cancelled)  # one UDP datagram lost: later than TCP
    monkeypatch.setattr(ice, "UDP_GRACE", 1.0)
    chosen = await plan(SERVERS, probe_timeout=30)
    assert [s.url for s in chosen.servers] == ["stun:h:3478", "turn:h:3478?transport=udp"]
    assert cancelled == []
