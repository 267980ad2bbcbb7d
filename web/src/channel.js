// The WebRTC adapter: one pre-negotiated, reliable, ordered RTCDataChannel (id 0, as p2pd/webrtc.py) set up
// through the sealed signaling, and the two transfer runs that drive the sans-I/O machines of transfer.js
// over it: frames ≤ 16 KiB, backpressure on bufferedAmount with bufferedamountlow, SHA-256 with WebCrypto.

import { sha256 } from './bytes.js';
import { P2pdError, failed } from './errors.js';
import { BASE_MESSAGE_SIZE, CODE } from './frames.js';
import { CANCEL_ANSWER_WAIT_MS, Receiver, Sender, failureMessage } from './transfer.js';

export const CHANNEL_ID = 0;
const HIGH_WATER = 1 << 20; // send while bufferedAmount ≤ 1 MiB …
const LOW_WATER = 256 << 10; // … then wait for bufferedamountlow at 256 KiB
const ACK_BYTES = 1 << 20; // acknowledge after every MiB received …
const ACK_MS = 100; // … or this long after the first unacknowledged chunk
const GATHER_MS = 5000;

function gatheringComplete(pc) {
  if (pc.iceGatheringState === 'complete') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, GATHER_MS); // send what was gathered so far
    pc.addEventListener('icegatheringstatechange', () => {
      if (pc.iceGatheringState === 'complete') {
        clearTimeout(timer);
        resolve();
      }
    });
  });
}

/**
 * Offer (`role = 'offer'`, the sending side) or answer (`'answer'`, the receiving side) over `send`/`recv`
 * (sealed signaling), and wait until the data channel is open. No trickle: each description carries all
 * its candidates, as aiortc's do.
 */
export async function connectPeer(role, send, recv, { timeoutMs = 30000, iceServers = [] } = {}) {
  const pc = new RTCPeerConnection({ iceServers });
  const channel = pc.createDataChannel('p2pd', { negotiated: true, id: CHANNEL_ID, ordered: true });
  channel.binaryType = 'arraybuffer';
  // Queue what arrives from the first moment: the peer may send its HELLO as soon as the channel opens.
  const early = [];
  channel.onmessage = (event) => early.push(event.data);
  const opened = new Promise((resolve, reject) => {
    channel.addEventListener('open', resolve, { once: true });
    pc.addEventListener('connectionstatechange', () => {
      if (pc.connectionState === 'failed') reject(failed('No peer-to-peer connection could be made (ICE failed).'));
    });
  });
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(failed(`No peer-to-peer connection within ${timeoutMs / 1000} s.`)), timeoutMs);
  });
  let remoteSdp;
  try {
    await Promise.race([(async () => {
      if (role === 'offer') {
        await pc.setLocalDescription(await pc.createOffer());
        await gatheringComplete(pc);
        await send({ type: 'offer', sdp: pc.localDescription.sdp });
        const answer = await recv();
        if (answer?.type !== 'answer' || typeof answer.sdp !== 'string') {
          throw failed('The other side sent something other than an SDP answer.');
        }
        remoteSdp = answer.sdp;
        await pc.setRemoteDescription({ type: 'answer', sdp: remoteSdp });
      } else {
        const offer = await recv();
        if (offer?.type !== 'offer' || typeof offer.sdp !== 'string') {
          throw failed('The other side sent something other than an SDP offer.');
        }
        remoteSdp = offer.sdp;
        await pc.setRemoteDescription({ type: 'offer', sdp: remoteSdp });
        await pc.setLocalDescription(await pc.createAnswer());
        await gatheringComplete(pc);
        await send({ type: 'answer', sdp: pc.localDescription.sdp });
      }
      await opened;
    })(), deadline]);
  } catch (error) {
    pc.close();
    throw error;
  } finally {
    clearTimeout(timer);
  }
  const mms = /^a=max-message-size:(\d+)/m.exec(remoteSdp);
  return { pc, channel, early, remoteMaxMessageSize: mms ? Number(mms[1]) : null, close: () => pc.close() };
}

function failureError(failure) {
  const message = failureMessage(failure);
  if ([CODE.DECLINED, CODE.TOO_LARGE, CODE.UNSUPPORTED_CODEC, CODE.BUSY].includes(failure.code)) {
    return new P2pdError('declined', message);
  }
  if (failure.code === CODE.CHECKSUM) return new P2pdError('checksum', message);
  if (failure.code === CODE.PEER_GONE) return new P2pdError('peer-gone', message);
  if (failure.code === CODE.CANCELLED) return new P2pdError('cancelled', message);
  return new P2pdError('failed', message);
}

/** What both runs share: the message pump into the machine, the idle timer, the channel's end. */
class Run {
  constructor(link, machine, { idleMs = 30000, onProgress = () => {} } = {}) {
    this.link = link;
    this.machine = machine;
    this.idleMs = idleMs;
    this.onProgress = onProgress;
    this.done = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.done.catch(() => {});
    const { channel, pc } = link;
    channel.onmessage = (event) => this.onMessage(event.data);
    channel.onclose = () => this.lost('the data channel closed');
    this.onState = () => {
      if (pc.connectionState === 'failed' || pc.connectionState === 'closed') this.lost('the peer-to-peer connection dropped');
    };
    pc.addEventListener('connectionstatechange', this.onState);
  }

  begin(actions) {
    this.perform(actions);
    for (const data of this.link.early.splice(0)) this.onMessage(data);
    this.touch();
  }

  touch() {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.waitingOnPeer()) this.perform(this.machine.timeout(this.idleMs / 1000));
      else this.touch();
    }, this.idleMs);
  }

  onMessage(data) {
    this.touch();
    this.perform(this.machine.receive(new Uint8Array(data)));
  }

  /** The peer is gone (channel closed, ICE failed, or its signaling connection went away). */
  lost(reason) {
    this.perform(this.machine.connectionLost(reason));
  }

  /** The person stopped it: CANCEL goes to the peer (after what is queued) and the run fails as cancelled — or, a
   * sender past its last chunk, waits a moment for the receiver's answer: its DONE, crossing the CANCEL, means it
   * kept the conversation (SPEC §6), and the run completes. */
  cancel(reason = 'cancelled by the person at the browser') {
    this.cancelled = true;
    this.perform(this.machine.cancel(reason));
    if (this.machine.cancelling) {
      setTimeout(() => this.perform(this.machine.cancelUnanswered()), CANCEL_ANSWER_WAIT_MS);
    }
  }

  /** Resolves once what was queued on the channel went out (the CANCEL frame), or after `ms`. */
  drained(ms = 3000) {
    const { channel } = this.link;
    if (channel.readyState !== 'open' || channel.bufferedAmount === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const deadline = performance.now() + ms;
      const check = () => {
        if (channel.readyState !== 'open' || channel.bufferedAmount === 0 || performance.now() > deadline) resolve();
        else setTimeout(check, 20);
      };
      check();
    });
  }

  send(data) {
    try {
      this.link.channel.send(data);
    } catch (error) {
      this.perform(this.machine.connectionLost(`sending failed: ${error.message}`));
    }
  }

  perform(actions) {
    for (const action of actions) {
      if (action.kind === 'send') this.send(action.data);
      else if (action.kind === 'progress') this.onProgress(action.done, action.total);
      else if (action.kind === 'failed') this.finish(failureError(action.failure));
      else if (action.kind === 'completed') this.finish(null);
      else this.handle(action);
    }
  }

  finish(error) {
    clearTimeout(this.idleTimer);
    this.link.pc.removeEventListener('connectionstatechange', this.onState);
    if (error) this.reject(error);
    else this.resolve(this.result());
  }
}

/**
 * Receive one conversation payload. `decide(offer)` resolves true to accept. Resolves to {offer, payload}
 * (the verified, still-compressed payload); rejects with a P2pdError (declined, checksum, peer-gone, …).
 * `openPartial(offer)` (partial.js's PartialStore.open) gives the resume store: what it holds is loaded and
 * listed in ACCEPT, and chunks are acknowledged only once stored there. Without one, chunks held in memory count
 * as durable (nothing survives a reload).
 */
export class ReceiveRun extends Run {
  constructor(link, { decide, onOffer = () => {}, openPartial = async () => null, ...options }) {
    super(link, new Receiver({ maxMessageSize: BASE_MESSAGE_SIZE }), options);
    this.decide = decide;
    this.onOffer = onOffer;
    this.openPartial = openPartial;
    this.partial = null;
    this.resumedBytes = 0;
    this.written = 0;
    this.unackedBytes = 0;
    this.batch = [];
    this.storing = Promise.resolve();
    this.ackTimer = null;
    this.deciding = false;
  }

  start() {
    this.begin(this.machine.start());
    return this.done;
  }

  waitingOnPeer() {
    return this.machine.awaitingPeer;
  }

  result() {
    return { offer: this.machine.offer, payload: this.payload, partial: this.partial };
  }

  handle(action) {
    if (action.kind === 'offer') {
      this.onOffer(action.offer);
      this.deciding = true;
      Promise.resolve(this.decide(action.offer)).then(async (yes) => {
        if (this.machine.finished) return; // cancelled or the peer left while the person decided
        if (!yes) {
          this.deciding = false;
          this.perform(this.machine.reject('declined by the person at the browser'));
          return;
        }
        this.payload = new Uint8Array(action.offer.compressedSize);
        let held = [];
        try {
          this.partial = await this.openPartial(action.offer);
          held = this.partial ? this.partial.heldChunks(action.offer.chunkSize) : [];
          if (held.length) await this.partial.load(this.payload);
        } catch {
          this.partial = null; // storage failed: receive it whole, without resume
          held = [];
        }
        this.deciding = false;
        if (this.machine.finished) return;
        const actions = this.machine.accept(held);
        this.resumedBytes = this.machine.plan?.heldBytes ?? 0; // before the first progress report goes out
        this.perform(actions);
        this.touch();
      });
    } else if (action.kind === 'write') {
      this.payload.set(action.data, action.offset);
      this.batch.push([action.offset, action.data]);
      this.written++;
      this.unackedBytes += action.data.length;
      if (this.unackedBytes >= ACK_BYTES) this.flush();
      else if (!this.ackTimer) this.ackTimer = setTimeout(() => this.flush(), ACK_MS);
    } else if (action.kind === 'verify') {
      sha256(this.payload).then((digest) => this.perform(this.machine.verified(digest)));
    } else if (action.kind === 'finalize') {
      this.perform(this.machine.finalized());
    }
  }

  onMessage(data) {
    super.onMessage(data);
    // END arrives after the last CHUNK: make everything durable at once instead of waiting for the timer.
    if (this.machine.state === 'finishing') this.flush();
  }

  /** Store the batch (when there is a resume store), then tell the machine those chunks are durable (ACK). */
  flush() {
    clearTimeout(this.ackTimer);
    this.ackTimer = null;
    this.unackedBytes = 0;
    const count = this.written;
    const batch = this.batch.splice(0);
    const partial = this.partial;
    this.storing = this.storing.then(async () => {
      if (partial && batch.length) {
        try {
          await partial.write(batch);
        } catch {
          this.partial = null; // storage failed (quota): go on from memory, without resume
        }
      }
      this.perform(this.machine.chunksDurable(count));
    });
  }

  finish(error) {
    clearTimeout(this.ackTimer);
    if (error) this.payload = null; // never offer half a file
    super.finish(error);
  }
}

/** Send one payload; resolves once the receiver confirmed the SHA-256 (DONE). */
export class SendRun extends Run {
  constructor(link, { payload, rawSize, sha256: digest, info, ...options }) {
    const transferId = crypto.getRandomValues(new Uint8Array(16));
    transferId[0] |= 1; // never all zero
    super(link, new Sender({ transferId, rawSize, compressedSize: payload.length, sha256: digest, info,
      maxMessageSize: BASE_MESSAGE_SIZE, transportLimit: link.remoteMaxMessageSize }), options);
    this.payload = payload;
    this.pumping = false;
    link.channel.bufferedAmountLowThreshold = LOW_WATER;
    link.channel.addEventListener('bufferedamountlow', () => this.pump());
  }

  start() {
    this.begin(this.machine.start());
    return this.done;
  }

  waitingOnPeer() {
    return !this.machine.awaitingDecision;
  }

  result() {
    return { bytesSent: this.payload.length };
  }

  perform(actions) {
    super.perform(actions);
    if (!this.machine.finished) this.pump();
  }

  handle() {}

  pump() {
    if (this.pumping) return;
    this.pumping = true;
    try {
      for (;;) {
        if (this.link.channel.bufferedAmount > HIGH_WATER) return; // bufferedamountlow calls pump again
        const next = this.machine.nextChunk();
        if (!next) return;
        const [index, offset, length] = next;
        for (const action of this.machine.sendChunk(index, this.payload.subarray(offset, offset + length))) {
          if (action.kind === 'send') this.send(action.data);
        }
        if (this.machine.finished) return;
      }
    } finally {
      this.pumping = false;
    }
  }

  finish(error) {
    super.finish(error);
    // The sender closes the channel once the transfer is over (SPEC §1); after a cancel, only once the CANCEL
    // frame queued behind up to 1 MiB of chunks went out.
    (this.cancelled ? this.drained(3000) : Promise.resolve()).then(() => this.link.channel.close());
  }
}
