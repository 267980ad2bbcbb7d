// CPace on X25519 with SHA-512 (CPACE-X25519-SHA512, draft-irtf-cfrg-cpace), initiator/responder mode — the
// browser twin of p2pd/pairing/cpace.py (see p2pd/pairing/PAIRING.md). The curve arithmetic (RFC 9380's
// Elligator2 map and the X25519 ladder) is the audited @noble/curves; SHA-512 is WebCrypto.

import { x25519, _map_to_curve_elligator2_curve25519 as elligator2Map } from '@noble/curves/ed25519.js';
import { invert, mod } from '@noble/curves/abstract/modular.js';
import { concat, lvCat, sha512, utf8 } from './bytes.js';

export const DSI = utf8('CPace255');
export const DSI_ISK = utf8('CPace255_ISK');
const HASH_BLOCK_BYTES = 128;
const P = 2n ** 255n - 19n;

export class CPaceError extends Error {}

export function generatorString(prs, ci, sid) {
  const zpad = Math.max(0, HASH_BLOCK_BYTES - 1 - lvCat(prs).length - lvCat(DSI).length);
  return lvCat(DSI, prs, new Uint8Array(zpad), ci, sid);
}

export function decodeUCoordinate(bytes) {
  if (bytes.length !== 32) throw new CPaceError('a u-coordinate is 32 bytes');
  let value = 0n;
  for (let i = 31; i >= 0; i--) value = (value << 8n) | BigInt(bytes[i]);
  return (value & ((1n << 255n) - 1n)) % P;
}

export function encodeUCoordinate(u) {
  let value = mod(u, P);
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) {
    out[i] = Number(value & 0xffn);
    value >>= 8n;
  }
  return out;
}

/** RFC 9380 map_to_curve_elligator2 for Curve25519, u-coordinate only (as cpace.py). */
export function elligator2(r) {
  const { xMn, xMd } = elligator2Map(mod(r, P));
  return mod(xMn * invert(xMd, P), P);
}

export async function calculateGenerator(prs, ci, sid) {
  const digest = await sha512(generatorString(prs, ci, sid));
  return encodeUCoordinate(elligator2(decodeUCoordinate(digest.subarray(0, 32))));
}

export function scalarMult(scalar, point) {
  if (scalar.length !== 32 || point.length !== 32) throw new CPaceError('CPace scalars and shares are 32 bytes');
  try {
    const out = x25519.scalarMult(scalar, point);
    if (out.every((b) => b === 0)) throw new Error('zero');
    return out;
  } catch {
    throw new CPaceError('invalid CPace share (low-order point)');
  }
}

export const transcriptIr = (ya, ada, yb, adb) => concat(lvCat(ya, ada), lvCat(yb, adb));

export async function deriveIsk(sid, k, transcript) {
  return sha512(concat(lvCat(DSI_ISK, sid, k), transcript));
}

/** One party: `await CPace.create(prs, {role, ci, sid, ad})`, send `share`, then `await finish(peerShare, peerAd)`. */
export class CPace {
  static async create(prs, { role, ci = new Uint8Array(0), sid = new Uint8Array(0), ad = new Uint8Array(0),
    scalar = null }) {
    if (role !== 'initiator' && role !== 'responder') throw new Error(`unknown CPace role ${role}`);
    const party = new CPace();
    party.role = role;
    party.sid = sid;
    party.ad = ad;
    party.scalar = scalar ?? crypto.getRandomValues(new Uint8Array(32));
    party.generator = await calculateGenerator(prs, ci, sid);
    party.share = scalarMult(party.scalar, party.generator);
    return party;
  }

  async finish(peerShare, peerAd = new Uint8Array(0)) {
    const scalar = this.scalar;
    if (scalar === null) throw new Error('this CPace party has already finished');
    this.scalar = null;
    if (peerShare.length !== 32) throw new CPaceError('a CPace share is 32 bytes');
    const k = scalarMult(scalar, peerShare);
    const transcript = this.role === 'initiator'
      ? transcriptIr(this.share, this.ad, peerShare, peerAd)
      : transcriptIr(peerShare, peerAd, this.share, this.ad);
    return deriveIsk(this.sid, k, transcript);
  }
}
