"""The wire form of ``p2pd-signal.v1`` messages, byte for byte, and what client messages are refused.

The expected texts are what the protocol's earlier (pydantic) definition wrote: compact JSON, ``type`` first,
fields in their declared order, ``None`` fields left out, ``fatal`` and ``protocol`` always written."""

from __future__ import annotations

import json

import pytest

from signaling import protocol as p
from signaling.parsing import MAX_NESTING, BadMessage, parse_client_message

LIMITS = p.Limits(max_message_bytes=65536, messages_per_second=20.0, message_burst=60, joins_per_minute=60,
                  room_capacity=2, max_room_capacity=8, room_ttl=600.0)


@pytest.mark.parametrize(("message", "wire"), [
    (p.Welcome(server="p2pd-signal/0.1", limits=LIMITS),
     '{"type":"welcome","protocol":"p2pd-signal.v1","server":"p2pd-signal/0.1","limits":{"max_message_bytes":65536,'
     '"messages_per_second":20.0,"message_burst":60,"joins_per_minute":60,"room_capacity":2,"max_room_capacity":8,'
     '"room_ttl":600.0}}'),
    (p.Joined(id=1, room="7", peer_id="a1b2c3d4", peers=["e5f60718"], capacity=2, expires_in=599.5, created=False),
     '{"type":"joined","id":1,"room":"7","peer_id":"a1b2c3d4","peers":["e5f60718"],"capacity":2,"expires_in":599.5,'
     '"created":false}'),
    (p.Joined(room="lobby", peer_id="a1b2c3d4", peers=[], capacity=3, expires_in=600.0, created=True),
     '{"type":"joined","room":"lobby","peer_id":"a1b2c3d4","peers":[],"capacity":3,"expires_in":600.0,"created":true}'),
    (p.PeerJoined(room="7", peer_id="e5f60718"), '{"type":"peer_joined","room":"7","peer_id":"e5f60718"}'),
    (p.PeerLeft(room="7", peer_id="e5f60718"), '{"type":"peer_left","room":"7","peer_id":"e5f60718"}'),
    (p.Relayed(sender="a1b2c3d4", data={"kind": "sealed", "seq": 0, "box": "AAAA", "x": [1, None, "é"]}),
     '{"type":"relay","from":"a1b2c3d4","data":{"kind":"sealed","seq":0,"box":"AAAA","x":[1,null,"é"]}}'),
    (p.Left(id="req-1", room="7"), '{"type":"left","id":"req-1","room":"7"}'),
    (p.Left(room="7"), '{"type":"left","room":"7"}'),
    (p.RoomClosed(room="7", reason="closed", by="a1b2c3d4"),
     '{"type":"room_closed","room":"7","reason":"closed","by":"a1b2c3d4"}'),
    (p.RoomClosed(room="7", reason="expired"), '{"type":"room_closed","room":"7","reason":"expired"}'),
    (p.Pong(id=3), '{"type":"pong","id":3}'),
    (p.Pong(), '{"type":"pong"}'),
    (p.IceServers(ice_servers=[p.IceServer(urls=["stun:h:3478"]),
                               p.IceServer(urls=["turn:h:3478?transport=udp"], username="4600:u", credential="jP39=")],
                  expires_in=3600.0),
     '{"type":"ice_servers","ice_servers":[{"urls":["stun:h:3478"]},{"urls":["turn:h:3478?transport=udp"],'
     '"username":"4600:u","credential":"jP39="}],"expires_in":3600.0}'),
    (p.Error(id=9, code=p.ErrorCode.ROOM_FULL, reason="room 7 is full"),
     '{"type":"error","id":9,"code":"room-full","reason":"room 7 is full","fatal":false}'),
    (p.Error(code=p.ErrorCode.SERVER_FULL, reason="server full", fatal=True),
     '{"type":"error","code":"server-full","reason":"server full","fatal":true}'),
    # what p2pd's client sends
    (p.Allocate(id=1), '{"type":"allocate","id":1}'),
    (p.Join(id=1, room="7", create=True), '{"type":"join","id":1,"room":"7","create":true}'),
    (p.Join(id=1, room="7"), '{"type":"join","id":1,"room":"7","create":false}'),
    (p.Relay(to="e5f60718", data={"kind": "sealed", "seq": 1, "box": "AA=="}),
     '{"type":"relay","to":"e5f60718","data":{"kind":"sealed","seq":1,"box":"AA=="}}'),
])
def test_the_wire_form_of_every_message(message: p.ServerMessage | p.ClientMessage, wire: str) -> None:
    assert p.encode(message) == wire
    decoder = p.SERVER_MESSAGE if isinstance(message, p.ServerMessage) else p.CLIENT_MESSAGE
    assert decoder.decode(wire) == message


@pytest.mark.parametrize("raw", [
    '{"type":"join","room":"7","create":true}', '{"type":"join","room":"a.B-c_9","capacity":3,"id":"x"}',
    '{"type":"allocate","capacity":2,"id":-5}', '{"type":"relay","to":"0123456789abcdef0123456789abcdef","data":null}',
    '{"type":"leave","id":null}', '{"type":"close_room"}', '{"type":"ping","id":9007199254740993}',
])
def test_well_formed_client_messages_are_accepted(raw: str) -> None:
    message = parse_client_message(raw)
    assert not isinstance(message, BadMessage), message
    assert type(message).__struct_config__.tag == json.loads(raw)["type"]


@pytest.mark.parametrize("raw", [
    # types are strict: no number in a string, no integral float, no boolean for a number (or the reverse)
    '{"type":"allocate","capacity":"3"}', '{"type":"allocate","capacity":3.0}', '{"type":"allocate","capacity":true}',
    '{"type":"join","room":"7","create":1}', '{"type":"join","room":"7","create":"yes"}',
    '{"type":"join","room":"7","create":null}', '{"type":"ping","id":true}', '{"type":"ping","id":1.0}',
    # the patterns hold to the end of the text (Python's ``$`` would let a final newline through)
    '{"type":"join","room":"lobby\\n"}', '{"type":"relay","to":"abcd\\n","data":1}',
    '{"type":"join","room":"' + "a" * 65 + '"}', '{"type":"join","room":"-lobby"}',
    '{"type":"relay","to":"' + "a" * 33 + '","data":1}', '{"type":"relay","to":"ABCD","data":1}',
    # numbers JSON cannot hold, and text that is not JSON
    '{"type":"relay","to":"abcd","data":NaN}', '{"type":"relay","to":"abcd","data":1e400}',
    '{"type":"relay","to":"abcd","data":"\\ud800"}', '{"type":"Ping"}', '{"id":1}', '{"type":"welcome"}',
    # server messages are not client messages
    '{"type":"pong"}', '{"type":"relay","from":"abcd","data":1}',
])
def test_malformed_client_messages_are_refused(raw: str) -> None:
    assert isinstance(parse_client_message(raw), BadMessage)
    assert isinstance(parse_client_message(raw.encode()), BadMessage)


@pytest.mark.parametrize(("opening", "closing", "levels"), [("[", "]", 1), ('{"a":', "}", 1), ('[{"a":', "}]", 2)])
def test_relayed_data_nests_at_most_199_deep(opening: str, closing: str, levels: int) -> None:
    def relay(depth: int) -> str:  # ``data`` with ``depth`` levels of lists/objects
        return '{"type":"relay","id":4,"to":"abcd","data":' + opening * (depth // levels) + "0" \
            + closing * (depth // levels) + "}"

    deepest = (MAX_NESTING - 1) // levels * levels
    assert isinstance(parse_client_message(relay(deepest)), p.Relay)
    refused = parse_client_message(relay(deepest + levels))
    assert isinstance(refused, BadMessage) and refused.msg_id == 4 and "data" in refused.reason
    far = parse_client_message('{"type":"relay","id":4,"to":"abcd","data":' + "[" * 5000 + "]" * 5000 + "}")
    assert isinstance(far, BadMessage)  # past the interpreter's recursion limit too


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    message = parse_client_message('{"type":"relay","to":"abcd","data":["' + "[{" * 500 + '"]}')
    assert isinstance(message, p.Relay) and message.data == ["[{" * 500]
