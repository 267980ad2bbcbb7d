// The pairing state machine of one peer (sans-I/O), mirrored on p2pd/pairing/machine.py's `Pairing`:
// CPace → key confirmation → sealed messages. Feed it the peer's relayed `data` objects with `receive`; it
// returns a Step {send: [...], delivered: [...], error, paired}. Async only because WebCrypto is.
// Every error it reports carries `code`, the cause as p2pd/errors.py names it (wrong_code, tampered,
// role_clash, protocol); a failed machine answers every later input with its first failure. The behaviour is
// pinned by tests/vectors/pairing_machine.json (web/tests/pairing.test.mjs).

import { b64decode, b64encode, lvCat, utf8 } from './bytes.js';
import { CPace, CPaceError } from './cpace.js';
import { P2pdError, failed, tampered, wrongCode } from './errors.js';
import { Opener, Sealer, checkConfirmation, confirmationTag, deriveKeys, otherRole, verificationString } from
  './seal.js';

export const PAIRING_VERSION = 1;
const SID_BYTES = 16;

export const channelIdentifier = (room) => lvCat(utf8('p2pd-pairing-v1'), utf8(room));

// The cause (p2pd/errors.py's Cause) of an error raised below, by its kind; seal.js's Opener raises `tampered`
// for unauthenticated or out-of-order messages and `failed` for an authenticated one that is not JSON.
const CODE_BY_KIND = { 'wrong-code': 'wrong_code', tampered: 'tampered', failed: 'protocol' };
/** `error` with `code` set to a p2pd/errors.py cause (kept if it already has one). */
export const withCode = (error, code) => Object.assign(error, { code: error.code ?? code });
const roleClash = (role) => withCode(failed(`Both peers joined as ${role}: one side must send and the other ` +
  'receive.'), 'role_clash');

export class Pairing {
  constructor(code, role, { room = null, sid = null, scalar = null } = {}) {
    if (role !== 'sender' && role !== 'receiver') throw new Error(`role must be sender or receiver, not ${role}`);
    this.code = code;
    this.role = role;
    this.room = room ?? code.nameplate;
    this.state = role === 'sender' ? 'idle' : 'waiting-share';
    this.sid = sid ?? crypto.getRandomValues(new Uint8Array(SID_BYTES));
    this.scalar = scalar;
    this.keys = null;
    this.verification = null;
    this.failure = null;
  }

  /** Sender only: the first CPace message. */
  async start() {
    if (this.role !== 'sender' || this.state !== 'idle') throw new Error('only an idle sender starts the pairing');
    this.cpace = await CPace.create(this.code.password, { role: 'initiator', ci: channelIdentifier(this.room),
      sid: this.sid, ad: utf8('sender'), scalar: this.scalar });
    this.state = 'waiting-share';
    return [{ kind: 'pake', v: PAIRING_VERSION, role: 'sender', sid: b64encode(this.sid),
      share: b64encode(this.cpace.share) }];
  }

  async receive(data) {
    if (this.failure) return { send: [], delivered: [], error: this.failure, paired: false };
    let step;
    try {
      step = await this.#receive(data);
    } catch (error) {
      if (!(error instanceof P2pdError)) throw error;
      step = { send: [], delivered: [], error, paired: false };
    }
    if (step.error) {
      this.failure = withCode(step.error, CODE_BY_KIND[step.error.kind] ?? 'protocol');
      this.state = 'failed';
    }
    return step;
  }

  async seal(obj) {
    if (this.state !== 'paired') throw new Error('cannot seal before the pairing completed');
    return this.sealer.seal(obj);
  }

  async #receive(data) {
    if (data === null || typeof data !== 'object' || Array.isArray(data)) {
      throw tampered('Malformed pairing message from the peer.');
    }
    const kind = data.kind;
    if (kind === 'pake' && this.state === 'waiting-share') return this.#onShare(data);
    if (kind === 'confirm' && this.state === 'waiting-confirm') return this.#onConfirm(data);
    if (kind === 'sealed' && this.state === 'paired') {
      return { send: [], delivered: [await this.opener.open(data)], error: null, paired: false };
    }
    if (kind === 'pake' && data.role === this.role) throw roleClash(this.role);
    throw tampered(`Unexpected pairing message from the peer while ${this.state}.`);
  }

  #checkVersion(data) {
    if (data.v !== PAIRING_VERSION) {
      throw withCode(failed(`The peer speaks pairing version ${String(data.v).slice(0, 10)}, this page ` +
        `${PAIRING_VERSION}: update both sides.`), 'protocol');
    }
  }

  #bytes(value, what) {
    const bytes = b64decode(value, 64);
    if (bytes === null) throw tampered(`Malformed ${what} from the peer.`);
    return bytes;
  }

  async #finish(cpace, share, peerAd) {
    try {
      return await cpace.finish(share, utf8(peerAd));
    } catch (error) {
      if (error instanceof CPaceError) {
        throw tampered('Invalid key exchange message from the peer (the signaling was tampered with).');
      }
      throw error;
    }
  }

  async #onShare(data) {
    this.#checkVersion(data);
    if (data.role !== otherRole(this.role)) {
      if (data.role === this.role) throw roleClash(this.role);
      throw tampered('Malformed pairing message from the peer.');
    }
    const share = this.#bytes(data.share, 'key exchange message');
    if (this.role === 'receiver') {
      const sid = this.#bytes(data.sid, 'key exchange message');
      if (sid.length !== SID_BYTES) throw tampered('Malformed key exchange message from the peer.');
      this.sid = sid;
      const cpace = await CPace.create(this.code.password, { role: 'responder', ci: channelIdentifier(this.room),
        sid, ad: utf8('receiver'), scalar: this.scalar });
      const isk = await this.#finish(cpace, share, 'sender');
      this.keys = await deriveKeys(isk, this.room);
      this.state = 'waiting-confirm';
      return { send: [{ kind: 'pake', v: PAIRING_VERSION, role: 'receiver', share: b64encode(cpace.share),
        confirm: b64encode(await confirmationTag(this.keys, 'receiver')) }], delivered: [], error: null, paired: false };
    }
    const tag = this.#bytes(data.confirm, 'key confirmation');
    const isk = await this.#finish(this.cpace, share, 'receiver');
    this.keys = await deriveKeys(isk, this.room);
    // Our confirmation goes out even when theirs fails, so the receiver learns the code was wrong too.
    const reply = [{ kind: 'confirm', v: PAIRING_VERSION, confirm: b64encode(await confirmationTag(this.keys,
      'sender')) }];
    if (!(await checkConfirmation(this.keys, 'receiver', tag))) {
      return { send: reply, delivered: [], error: wrongCode(), paired: false };
    }
    await this.#becomePaired();
    return { send: reply, delivered: [], error: null, paired: true };
  }

  async #onConfirm(data) {
    this.#checkVersion(data);
    const tag = this.#bytes(data.confirm, 'key confirmation');
    if (!(await checkConfirmation(this.keys, 'sender', tag))) throw wrongCode();
    await this.#becomePaired();
    return { send: [], delivered: [], error: null, paired: true };
  }

  async #becomePaired() {
    this.sealer = await Sealer.create(this.keys, this.room, this.role);
    this.opener = await Opener.create(this.keys, this.room, this.role);
    this.verification = await verificationString(this.keys.sas);
    this.state = 'paired';
  }
}
