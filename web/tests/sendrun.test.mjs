// The page's sending run (channel.js SendRun) when the person cancels after the last chunk: it waits for the
// receiver's answer (SPEC §6). A DONE crossing the CANCEL completes the send (the receiver had kept it); without
// one the cancel stands once CANCEL_ANSWER_WAIT_MS has passed. The channel and the receiver are played here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sha256 } from '../src/bytes.js';
import { SendRun } from '../src/channel.js';
import { CANCEL_ANSWER_WAIT_MS } from '../src/transfer.js';
import { CODE, ROLE, T, ZERO_ID, decode, encode } from '../src/frames.js';

class FakeChannel {
  constructor() {
    this.readyState = 'open';
    this.bufferedAmount = 0;
    this.sent = [];
  }

  send(data) {
    this.sent.push(decode(data, 1 << 20));
  }

  close() {
    this.readyState = 'closed';
  }

  addEventListener() {}
}

const fakePc = { connectionState: 'connected', addEventListener() {}, removeEventListener() {} };

async function sentEverything(payload) {
  const channel = new FakeChannel();
  const link = { channel, pc: fakePc, early: [], remoteMaxMessageSize: null };
  const run = new SendRun(link, { payload, rawSize: 5000, sha256: await sha256(payload),
    info: { title: 't', platform: 'claude-code', sessionId: 's', messageCount: 1 } });
  const done = run.start();
  const hello = encode({ type: T.HELLO, transferId: ZERO_ID, role: ROLE.RECEIVER, maxMessageSize: 16384, codecs: [1] });
  run.onMessage(hello);
  const offer = channel.sent.find((f) => f.type === T.OFFER);
  run.onMessage(encode({ type: T.ACCEPT, transferId: offer.transferId, window: 1 << 20, have: [] }));
  assert.equal(channel.sent.at(-1).type, T.END); // every chunk went: the receiver may be committing now
  return { run, done, channel, offer };
}

test('a cancel after the last chunk, crossed by the receiver\'s DONE: the send completes, and says so', async () => {
  const payload = new Uint8Array(40000).map((_, i) => i % 251);
  const { run, done, channel, offer } = await sentEverything(payload);
  run.cancel('pressed stop');
  assert.equal(channel.sent.at(-1).type, T.CANCEL);
  assert.equal(run.machine.state, 'cancelling');
  run.onMessage(encode({ type: T.DONE, transferId: offer.transferId, sha256: offer.sha256 }));
  const result = await done;
  assert.equal(result.bytesSent, payload.length);
  assert.equal(run.machine.cancelTooLate, true);
});

test('a cancel after the last chunk with no answer stands once the wait is over', async () => {
  const payload = new Uint8Array(20000).map((_, i) => i % 13);
  const { run, done } = await sentEverything(payload);
  const started = performance.now();
  run.cancel('pressed stop');
  await assert.rejects(done, (error) => error.kind === 'cancelled');
  const waited = performance.now() - started;
  assert.ok(waited >= CANCEL_ANSWER_WAIT_MS - 50 && waited < CANCEL_ANSWER_WAIT_MS + 1000, `waited ${waited} ms`);
  assert.equal(run.machine.failure.code, CODE.CANCELLED);
  assert.equal(run.machine.failure.byPeer, false);
});
