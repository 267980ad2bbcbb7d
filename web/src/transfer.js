// The transfer protocol's two state machines (sans-I/O), mirrored on p2pd/transfer/sender.py, receiver.py,
// plan.py and endings.py. Feed them frames (`receive`) and local events; they return actions for the adapter
// (channel.js) to perform in order:
//   {kind:'send', data}  {kind:'progress', done, total}  {kind:'failed', failure}  {kind:'completed'}
//   receiver only: {kind:'offer', offer}  {kind:'write', index, offset, data}  {kind:'verify'}  {kind:'finalize'}
// Peer input never throws: a bad frame becomes an ERROR frame to send plus a terminal 'failed'.

import { equal } from './bytes.js';
import {
  BASE_MESSAGE_SIZE, CHUNK_OVERHEAD, CODE, CODEC_NAMES, FrameError, LZ4, MAX_MESSAGE_SIZE, MAX_RANGES, ROLE, T,
  TYPE_NAMES, ZERO_ID, codeName, decode, encode, nchunksOf, printable, reasonText,
} from './frames.js';

export const DEFAULT_WINDOW = 8 * 1024 * 1024;
// Seconds' worth a sender that cancelled after END waits for a DONE crossing its CANCEL (sender.py's CANCEL_ANSWER_WAIT).
export const CANCEL_ANSWER_WAIT_MS = 2000;

// State dispatch, as the reference's sender.ALLOWED / receiver.ALLOWED (SPEC.md §4): the frames each state takes
// from the peer; anything else is a protocol error. CANCEL and ERROR are taken in every state from await-hello on.
const STOP = [T.CANCEL, T.ERROR];
export const ALLOWED = {
  sender: {
    idle: [], 'await-hello': [T.HELLO, ...STOP], 'await-decision': [T.ACCEPT, T.REJECT, ...STOP],
    sending: [T.ACK, ...STOP], 'await-done': [T.ACK, T.DONE, ...STOP], cancelling: [T.ACK, T.DONE, ...STOP],
    completed: [], failed: [],
  },
  receiver: {
    idle: [], 'await-hello': [T.HELLO, ...STOP], 'await-offer': [T.OFFER, ...STOP], deciding: [...STOP],
    receiving: [T.CHUNK, T.END, ...STOP], finishing: [...STOP], verifying: [...STOP], finalizing: [...STOP],
    completed: [], failed: [],
  },
};

function checkRanges(have, nchunks) {
  let prevEnd = -1;
  for (const [start, end] of have) {
    if (!(start >= 0 && start < end)) throw new FrameError(`range [${start}, ${end}) is empty or reversed`);
    if (start <= prevEnd) throw new FrameError('ranges must be sorted, disjoint and not touching');
    if (end > nchunks) throw new FrameError(`range [${start}, ${end}) goes past the blob's ${nchunks} chunks`);
    prevEnd = end;
  }
}

/** The chunks still to send: the complement of the receiver's ranges, in index order. */
export class Plan {
  constructor(offer, have) {
    const nchunks = nchunksOf(offer);
    checkRanges(have, nchunks);
    this.offer = offer;
    this.missing = [];
    let cursor = 0;
    for (const [start, end] of have) {
      if (start > cursor) this.missing.push([cursor, start]);
      cursor = end;
    }
    if (cursor < nchunks) this.missing.push([cursor, nchunks]);
    this.positions = [];
    let total = 0;
    for (const [start, end] of this.missing) {
      this.positions.push(total);
      total += end - start;
    }
    this.total = total;
    this.heldBytes = have.reduce((sum, [a, b]) => sum + this.spanBytes(a, b), 0);
  }

  indexAt(position) {
    let i = this.positions.length - 1;
    while (i > 0 && this.positions[i] > position) i--;
    return this.missing[i][0] + position - this.positions[i];
  }

  uptoAfter(position) {
    return position < this.total ? this.indexAt(position) : nchunksOf(this.offer);
  }

  spanBytes(start, end) {
    const cs = this.offer.chunkSize;
    return Math.min(end * cs, this.offer.compressedSize) - start * cs;
  }
}

export const chunkSpan = (offer, index) => {
  const offset = index * offer.chunkSize;
  return [offset, Math.min(offer.chunkSize, offer.compressedSize - offset)];
};

const REFUSALS = [CODE.DECLINED, CODE.TOO_LARGE, CODE.UNSUPPORTED_CODEC, CODE.BUSY];

/** Why a transfer stopped, in words for the page (as events.py's Failure.message). */
export function failureMessage({ code, reason, byPeer }) {
  const text = printable(reason);
  const name = codeName(code);
  if (code === CODE.CANCELLED) return `Transfer cancelled${byPeer ? ' by the other side' : ''}: ${text}`;
  if (REFUSALS.includes(code)) {
    return byPeer ? `The receiver declined the offer (${name}): ${text}` : `Offer refused (${name}): ${text}`;
  }
  if (code === CODE.CHECKSUM) return `Checksum failure: ${text}. Nothing was kept.`;
  if (code === CODE.PEER_GONE) return `The other side went away: ${text}`;
  return byPeer ? `The other side stopped the transfer (${name}): ${text}` : `Transfer failed (${name}): ${text}`;
}

class Machine {
  get finished() {
    return this.state === 'completed' || this.state === 'failed';
  }

  cancel(reason = 'cancelled') {
    if (this.finished) return [];
    if (this.state === 'idle') return this._fail(CODE.CANCELLED, reason, false);
    return [{ kind: 'send', data: encode({ type: T.CANCEL, transferId: this._frameId(), code: CODE.CANCELLED,
      text: reasonText(reason) }) }, ...this._fail(CODE.CANCELLED, reason, false)];
  }

  fail(code, reason) {
    if (this.finished) return [];
    if (this.state === 'idle') return this._fail(code, reason, false);
    return [{ kind: 'send', data: encode({ type: T.ERROR, transferId: this._frameId(), code,
      text: reasonText(reason) }) }, ...this._fail(code, reason, false)];
  }

  timeout(seconds) {
    return this.fail(CODE.TIMEOUT, `${this.silence} for ${seconds} s`);
  }

  connectionLost(reason) {
    if (this.finished) return [];
    return this._fail(CODE.PEER_GONE, reason, false);
  }

  _protocolError(reason) {
    return this.fail(CODE.PROTOCOL, reason);
  }

  _fail(code, reason, byPeer) {
    this.state = 'failed';
    this.failure = { code, reason, byPeer };
    return [{ kind: 'failed', failure: this.failure }];
  }
}

/** One outgoing transfer of one blob payload. */
export class Sender extends Machine {
  constructor({ transferId, rawSize, compressedSize, sha256, info, maxMessageSize = BASE_MESSAGE_SIZE,
    transportLimit = null, window = DEFAULT_WINDOW, codec = LZ4, codecs = [LZ4] }) {
    super();
    if (transferId.length !== 16 || equal(transferId, ZERO_ID)) throw new Error('transfer id must be 16 non-zero bytes');
    Object.assign(this, { transferId, rawSize, compressedSize, sha256, info, maxMessageSize, transportLimit, window,
      codec, codecs });
    this.silence = 'no response from the peer';
    this.state = 'idle';
    this.offer = null;
    this.plan = null;
    this.failure = null;
    this.sent = 0;
    this.unacked = [];
    this.unackedBytes = 0;
    this.ackedUpto = 0;
    this.ackedBytes = 0;
    this.cancelReason = null;
    this.cancelTooLate = false; // completed: the receiver's DONE crossed this side's CANCEL
  }

  _frameId() {
    return this.transferId;
  }

  /** True while a cancel sent after END waits for its answer (SPEC §6: a DONE crossing it completes the send). */
  get cancelling() {
    return this.state === 'cancelling';
  }

  cancel(reason = 'cancelled') {
    if (this.state === 'cancelling') return [];
    if (this.state !== 'await-done') return super.cancel(reason);
    this.cancelReason = reason;
    this.state = 'cancelling';
    return [{ kind: 'send', data: encode({ type: T.CANCEL, transferId: this.transferId, code: CODE.CANCELLED,
      text: reasonText(reason) }) }];
  }

  /** No DONE came within CANCEL_ANSWER_WAIT_MS: the cancel stands. */
  cancelUnanswered() {
    return this.state === 'cancelling' ? this.#cancelled() : [];
  }

  #cancelled() {
    return this._fail(CODE.CANCELLED, this.cancelReason ?? 'cancelled', false);
  }

  fail(code, reason) { // cancelling: the CANCEL is sent, nothing more goes to the peer
    return this.state === 'cancelling' ? this.#cancelled() : super.fail(code, reason);
  }

  // Every end of a cancelling transfer (the peer's CANCEL or ERROR, a closed channel, silence, a bad frame) is this
  // side's cancel standing.
  _fail(code, reason, byPeer) {
    if (this.state === 'cancelling') return super._fail(CODE.CANCELLED, this.cancelReason ?? 'cancelled', false);
    return super._fail(code, reason, byPeer);
  }

  get awaitingDecision() {
    return this.state === 'await-decision';
  }

  start() {
    if (this.state !== 'idle') throw new Error('start() called twice');
    this.state = 'await-hello';
    return [{ kind: 'send', data: encode({ type: T.HELLO, transferId: ZERO_ID, role: ROLE.SENDER,
      maxMessageSize: this.maxMessageSize, codecs: this.codecs }) }];
  }

  /** [index, offset, length] of the chunk that may go now, or null (window full, all sent, not yet). */
  nextChunk() {
    if (this.state !== 'sending' || this.sent >= this.plan.total) return null;
    const index = this.plan.indexAt(this.sent);
    const [offset, length] = chunkSpan(this.offer, index);
    if (this.unackedBytes && this.unackedBytes + length > this.window) return null;
    return [index, offset, length];
  }

  sendChunk(index, payload) {
    const expected = this.nextChunk();
    if (!expected || expected[0] !== index || expected[2] !== payload.length) {
      throw new Error(`sendChunk(${index}) does not match nextChunk() ${expected}`);
    }
    this.sent++;
    this.unacked.push([index, payload.length]);
    this.unackedBytes += payload.length;
    const actions = [{ kind: 'send', data: encode({ type: T.CHUNK, transferId: this.transferId, index, payload }) }];
    if (this.sent === this.plan.total) actions.push(...this.#end());
    return actions;
  }

  #end() {
    this.state = 'await-done';
    return [{ kind: 'send', data: encode({ type: T.END, transferId: this.transferId, nchunks: nchunksOf(this.offer) }) }];
  }

  receive(data) {
    if (this.finished) return [];
    if (this.state === 'idle') return this._protocolError('a frame arrived before the transfer started');
    let frame;
    try {
      frame = decode(data, this.maxMessageSize);
    } catch (error) {
      return this._protocolError(error.message);
    }
    // CANCEL and ERROR may carry the zero id (sent before the peer saw the OFFER); HELLO always does
    const stop = frame.type === T.CANCEL || frame.type === T.ERROR;
    const known = equal(frame.transferId, this.transferId) || (stop && equal(frame.transferId, ZERO_ID));
    if (frame.type !== T.HELLO && !known) {
      return this._protocolError(`${TYPE_NAMES[frame.type]} for another transfer`);
    }
    try {
      return this.#dispatch(frame);
    } catch (error) {
      if (error instanceof FrameError) return this._protocolError(error.message);
      throw error;
    }
  }

  #dispatch(frame) {
    if (!ALLOWED.sender[this.state].includes(frame.type)) {
      throw new FrameError(`unexpected ${TYPE_NAMES[frame.type]} while ${this.state}`);
    }
    switch (frame.type) {
      case T.HELLO: return this.#onHello(frame);
      case T.ACCEPT: return this.#onAccept(frame);
      case T.ACK: return this.#onAck(frame);
      case T.DONE: return this.#onDone(frame);
      default: return this._fail(frame.code, frame.text, true); // REJECT, CANCEL, ERROR: the peer ended it
    }
  }

  #onHello(hello) {
    if (hello.role !== ROLE.RECEIVER) throw new FrameError('the peer is a sender too (HELLO role)');
    let limit = Math.min(this.maxMessageSize, hello.maxMessageSize, MAX_MESSAGE_SIZE,
      this.transportLimit || MAX_MESSAGE_SIZE);
    limit = Math.max(limit, BASE_MESSAGE_SIZE);
    this.offer = { type: T.OFFER, transferId: this.transferId, codec: this.codec, rawSize: this.rawSize,
      compressedSize: this.compressedSize, sha256: this.sha256, chunkSize: limit - CHUNK_OVERHEAD, info: this.info };
    this.state = 'await-decision';
    return [{ kind: 'send', data: encode(this.offer) }];
  }

  #onAccept(accept) {
    this.plan = new Plan(this.offer, accept.have);
    this.window = Math.min(this.window, accept.window);
    this.state = 'sending';
    const actions = [{ kind: 'progress', done: this.plan.heldBytes, total: this.offer.compressedSize }];
    if (this.plan.total === 0) actions.push(...this.#end());
    return actions;
  }

  #onAck(ack) {
    if (ack.upto <= this.ackedUpto) {
      throw new FrameError(`ACK ${ack.upto} does not advance past ${this.ackedUpto} (duplicate or reordered)`);
    }
    const bound = this.plan.uptoAfter(this.sent);
    if (ack.upto > bound) throw new FrameError(`ACK ${ack.upto} acknowledges chunks that were never sent (at most ${bound})`);
    this.ackedUpto = ack.upto;
    while (this.unacked.length && this.unacked[0][0] < ack.upto) {
      const [, length] = this.unacked.shift();
      this.unackedBytes -= length;
      this.ackedBytes += length;
    }
    return [{ kind: 'progress', done: this.plan.heldBytes + this.ackedBytes, total: this.offer.compressedSize }];
  }

  #onDone(done) {
    if (!equal(done.sha256, this.offer.sha256)) throw new FrameError('DONE confirms a SHA-256 different from the one offered');
    this.cancelTooLate = this.state === 'cancelling';
    this.state = 'completed';
    const total = this.offer.compressedSize;
    return [{ kind: 'progress', done: total, total }, { kind: 'completed' }];
  }
}

/** One incoming transfer; the browser keeps the payload in memory ("durable" = stored in the page). */
export class Receiver extends Machine {
  constructor({ maxMessageSize = BASE_MESSAGE_SIZE, maxRawSize = 512 * 1024 * 1024, codecs = [LZ4],
    window = DEFAULT_WINDOW } = {}) {
    super();
    Object.assign(this, { maxMessageSize, maxRawSize, codecs, window });
    this.silence = 'no data from the peer';
    this.state = 'idle';
    this.offer = null;
    this.plan = null;
    this.failure = null;
    this.received = 0;
    this.durable = 0;
    this.pending = [];
    this.unackedBytes = 0;
    this.durableBytes = 0;
  }

  _frameId() {
    return this.offer ? this.offer.transferId : ZERO_ID;
  }

  get awaitingPeer() {
    return ['await-hello', 'await-offer', 'receiving'].includes(this.state);
  }

  start() {
    if (this.state !== 'idle') throw new Error('start() called twice');
    this.state = 'await-hello';
    return [{ kind: 'send', data: encode({ type: T.HELLO, transferId: ZERO_ID, role: ROLE.RECEIVER,
      maxMessageSize: this.maxMessageSize, codecs: this.codecs }) }];
  }

  accept(have = []) {
    if (this.state !== 'deciding') return [];
    const held = have.slice(0, MAX_RANGES);
    this.plan = new Plan(this.offer, held);
    this.state = 'receiving';
    return [{ kind: 'send', data: encode({ type: T.ACCEPT, transferId: this.offer.transferId, window: this.window,
      have: held }) }, { kind: 'progress', done: this.plan.heldBytes, total: this.offer.compressedSize }];
  }

  reject(reason = 'declined', code = CODE.DECLINED) {
    if (this.state !== 'deciding') return [];
    return [{ kind: 'send', data: encode({ type: T.REJECT, transferId: this.offer.transferId, code,
      text: reasonText(reason) }) }, ...this._fail(code, reason, false)];
  }

  /** The first `count` chunks asked for by 'write' actions are stored (cumulative). */
  chunksDurable(count) {
    if (this.finished || !this.plan) return [];
    if (count < this.durable || count > this.received) throw new Error(`chunksDurable(${count}) out of range`);
    if (count === this.durable) return [];
    while (this.durable < count) {
      const length = this.pending.shift();
      this.unackedBytes -= length;
      this.durableBytes += length;
      this.durable++;
    }
    const actions = [
      { kind: 'send', data: encode({ type: T.ACK, transferId: this.offer.transferId, upto: this.plan.uptoAfter(this.durable) }) },
      { kind: 'progress', done: this.plan.heldBytes + this.durableBytes, total: this.offer.compressedSize },
    ];
    if (this.state === 'finishing' && this.durable === this.plan.total) {
      this.state = 'verifying';
      actions.push({ kind: 'verify' });
    }
    return actions;
  }

  /** The SHA-256 of the whole payload as stored. */
  verified(digest) {
    if (this.state !== 'verifying') return [];
    if (!equal(digest, this.offer.sha256)) {
      const hex = (b) => Array.from(b.slice(0, 8), (x) => x.toString(16).padStart(2, '0')).join('');
      return this.fail(CODE.CHECKSUM, `the received payload hashes to sha256 ${hex(digest)}…, the offer said ` +
        `${hex(this.offer.sha256)}…`);
    }
    this.state = 'finalizing';
    return [{ kind: 'finalize' }];
  }

  finalized() {
    if (this.state !== 'finalizing') return [];
    this.state = 'completed';
    return [{ kind: 'send', data: encode({ type: T.DONE, transferId: this.offer.transferId, sha256: this.offer.sha256 }) },
      { kind: 'completed' }];
  }

  receive(data) {
    if (this.finished) return [];
    if (this.state === 'idle') return this._protocolError('a frame arrived before the transfer started');
    let frame;
    try {
      frame = decode(data, this.maxMessageSize);
    } catch (error) {
      return this._protocolError(error.message);
    }
    if (this.offer && !equal(frame.transferId, this.offer.transferId) && frame.type !== T.HELLO) {
      return this._protocolError(`${TYPE_NAMES[frame.type]} for another transfer`);
    }
    try {
      return this.#dispatch(frame);
    } catch (error) {
      if (error instanceof FrameError) return this._protocolError(error.message);
      throw error;
    }
  }

  #dispatch(frame) {
    if (!ALLOWED.receiver[this.state].includes(frame.type)) {
      throw new FrameError(`unexpected ${TYPE_NAMES[frame.type]} while ${this.state}`);
    }
    switch (frame.type) {
      case T.CHUNK: return this.#onChunk(frame);
      case T.END: return this.#onEnd(frame);
      case T.HELLO:
        if (frame.role !== ROLE.SENDER) throw new FrameError('the peer is a receiver too (HELLO role)');
        this.state = 'await-offer';
        return [];
      case T.OFFER: return this.#onOffer(frame);
      default: return this._fail(frame.code, frame.text, true); // CANCEL, ERROR: the peer ended it
    }
  }

  #onOffer(offer) {
    if (offer.chunkSize + CHUNK_OVERHEAD > this.maxMessageSize) {
      throw new FrameError(`OFFER chunk size ${offer.chunkSize} makes frames over the ${this.maxMessageSize}-byte ` +
        'limit this receiver advertised');
    }
    this.offer = offer;
    this.state = 'deciding';
    if (!this.codecs.includes(offer.codec)) {
      return this.reject(`codec id ${offer.codec} (${CODEC_NAMES[offer.codec] ?? 'unknown'}) is not supported here`,
        CODE.UNSUPPORTED_CODEC);
    }
    if (offer.rawSize > this.maxRawSize) {
      return this.reject(`the conversation is ${offer.rawSize} bytes, over this receiver's limit of ` +
        `${this.maxRawSize} bytes`, CODE.TOO_LARGE);
    }
    if (offer.compressedSize > this.maxRawSize * 1.01 + 1024) {
      return this.reject(`the payload is ${offer.compressedSize} bytes, more than any conversation within this ` +
        `receiver's limit of ${this.maxRawSize} bytes compresses to`, CODE.TOO_LARGE);
    }
    return [{ kind: 'offer', offer }];
  }

  #onChunk(chunk) {
    if (this.received >= this.plan.total) throw new FrameError(`CHUNK ${chunk.index} after all ${this.plan.total} planned chunks`);
    const expected = this.plan.indexAt(this.received);
    if (chunk.index !== expected) throw new FrameError(`CHUNK ${chunk.index} out of order (expected ${expected})`);
    const [offset, length] = chunkSpan(this.offer, chunk.index);
    if (chunk.payload.length !== length) {
      throw new FrameError(`CHUNK ${chunk.index} carries ${chunk.payload.length} bytes, expected ${length}`);
    }
    if (this.unackedBytes + length > this.window) throw new FrameError(`the sender exceeded the ${this.window}-byte flow-control window`);
    this.received++;
    this.pending.push(length);
    this.unackedBytes += length;
    return [{ kind: 'write', index: chunk.index, offset, data: chunk.payload }];
  }

  #onEnd(end) {
    if (this.received !== this.plan.total) throw new FrameError(`END after ${this.received} of ${this.plan.total} chunks`);
    if (end.nchunks !== nchunksOf(this.offer)) {
      throw new FrameError(`END says ${end.nchunks} chunks, the OFFER implies ${nchunksOf(this.offer)}`);
    }
    if (this.durable === this.plan.total) {
      this.state = 'verifying';
      return [{ kind: 'verify' }];
    }
    this.state = 'finishing';
    return [];
  }
}
