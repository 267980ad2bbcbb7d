// One whole exchange from the page, step by step, as p2pd/exchange.py does for the daemon:
// receive: code → rendezvous → PAKE → sealed SDP → data channel → OFFER shown → accept/decline → chunks →
//          SHA-256 verified → LZ4 decompressed → document parsed;
// send:    .a2a.json → blob → rendezvous (join the waiting receiver's code) → PAKE → sealed SDP → chunks → DONE.

import { hex } from './bytes.js';
import { encodeBlob, lz4Decompress, readConversation } from './blob.js';
import { ReceiveRun, SendRun, connectPeer } from './channel.js';
import { P2pdError } from './errors.js';
import { normalizedInfo } from './frames.js';
import { Rendezvous } from './signaling.js';

const PEER_GONE_GRACE_MS = 1000; // the peer's last frames may still be on their way when its signaling drops

function watchPeer(rv, run) {
  rv.onFailure((error) => {
    if (error.kind === 'peer-gone') setTimeout(() => run.lost('the other side went away (closed or lost)'), PEER_GONE_GRACE_MS);
  });
}

async function pairAndConnect(signalUrl, code, role, ui, { timeoutMs }) {
  ui.status('Connecting to the signaling server…');
  const rv = await Rendezvous.open(signalUrl, { role, code });
  try {
    ui.status(role === 'receiver' ? 'Waiting for the sender…' : 'Waiting for the receiver…');
    const verification = await rv.pair(timeoutMs);
    ui.paired(verification);
    ui.status('Paired. Connecting peer to peer…');
    const link = await connectPeer(role === 'receiver' ? 'answer' : 'offer', (o) => rv.sendSealed(o),
      () => rv.recvSealed(30000), { iceServers: rv.iceServers });
    ui.status('Connected peer to peer.');
    return { rv, link, verification };
  } catch (error) {
    rv.close();
    throw error;
  }
}

function lingerThenClose(link, ms = 2000) {
  // The sender closes the channel after DONE; wait for that (briefly) so DONE is not lost by closing first.
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      link.close();
      resolve();
    }
    if (link.channel.readyState === 'closed') done();
    else link.channel.addEventListener('close', done, { once: true });
  });
}

export async function receiveConversation({ signalUrl, code, ui, timeoutMs = 300000 }) {
  const { rv, link, verification } = await pairAndConnect(signalUrl, code, 'receiver', ui, { timeoutMs });
  let started = 0;
  try {
    const run = new ReceiveRun(link, {
      decide: async (offer) => {
        const yes = await ui.decide(offer);
        started = performance.now();
        return yes;
      },
      onProgress: ui.progress,
    });
    watchPeer(rv, run);
    const { offer, payload } = await run.start();
    const seconds = (performance.now() - started) / 1000;
    ui.status('SHA-256 verified. Decompressing…');
    const raw = lz4Decompress(payload, offer.rawSize);
    const { doc } = readConversation(raw);
    await lingerThenClose(link);
    return { offer, raw, doc, verification, sha256: hex(offer.sha256), seconds };
  } catch (error) {
    link.close();
    throw error;
  } finally {
    rv.close();
  }
}

export async function sendConversation({ signalUrl, code, bytes, ui, timeoutMs = 300000 }) {
  const { doc, info } = readConversation(bytes);
  ui.status('Packing the conversation…');
  const packed = await encodeBlob(bytes);
  const { rv, link, verification } = await pairAndConnect(signalUrl, code, 'sender', ui, { timeoutMs });
  try {
    ui.status('Offering the conversation; waiting for the receiver to accept…');
    const run = new SendRun(link, { payload: packed.payload, rawSize: packed.rawSize, sha256: packed.sha256,
      info: normalizedInfo(info), onProgress: ui.progress });
    watchPeer(rv, run);
    const started = performance.now();
    await run.start();
    return { doc, verification, sha256: hex(packed.sha256), bytes: packed.payload.length,
      seconds: (performance.now() - started) / 1000 };
  } catch (error) {
    throw error instanceof P2pdError ? error : new P2pdError('failed', String(error?.message ?? error));
  } finally {
    setTimeout(() => link.close(), 500);
    rv.close();
  }
}
