"""CPace-X25519-SHA512 against tests/vectors/cpace_x25519.json and independent checks of each building block."""

from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from p2pd.pairing import cpace as c

VECTORS = json.loads((Path(__file__).resolve().parents[1] / "vectors" / "cpace_x25519.json").read_text())
CASES = [*VECTORS["cases"], VECTORS["p2pd"]]
P = 2**255 - 19


def h(text: str) -> bytes:
    return bytes.fromhex(text)


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_cpace_vectors(case: dict[str, Any]):
    prs, ci, sid = h(case["PRS"]), h(case["CI"]), h(case["sid"])
    gen = c.generator_string(prs, ci, sid)
    assert gen.hex() == case["generator_string"]
    digest = hashlib.sha512(gen).digest()[:32]
    assert digest.hex() == case["hash_generator_string"]
    assert c.encode_u_coordinate(c.decode_u_coordinate(digest)).hex() == case["u"]
    assert c.calculate_generator(prs, ci, sid).hex() == case["g"]
    a = c.CPace(prs, role="initiator", ci=ci, sid=sid, ad=h(case["ADa"]), scalar=h(case["ya"]))
    b = c.CPace(prs, role="responder", ci=ci, sid=sid, ad=h(case["ADb"]), scalar=h(case["yb"]))
    assert a.share.hex() == case["Ya"] and b.share.hex() == case["Yb"]
    assert c.scalar_mult(h(case["ya"]), b.share).hex() == case["K"] == c.scalar_mult(h(case["yb"]), a.share).hex()
    assert a.finish(b.share, h(case["ADb"])).hex() == case["ISK_IR"]
    assert b.finish(a.share, h(case["ADa"])).hex() == case["ISK_IR"]
    sa = c.CPace(prs, role="symmetric", ci=ci, sid=sid, ad=h(case["ADa"]), scalar=h(case["ya"]))
    sb = c.CPace(prs, role="symmetric", ci=ci, sid=sid, ad=h(case["ADb"]), scalar=h(case["yb"]))
    assert sa.finish(sb.share, h(case["ADb"])).hex() == case["ISK_SY"] == sb.finish(sa.share, h(case["ADa"])).hex()


def test_generator_string_layout_follows_the_draft():
    """lv_cat(DSI, PRS, zpad, CI, sid) with the zero padding filling SHA-512's first 128-byte block."""
    gen = c.generator_string(b"Password", b"CI", b"sid")
    assert gen[:9] == b"\x08CPace255" and gen[9:18] == b"\x08Password"
    assert gen[18] == 109 and gen[19:128] == bytes(109)  # 128 - 1 - 9 - 9 zero bytes
    assert gen[128:] == b"\x02CI\x03sid"
    assert c.generator_string(bytes(200), b"", b"")[9:12] == b"\xc8\x01" + bytes(1)  # no padding when PRS is long
    assert c.generator_string(bytes(200), b"", b"")[211] == 0  # empty zpad is still length-prefixed


@pytest.mark.parametrize(("length", "prefix"), [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"),
                                                (16384, "808001")])
def test_prepend_len_is_leb128(length: int, prefix: str):
    assert c.prepend_len(bytes(length))[: len(prefix) // 2].hex() == prefix


def test_o_cat_orders_lexicographically():
    assert c.o_cat(b"b", b"a") == b"ocba" == c.o_cat(b"a", b"b")
    assert c.o_cat(b"ab", b"a") == b"ocaba"


def _elligator2_straight_line(u: int) -> int:
    """RFC 9380 appendix G.2.1 (map_to_curve_elligator2_curve25519), an independent formulation of the map."""
    c1 = (P + 3) // 8
    c2 = pow(2, c1, P)
    c3 = pow(2, (P - 1) // 4, P)  # sqrt(-1)
    c4 = (P - 5) // 8
    j = 486662
    tv1 = 2 * u * u % P
    xd = (tv1 + 1) % P
    x1n = -j % P
    tv2 = xd * xd % P
    gxd = tv2 * xd % P
    gx1 = j * tv1 % P
    gx1 = gx1 * x1n % P
    gx1 = (gx1 + tv2) % P
    gx1 = gx1 * x1n % P
    tv3 = gxd * gxd % P
    tv2 = tv3 * tv3 % P
    tv3 = tv3 * gxd % P
    tv3 = tv3 * gx1 % P
    tv2 = tv2 * tv3 % P
    y11 = pow(tv2, c4, P) * tv3 % P
    y12 = y11 * c3 % P
    e1 = y11 * y11 * gxd % P == gx1
    y1 = y11 if e1 else y12
    x2n = x1n * tv1 % P
    y21 = y11 * u % P * c2 % P
    y22 = y21 * c3 % P
    gx2 = gx1 * tv1 % P
    e2 = y21 * y21 * gxd % P == gx2
    y2 = y21 if e2 else y22
    e3 = y1 * y1 * gxd % P == gx1
    xn = x1n if e3 else x2n
    del y2
    return xn * pow(xd, P - 2, P) % P


def test_elligator2_matches_the_rfc_straight_line_map():
    inputs = [0, 1, 2, P - 1, P - 2, *(int.from_bytes(secrets.token_bytes(32), "little") % P for _ in range(300))]
    for r in inputs:
        u = c.elligator2_curve25519(r)
        assert u == _elligator2_straight_line(r), r
        assert pow((u**3 + 486662 * u * u + u) % P, (P - 1) // 2, P) in (0, 1)  # the point is on the curve
    for vector in VECTORS["elligator2"]:
        r = c.decode_u_coordinate(h(vector["r"]))
        assert c.encode_u_coordinate(c.elligator2_curve25519(r)).hex() == vector["u"]


def test_x25519_against_rfc7748():
    for vector in VECTORS["x25519_rfc7748"]:
        assert c.scalar_mult(h(vector["scalar"]), h(vector["u"])).hex() == vector["out"]
        private = X25519PrivateKey.from_private_bytes(h(vector["scalar"]))
        assert private.exchange(X25519PublicKey.from_public_bytes(h(vector["u"]))).hex() == vector["out"]


@pytest.mark.parametrize("share", VECTORS["invalid_shares"])
def test_low_order_shares_abort(share: str):
    party = c.CPace(b"pw", role="initiator", sid=b"s")
    with pytest.raises(c.CPaceError):
        party.finish(h(share), b"")


def test_wrong_lengths_abort_and_a_party_finishes_once():
    party = c.CPace(b"pw", role="responder")
    with pytest.raises(c.CPaceError):
        party.finish(b"\x09" * 31)
    party = c.CPace(b"pw", role="responder")
    other = c.CPace(b"pw", role="initiator")
    party.finish(other.share)
    with pytest.raises(RuntimeError):
        party.finish(other.share)
    with pytest.raises(ValueError):
        c.CPace(b"pw", role="observer")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "change",
    ["password", "ci", "sid", "ad", "roles"],
)
def test_any_mismatch_gives_different_keys(change: str):
    base = {"prs": b"guitar-meadow", "ci": b"room 7", "sid": b"0123456789abcdef"}
    other = dict(base)
    if change == "password":
        other["prs"] = b"guitar-meadows"
    elif change == "ci":
        other["ci"] = b"room 8"
    elif change == "sid":
        other["sid"] = b"0123456789abcdeF"
    a = c.CPace(base["prs"], role="initiator", ci=base["ci"], sid=base["sid"], ad=b"A")
    b = c.CPace(other["prs"], role="initiator" if change == "roles" else "responder", ci=other["ci"],
                sid=other["sid"], ad=b"B")
    key_a = a.finish(b.share, b"B" if change != "ad" else b"b")
    key_b = b.finish(a.share, b"A")
    assert key_a != key_b
    same_a = c.CPace(base["prs"], role="initiator", ci=base["ci"], sid=base["sid"], ad=b"A")
    same_b = c.CPace(base["prs"], role="responder", ci=base["ci"], sid=base["sid"], ad=b"B")
    assert same_a.finish(same_b.share, b"B") == same_b.finish(same_a.share, b"A")


def test_published_draft_vector():
    """The draft's own X25519 test vector, every printed intermediate value."""
    from p2pd.pairing import cpace

    v = VECTORS["published"]
    h = bytes.fromhex
    prs, ci, sid = h(v["PRS"]), h(v["CI"]), h(v["sid"])
    assert cpace.generator_string(prs, ci, sid).hex() == v["generator_string"]
    assert cpace.calculate_generator(prs, ci, sid).hex() == v["g"]
    g = h(v["g"])
    ya_share = cpace.scalar_mult(h(v["ya"]), g)
    yb_share = cpace.scalar_mult(h(v["yb"]), g)
    assert (ya_share.hex(), yb_share.hex()) == (v["Ya"], v["Yb"])
    k = cpace.scalar_mult(h(v["ya"]), yb_share)
    assert k.hex() == v["K"] == cpace.scalar_mult(h(v["yb"]), ya_share).hex()
    transcript = cpace.transcript_ir(ya_share, h(v["ADa"]), yb_share, h(v["ADb"]))
    assert transcript.hex() == v["transcript_ir"]
    assert cpace.derive_isk(sid, k, transcript).hex() == v["ISK_IR"]
    # and through the protocol object, both roles
    a = cpace.CPace(prs, role="initiator", ci=ci, sid=sid, ad=h(v["ADa"]), scalar=h(v["ya"]))
    b = cpace.CPace(prs, role="responder", ci=ci, sid=sid, ad=h(v["ADb"]), scalar=h(v["yb"]))
    assert a.finish(b.share, h(v["ADb"])).hex() == v["ISK_IR"] == b.finish(a.share, h(v["ADa"])).hex()
