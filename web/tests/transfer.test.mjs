// The sans-I/O transfer machines of the page against each other (and the frames they exchange): a whole
// transfer, a declined offer, a payload that does not hash to the offered SHA-256, a lying peer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { equal, sha256 } from '../src/bytes.js';
import { CODE, T, decode, encode, MAX_MESSAGE_SIZE } from '../src/frames.js';
import { Receiver, Sender } from '../src/transfer.js';

const info = { title: 't', platform: 'claude-code', sessionId: 's', messageCount: 3 };

async function pair(payload, { decide = true, tamper = false } = {}) {
  const digest = await sha256(payload);
  const sender = new Sender({ transferId: new Uint8Array(16).fill(7), rawSize: 1000, compressedSize: payload.length,
    sha256: digest, info });
  const receiver = new Receiver({ window: 64 * 1024 });
  const stored = new Uint8Array(payload.length);
  const log = { toReceiver: [], toSender: [], senderEnd: null, receiverEnd: null, offers: [] };
  const queueS = [...sender.start()];
  const queueR = [...receiver.start()];
  let written = 0;
  const runSender = (actions) => {
    for (const a of actions) {
      if (a.kind === 'send') log.toReceiver.push(a.data);
      if (a.kind === 'failed' || a.kind === 'completed') log.senderEnd = a;
    }
  };
  const runReceiver = async (actions) => {
    for (const a of actions) {
      if (a.kind === 'send') log.toSender.push(a.data);
      else if (a.kind === 'offer') {
        log.offers.push(a.offer);
        await runReceiver(decide ? receiver.accept() : receiver.reject('no thanks'));
      } else if (a.kind === 'write') {
        stored.set(a.data, a.offset);
        written++;
      } else if (a.kind === 'verify') {
        if (tamper) stored[0] ^= 1;
        await runReceiver(receiver.verified(await sha256(stored)));
      } else if (a.kind === 'finalize') await runReceiver(receiver.finalized());
      else if (a.kind === 'failed' || a.kind === 'completed') log.receiverEnd = a;
    }
  };
  runSender(queueS);
  await runReceiver(queueR);
  for (let round = 0; round < 10000 && !(sender.finished && receiver.finished); round++) {
    while (log.toReceiver.length) {
      await runReceiver(receiver.receive(log.toReceiver.shift()));
      if (receiver.state === 'receiving' || receiver.state === 'finishing') await runReceiver(receiver.chunksDurable(written));
    }
    while (log.toSender.length) runSender(sender.receive(log.toSender.shift()));
    let next;
    while ((next = sender.nextChunk())) {
      const [index, offset, length] = next;
      runSender(sender.sendChunk(index, payload.subarray(offset, offset + length)));
    }
  }
  return { sender, receiver, stored, log };
}

test('a whole transfer: 16 KiB frames, window respected, payload verified and DONE confirmed', async () => {
  const payload = new Uint8Array(300_000);
  for (let i = 0; i < payload.length; i += 65536) crypto.getRandomValues(payload.subarray(i, i + 65536));
  const { sender, receiver, stored, log } = await pair(payload);
  assert.equal(sender.state, 'completed');
  assert.equal(receiver.state, 'completed');
  assert.ok(equal(stored, payload));
  assert.equal(log.offers[0].chunkSize, 16384 - 26, 'chunks sized to the 16 KiB the page advertises');
  assert.deepEqual(log.offers[0].info, info);
});

test('a declined offer ends both sides with REJECT(declined), nothing sent', async () => {
  const { sender, receiver, log } = await pair(new Uint8Array(5000).fill(1), { decide: false });
  assert.equal(receiver.failure.code, CODE.DECLINED);
  assert.equal(sender.failure.code, CODE.DECLINED);
  assert.equal(sender.failure.byPeer, true);
  assert.equal(sender.unacked.length, 0);
  assert.equal(log.senderEnd.kind, 'failed');
});

test('a payload that does not hash to the offer fails with ERROR(checksum) on both sides', async () => {
  const { sender, receiver } = await pair(new Uint8Array(40000).fill(3), { tamper: true });
  assert.equal(receiver.failure.code, CODE.CHECKSUM);
  assert.equal(sender.failure.code, CODE.CHECKSUM);
});

test('a chunk out of order is a protocol error, answered with ERROR', async () => {
  const receiver = new Receiver();
  receiver.start();
  const tid = new Uint8Array(16).fill(9);
  receiver.receive(encode({ type: T.HELLO, transferId: new Uint8Array(16), role: 1, maxMessageSize: 16384, codecs: [1] }));
  receiver.receive(encode({ type: T.OFFER, transferId: tid, codec: 1, rawSize: 10, compressedSize: 5000,
    sha256: new Uint8Array(32), chunkSize: 1024, info }));
  receiver.accept();
  const actions = receiver.receive(encode({ type: T.CHUNK, transferId: tid, index: 1, payload: new Uint8Array(1024) }));
  assert.equal(actions[0].kind, 'send');
  const error = decode(actions[0].data, MAX_MESSAGE_SIZE);
  assert.equal(error.type, T.ERROR);
  assert.match(error.text, /out of order \(expected 0\)/);
  assert.equal(actions[1].kind, 'failed');
});

test('an offer over the page\'s size cap is refused as too large before any chunk', () => {
  const receiver = new Receiver({ maxRawSize: 1000 });
  receiver.start();
  receiver.receive(encode({ type: T.HELLO, transferId: new Uint8Array(16), role: 1, maxMessageSize: 16384, codecs: [1] }));
  const actions = receiver.receive(encode({ type: T.OFFER, transferId: new Uint8Array(16).fill(1), codec: 1,
    rawSize: 5000, compressedSize: 100, sha256: new Uint8Array(32), chunkSize: 1024, info }));
  assert.equal(decode(actions[0].data).code, CODE.TOO_LARGE);
  assert.equal(receiver.state, 'failed');
});
