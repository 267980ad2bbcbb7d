// The page's transfer machines against the reference's behaviour vectors (tests/vectors/transfer_traces.json,
// SPEC.md §11): each trace replayed on a fresh Sender or Receiver must return exactly the recorded actions and
// leave the machine in the recorded state after every step.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fromHex, hex } from '../src/bytes.js';
import { CODEC_NAMES, MAX_MESSAGE_SIZE, T, TYPE_NAMES, codeName, decode, encode } from '../src/frames.js';
import { ALLOWED, Receiver, Sender } from '../src/transfer.js';

const vectors = JSON.parse(readFileSync(new URL('../../tests/vectors/transfer_traces.json', import.meta.url)));
const CODEC_IDS = Object.fromEntries(Object.entries(CODEC_NAMES).map(([id, name]) => [name, Number(id)]));
const sha256hex = (bytes) => createHash('sha256').update(bytes).digest('hex');

// Byte i of every trace payload (tests/transfer/traces.py: payload_byte).
const span = (offset, length) => Uint8Array.from({ length }, (_, k) => ((offset + k) * 131 + 7) % 251);

function newMachine(machine, c) {
  if (machine === 'sender') {
    return new Sender({ transferId: fromHex(c.transfer_id), codec: CODEC_IDS[c.codec], codecs: c.codecs.map((n) => CODEC_IDS[n]),
      rawSize: c.raw_size, compressedSize: c.compressed_size, sha256: fromHex(c.sha256),
      info: { title: c.info.title, platform: c.info.platform, sessionId: c.info.session_id, messageCount: c.info.message_count },
      maxMessageSize: c.max_message_size, transportLimit: c.transport_limit, window: c.window });
  }
  return new Receiver({ maxMessageSize: c.max_message_size, maxRawSize: c.max_raw_size,
    codecs: c.codecs.map((n) => CODEC_IDS[n]), window: c.window });
}

function message(step) {
  if (!step.chunk) return fromHex(step.hex);
  const c = step.chunk;
  return encode({ type: T.CHUNK, transferId: fromHex(c.transfer_id), index: c.index, payload: span(c.offset, c.length) });
}

function apply(m, step) {
  switch (step.call) {
    case 'start': return m.start();
    case 'receive': return m.receive(message(step));
    case 'cancel': return m.cancel(step.reason);
    case 'fail': return m.fail(step.code, step.reason);
    case 'timeout': return m.timeout(step.seconds);
    case 'connection_lost': return m.connectionLost(step.reason);
    case 'cancel_unanswered': return m.cancelUnanswered();
    case 'next_chunk': return m.nextChunk();
    case 'send_chunk': return m.sendChunk(step.index, span(step.offset, step.length));
    case 'accept': return m.accept(step.have);
    case 'reject': return m.reject(step.reason, step.code);
    case 'chunks_durable': return m.chunksDurable(step.count);
    case 'verified': return m.verified(fromHex(step.digest));
    case 'finalized': return m.finalized();
    default: throw new Error(`unknown call ${step.call}`);
  }
}

function describe(a) {
  switch (a.kind) {
    case 'send': {
      const frame = decode(a.data, MAX_MESSAGE_SIZE);
      if (frame.type === T.CHUNK) {
        return { kind: 'send', type: 'CHUNK', index: frame.index, length: frame.payload.length, sha256: sha256hex(a.data) };
      }
      return { kind: 'send', type: TYPE_NAMES[frame.type], hex: hex(a.data) };
    }
    case 'progress': return { kind: 'progress', done: a.done, total: a.total };
    case 'failed': return { kind: 'failed', code: a.failure.code, code_name: codeName(a.failure.code),
      by_peer: a.failure.byPeer, reason: a.failure.reason };
    case 'offer': return { kind: 'offer', hex: hex(encode(a.offer)) };
    case 'write': return { kind: 'write', index: a.index, offset: a.offset, length: a.data.length, sha256: sha256hex(a.data) };
    case 'completed': case 'verify': case 'finalize': return { kind: a.kind };
    default: throw new Error(`unknown action ${a.kind}`);
  }
}

for (const trace of vectors.traces) {
  test(`${trace.machine} trace ${trace.name}: ${trace.meaning}`, () => {
    const m = newMachine(trace.machine, trace.config);
    trace.steps.forEach((step, n) => {
      const out = apply(m, step);
      const got = step.call === 'next_chunk' ? { result: out } : { actions: out.map(describe) };
      got.state = m.state;
      const expected = Object.fromEntries(['actions', 'result', 'state'].filter((k) => k in step).map((k) => [k, step[k]]));
      assert.deepEqual(got, expected, `step ${n}: ${step.call}`);
    });
    assert.equal(m.state, trace.end.state);
    if ('code' in trace.end) assert.deepEqual([m.failure.code, m.failure.byPeer], [trace.end.code, trace.end.by_peer]);
  });
}

test('the state tables name the same frames as the reference traces refuse', () => {
  for (const trace of vectors.traces) {
    const match = /^(sender|receiver)-(.+)-refuses-([A-Z]+)$/.exec(trace.name);
    if (!match) continue;
    const [, machine, state, type] = match;
    assert.equal(ALLOWED[machine][state].includes(T[type]), false, trace.name);
  }
  assert.deepEqual(ALLOWED.sender['await-done'].map((t) => TYPE_NAMES[t]).sort(), ['ACK', 'CANCEL', 'DONE', 'ERROR']);
});
