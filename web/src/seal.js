// Keys derived from the CPace ISK, sealed signaling messages and the verification string — the browser twin
// of p2pd/pairing/seal.py. HKDF-SHA256, HMAC-SHA256 and AES-256-GCM are WebCrypto.

import { b64decode, b64encode, concat, equal, fromUtf8, lvCat, sha256, u64be, utf8 } from './bytes.js';
import { failed, tampered } from './errors.js';

const PROTOCOL_LABEL = utf8('p2pd-pairing-v1');
const SEAL_LABEL = utf8('p2pd-seal-v1');
const CONFIRM_MESSAGE = utf8('p2pd key confirmation');
export const ROLES = ['sender', 'receiver'];
export const otherRole = (role) => (role === 'sender' ? 'receiver' : 'sender');

async function hkdf(isk, room, label) {
  const key = await crypto.subtle.importKey('raw', isk, 'HKDF', false, ['deriveBits']);
  const info = lvCat(PROTOCOL_LABEL, utf8(room), utf8(label));
  const bits = await crypto.subtle.deriveBits({ name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info },
    key, 256);
  return new Uint8Array(bits);
}

/** {confirm: {sender, receiver}, seal: {sender, receiver}, sas} — raw 32-byte keys. */
export async function deriveKeys(isk, room) {
  const keys = { confirm: {}, seal: {}, sas: null };
  for (const role of ROLES) {
    keys.confirm[role] = await hkdf(isk, room, `confirm ${role}`);
    keys.seal[role] = await hkdf(isk, room, `seal ${role}->${otherRole(role)}`);
  }
  keys.sas = await hkdf(isk, room, 'sas');
  return keys;
}

export async function confirmationTag(keys, role) {
  const key = await crypto.subtle.importKey('raw', keys.confirm[role], { name: 'HMAC', hash: 'SHA-256' }, false,
    ['sign']);
  return new Uint8Array(await crypto.subtle.sign('HMAC', key, CONFIRM_MESSAGE));
}

export async function checkConfirmation(keys, peerRole, tag) {
  return equal(await confirmationTag(keys, peerRole), tag);
}

/** Six digits, "042 917": equal on both sides only when both derived the same key. */
export async function verificationString(sasKey) {
  const digest = await sha256(concat(utf8('p2pd-sas-v1'), sasKey));
  const number = new DataView(digest.buffer).getBigUint64(0) % 1000000n;
  const text = number.toString().padStart(6, '0');
  return `${text.slice(0, 3)} ${text.slice(3)}`;
}

const nonce = (seq) => concat(new Uint8Array(4), u64be(seq));
const aad = (room, direction, seq) => lvCat(SEAL_LABEL, utf8(room), utf8(direction), u64be(seq));

async function aesKey(raw, usage) {
  return crypto.subtle.importKey('raw', raw, 'AES-GCM', false, [usage]);
}

/** Seals JSON objects from `role` to its peer, numbered from 0. */
export class Sealer {
  static async create(keys, room, role) {
    const s = new Sealer();
    s.key = await aesKey(keys.seal[role], 'encrypt');
    s.room = room;
    s.direction = `${role}->${otherRole(role)}`;
    s.seq = 0;
    return s;
  }

  async seal(obj) {
    const seq = this.seq++;
    const box = await crypto.subtle.encrypt({ name: 'AES-GCM', iv: nonce(seq), additionalData: aad(this.room,
      this.direction, seq) }, this.key, utf8(JSON.stringify(obj)));
    return { kind: 'sealed', seq, box: b64encode(new Uint8Array(box)) };
  }
}

/** Opens the peer's sealed messages in order, each exactly once. */
export class Opener {
  static async create(keys, room, ownRole) {
    const o = new Opener();
    const peer = otherRole(ownRole);
    o.key = await aesKey(keys.seal[peer], 'decrypt');
    o.room = room;
    o.direction = `${peer}->${ownRole}`;
    o.seq = 0;
    return o;
  }

  async open(message) {
    const seq = message.seq;
    if (!Number.isInteger(seq) || seq !== this.seq) {
      throw tampered('A sealed message from the peer arrived out of order or twice (the signaling was tampered with).');
    }
    const box = b64decode(message.box);
    if (box === null) throw tampered('Malformed sealed message from the peer.');
    let plaintext;
    try {
      plaintext = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: nonce(seq), additionalData: aad(this.room,
        this.direction, seq) }, this.key, box);
    } catch {
      throw tampered('A sealed message from the peer failed its integrity check (the signaling was tampered with).');
    }
    this.seq++;
    try {
      return JSON.parse(fromUtf8(new Uint8Array(plaintext)));
    } catch {
      throw failed('The peer sent a sealed message that is not JSON.');
    }
  }
}
