// The worker's hand-over (pieces.js, worker.js through offthread.js): a document split into pieces and put back
// together is the document JSON.parse made, whatever its shape (the page's copy without `records`); each piece holds at most BATCH array elements;
// unpack/read/pack give the same answers as blob.js does in one go, and a bad file is refused as before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeBlob, lz4Compress, readConversation } from '../src/blob.js';
import { pack, read, unpack } from '../src/offthread.js';
import { Assembly, BATCH, pieces } from '../src/pieces.js';

const message = (i) => ({ role: i % 2 ? 'ROLE_AGENT' : 'ROLE_USER', parts: [{ text: `m${i}`, mediaType: 'text/plain' }] });
const messages = (n) => Array.from({ length: n }, (_, i) => message(i));
const DOC = {
  format: 'p2pd.conversation', formatVersion: 1, contextId: 'c', title: 'T', counts: { messages: 1000 },
  messages: messages(1000), records: [1, 2, 3],
  subagents: [{ agentId: 'a', messages: messages(300) }, { agentId: 'b', messages: messages(3) },
    { agentId: 'c', messages: messages(70), nested: [{ messages: messages(200) }] }],
  toolResults: messages(65),
};

function roundTrip(doc) {
  const assembly = new Assembly();
  let count = 0;
  for (const piece of pieces(doc)) {
    if (piece[0] === 'push') assert.ok(piece[2].length <= BATCH, `a piece of ${piece[2].length}`);
    assembly.add(structuredClone(piece));
    count++;
  }
  return [assembly.doc, count];
}

test('a document in pieces comes back whole', () => {
  const [back, count] = roundTrip(DOC);
  assert.deepEqual(back, DOC);
  assert.ok(count > 1000 / BATCH, count);
});

test('other JSON values and small documents go in one piece', () => {
  for (const value of [null, 3, 'x', [1, 2], { a: [1, 2, 3] }]) assert.deepEqual(roundTrip(value), [value, 1]);
});

const bytesOf = (doc) => new TextEncoder().encode(JSON.stringify(doc));

test('unpack, read and pack answer as blob.js does', async () => {
  const raw = bytesOf(DOC);
  const payload = lz4Compress(raw);
  const unpacked = await unpack(payload, raw.length);
  const { records, ...shown } = DOC; // the page's copy leaves the source lines out; the bytes keep them
  assert.deepEqual(unpacked.doc, shown);
  const file = new Uint8Array(await unpacked.file.arrayBuffer()); // the received bytes, unchanged
  assert.deepEqual([file, unpacked.file.type, unpacked.rawSize], [raw, 'application/json', raw.length]);
  assert.deepEqual(records, JSON.parse(new TextDecoder().decode(file)).records);
  assert.deepEqual(unpacked.info, readConversation(raw).info);
  assert.deepEqual((await read(bytesOf(DOC).buffer)).doc, shown);
  const packed = await pack(bytesOf(DOC).buffer);
  const expected = await encodeBlob(raw);
  assert.deepEqual([packed.payload, packed.sha256, packed.rawSize, packed.messageCount],
    [expected.payload, expected.sha256, raw.length, 1000]);
});

test('a bad file or payload is refused with the same kind of error', async () => {
  await assert.rejects(read(new TextEncoder().encode('not json').buffer), (e) => e.kind === 'invalid' && /not JSON/.test(e.message));
  await assert.rejects(pack(new TextEncoder().encode('{"format":"x"}').buffer), (e) => e.kind === 'invalid');
  await assert.rejects(unpack(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]), 3), (e) => e.kind === 'invalid' && /LZ4/.test(e.message));
});
