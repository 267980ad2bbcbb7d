// One whole exchange from the page, step by step, as p2pd/exchange.py does for the daemon:
// receive: code → rendezvous → PAKE → sealed SDP → data channel → OFFER shown → accept/decline → chunks (stored
//          for resume, partial.js) → SHA-256 verified → LZ4 decompressed → document parsed;
// send:    .a2a.json → blob → rendezvous (join the waiting receiver's code) → PAKE → sealed SDP → chunks → DONE.
// Either side may make the code instead (`code: null`): the server allocates a number, the words are drawn
// here, and `ui.codeMade(code)` shows it until the other side comes. `signal` (an AbortSignal) cancels: before
// the transfer the pairing is left; during it a CANCEL frame goes to the peer (SPEC.md §6).

import { hex } from './bytes.js';
import { ReceiveRun, SendRun, connectPeer } from './channel.js';
import { P2pdError } from './errors.js';
import { normalizedInfo } from './frames.js';
import { pack, unpack } from './offthread.js';
import { PartialStore } from './partial.js';
import { Rendezvous } from './signaling.js';

const cancelledError = () => new P2pdError('cancelled', 'You cancelled.');

/** Reject with `cancelled` when `signal` aborts (and run `onAbort`); `promise` otherwise. */
function abortable(promise, signal, onAbort = () => {}) {
  if (!signal) return promise;
  return new Promise((resolve, reject) => {
    const abort = () => {
      onAbort();
      reject(cancelledError());
    };
    if (signal.aborted) {
      abort();
      return;
    }
    signal.addEventListener('abort', abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}

/** While `run` goes, an abort cancels it with a CANCEL frame. */
function cancelOnAbort(run, signal) {
  if (!signal) return;
  const abort = () => run.cancel();
  if (signal.aborted) abort();
  else signal.addEventListener('abort', abort, { once: true });
  run.done.finally(() => signal.removeEventListener('abort', abort)).catch(() => {});
}

const PEER_GONE_GRACE_MS = 1000; // the peer's last frames may still be on their way when its signaling drops

function watchPeer(rv, run) {
  rv.onFailure((error) => {
    if (error.kind === 'peer-gone') setTimeout(() => run.lost('the other side went away (closed or lost)'), PEER_GONE_GRACE_MS);
  });
}

async function pairAndConnect(signalUrl, code, role, ui, { timeoutMs, signal }) {
  ui.status('Connecting to the signaling server…');
  const rv = await abortable(Rendezvous.open(signalUrl, { role, code }), signal);
  try {
    if (code === null) ui.codeMade?.(rv.code);
    ui.status(role === 'receiver' ? 'Waiting for the sender…' : 'Waiting for the receiver…');
    const verification = await abortable(rv.pair(timeoutMs), signal);
    ui.paired(verification);
    ui.status('Paired. Connecting peer to peer…');
    const link = await abortable(connectPeer(role === 'receiver' ? 'answer' : 'offer', (o) => rv.sendSealed(o),
      () => rv.recvSealed(30000), { iceServers: rv.iceServers }), signal);
    ui.status('Connected peer to peer.');
    return { rv, link, verification };
  } catch (error) {
    rv.close();
    throw error;
  }
}

/**
 * Close the connection only once the last frame this side sent (DONE, CANCEL, ERROR) reached the peer. After DONE
 * the sender reads it and closes the channel; if it has not within `lingerMs` (DONE or its packet delayed, or lost
 * and being retransmitted), or at once after a CANCEL or ERROR, the page closes the channel itself: that close goes
 * out after the frame, and the channel reaches 'closed' only once the peer took everything sent before it (the W3C
 * closing procedure, an SCTP stream reset: RFC 6525). Then, or after `closeWaitMs` more, the connection goes
 * (Chromium's retransmissions of a lost frame back off: measured 0.6, 1.7 and 4.0 s after it, later ones further).
 * Closing it first would leave the two sides disagreeing: the page kept the conversation (or cancelled), the peer
 * says the other side went away. As p2pd/transfer/runloop.py's close_heard (its CLOSE_WAIT).
 */
function closeOnceDelivered(link, { lingerMs = 0, closeWaitMs = 15000 } = {}) {
  const { channel } = link;
  return new Promise((resolve) => {
    let timer = null;
    function done() {
      clearTimeout(timer);
      channel.removeEventListener('close', done);
      link.close();
      resolve();
    }
    if (channel.readyState === 'closed') {
      done();
      return;
    }
    channel.addEventListener('close', done);
    const closeChannel = () => {
      timer = setTimeout(done, closeWaitMs);
      channel.close();
    };
    if (lingerMs > 0) timer = setTimeout(closeChannel, lingerMs);
    else closeChannel();
  });
}

export async function receiveConversation({ signalUrl, code, ui, signal, timeoutMs = 300000,
  openPartial = (offer) => PartialStore.open(offer) }) {
  const { rv, link, verification } = await pairAndConnect(signalUrl, code, 'receiver', ui, { timeoutMs, signal });
  let started = 0;
  let run = null;
  try {
    run = new ReceiveRun(link, {
      decide: async (offer) => {
        const yes = await ui.decide(offer);
        started = performance.now();
        return yes;
      },
      onProgress: (done, total) => ui.progress(done, total, run.resumedBytes),
      openPartial,
    });
    watchPeer(rv, run);
    cancelOnAbort(run, signal);
    const { offer, payload, partial } = await run.start();
    const seconds = (performance.now() - started) / 1000;
    performance.mark('p2pd-verified');
    ui.status('SHA-256 verified. Decompressing…');
    // The connection closes on its own time (at once, as a rule): the conversation is shown without waiting.
    closeOnceDelivered(link, { lingerMs: 2000 });
    const { file, doc } = await unpack(payload, offer.rawSize); // in a worker: the page keeps drawing
    partial?.remove().catch(() => {}).finally(() => partial.close());
    return { offer, file, doc, verification, sha256: hex(offer.sha256), seconds, resumedBytes: run.resumedBytes };
  } catch (error) {
    const partial = run?.partial;
    if (partial && error instanceof P2pdError) {
      // known bad (or verified but not a conversation): forgotten; else what was stored stays for a new try of
      // the same conversation, after a reload as after a dropped connection (SPEC.md §7's held ranges)
      if (error.kind === 'checksum' || error.kind === 'invalid') await partial.remove().catch(() => {});
      else if (partial.heldBytes > 0) error.keptBytes = partial.heldBytes;
      partial.close();
    }
    if (run?.cancelled) await run.drained();
    closeOnceDelivered(link); // the CANCEL or ERROR frame reaches the sender before the connection goes
    throw error;
  } finally {
    rv.close();
  }
}

/** Send `file` (an ArrayBuffer of a .a2a.json document: checked and packed in a worker, handed over to it). */
export async function sendConversation({ signalUrl, code, file, ui, signal, timeoutMs = 300000 }) {
  ui.status('Packing the conversation…');
  const packed = await pack(file);
  const { rv, link, verification } = await pairAndConnect(signalUrl, code, 'sender', ui, { timeoutMs, signal });
  let run = null;
  try {
    ui.status('Offering the conversation; waiting for the receiver to accept…');
    run = new SendRun(link, { payload: packed.payload, rawSize: packed.rawSize, sha256: packed.sha256,
      info: normalizedInfo(packed.info), onProgress: ui.progress });
    watchPeer(rv, run);
    cancelOnAbort(run, signal);
    const started = performance.now();
    await run.start();
    return { messageCount: packed.messageCount, rawSize: packed.rawSize, verification, sha256: hex(packed.sha256),
      bytes: packed.payload.length, cancelTooLate: run.machine.cancelTooLate,
      seconds: (performance.now() - started) / 1000 };
  } catch (error) {
    if (run?.cancelled) await run.drained(); // the CANCEL frame goes out before the connection closes
    throw error instanceof P2pdError ? error : new P2pdError('failed', String(error?.message ?? error));
  } finally {
    closeOnceDelivered(link); // (the run closed the channel, SPEC §1: the connection goes once that is done)
    rv.close();
  }
}
