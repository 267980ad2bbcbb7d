// Frames against the reference vectors (tests/vectors/transfer_frames.json): every valid frame encodes to its
// hex exactly and decodes to its fields; every invalid one is refused with the reference decoder's reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fromHex, hex } from '../src/bytes.js';
import { CODEC_NAMES, MAX_MESSAGE_SIZE, ROLE, T, codeName, crc32, decode, encode, printable } from '../src/frames.js';

const vectors = JSON.parse(readFileSync(new URL('../../tests/vectors/transfer_frames.json', import.meta.url)));
const CODEC_IDS = Object.fromEntries(Object.entries(CODEC_NAMES).map(([id, name]) => [name, Number(id)]));

function frameFrom(f) {
  const frame = { type: T[f.type], transferId: fromHex(f.transfer_id) };
  switch (f.type) {
    case 'HELLO': return { ...frame, role: f.role === 'sender' ? ROLE.SENDER : ROLE.RECEIVER,
      maxMessageSize: f.max_message_size, codecs: f.codecs.map((c) => CODEC_IDS[c]) };
    case 'OFFER': return { ...frame, codec: CODEC_IDS[f.codec], rawSize: f.raw_size, compressedSize: f.compressed_size,
      sha256: fromHex(f.sha256), chunkSize: f.chunk_size, info: { title: f.title, platform: f.platform,
        sessionId: f.session_id, messageCount: f.message_count } };
    case 'ACCEPT': return { ...frame, window: f.window, have: f.have };
    case 'REJECT': case 'CANCEL': case 'ERROR': return { ...frame, code: f.code, text: f.text };
    case 'CHUNK': return { ...frame, index: f.index, payload: fromHex(f.payload) };
    case 'ACK': return { ...frame, upto: f.upto };
    case 'END': return { ...frame, nchunks: f.nchunks };
    case 'DONE': return { ...frame, sha256: fromHex(f.sha256) };
    default: throw new Error(f.type);
  }
}

const plain = (frame) => JSON.parse(JSON.stringify(frame, (k, v) => (v instanceof Uint8Array ? hex(v) : v)));

test('CRC-32 is zlib.crc32', () => {
  assert.equal(crc32(new TextEncoder().encode('123456789')), 0xcbf43926);
  assert.equal(crc32(new Uint8Array(0)), 0);
});

for (const v of vectors.valid) {
  test(`valid frame ${v.name} encodes byte for byte and decodes to its fields`, () => {
    const frame = frameFrom(v.fields);
    const bytes = encode(frame);
    assert.equal(hex(bytes), v.hex);
    assert.equal(bytes.byteOffset, 0);
    assert.equal(bytes.buffer.byteLength, bytes.length, 'the frame is its whole buffer');
    const decoded = decode(fromHex(v.hex), MAX_MESSAGE_SIZE);
    assert.deepEqual(plain(decoded), plain(frame));
    if (v.fields.code_name) assert.equal(codeName(decoded.code), v.fields.code_name);
  });
}

for (const v of vectors.invalid) {
  test(`invalid frame ${v.name} is refused: ${v.error}`, () => {
    assert.throws(() => decode(fromHex(v.hex), MAX_MESSAGE_SIZE), (error) => error.message.includes(v.error));
  });
}

test('a frame over the advertised limit is refused before anything else', () => {
  assert.throws(() => decode(new Uint8Array(16385)), /exceeds the 16384-byte message limit/);
  assert.throws(() => decode('text'), /text message/);
});

test('peer text is shown escaped, as the reference shows it (support/text.visible)', () => {
  assert.equal(printable('a\x1b[2Jb\r\nc'), 'a\\x1b[2Jb\\x0d\\x0ac');
  assert.equal(printable('left\u202eright\u200b'), 'left\\u202eright\\u200b');
  assert.equal(printable('caf\u00e9 \u00ad ok'), 'caf\u00e9 \u00ad ok');
  assert.equal(printable('x'.repeat(1000)).length, 300);
});
