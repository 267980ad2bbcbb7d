// LZ4 frames and blobs made by Python (tests/web/python_made.py, run here with the project's Python) decode
// byte for byte; corrupted, truncated or lying frames are refused; and what the page compresses is an LZ4
// frame the page itself reads back (Python reading it is tests/web/test_js_units.py).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { b64decode, equal } from '../src/bytes.js';
import { decodeBlob, encodeBlob, lz4Compress, lz4Decompress, readConversation } from '../src/blob.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const python = process.env.P2PD_PYTHON || (existsSync(`${root}.venv/bin/python`) ? `${root}.venv/bin/python` : 'python3');
const made = JSON.parse(execFileSync(python, ['-m', 'tests.web.python_made'], { cwd: root, maxBuffer: 64 << 20 }));
const b = (text) => b64decode(text, 1 << 30);

for (const f of made.frames) {
  test(`LZ4 frame made by Python: ${f.name}`, () => {
    const raw = b(f.raw);
    const out = lz4Decompress(b(f.frame), raw.length);
    assert.ok(equal(out, raw));
  });
}

test('a frame that lies about its size, is truncated, corrupted or followed by junk is refused', () => {
  const f = made.frames.find((x) => x.name.startsWith('text (p2pd'));
  const raw = b(f.raw);
  const frame = b(f.frame);
  assert.throws(() => lz4Decompress(frame, raw.length + 1), /offer said/);
  assert.throws(() => lz4Decompress(frame.subarray(0, frame.length - 9), raw.length), /truncated/);
  const junk = new Uint8Array(frame.length + 1);
  junk.set(frame);
  assert.throws(() => lz4Decompress(junk, raw.length), /trailing bytes/);
  const corrupt = frame.slice();
  corrupt[frame.length - 40] ^= 0x55; // inside the last block: content checksum (or the block) breaks
  assert.throws(() => lz4Decompress(corrupt, raw.length), /could not be decompressed/);
  assert.throws(() => lz4Decompress(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]), 3), /not an LZ4 frame/);
});

test('a blob made by Python decodes; the page makes the same header and a payload it reads back', async () => {
  const document = b(made.blob.document);
  assert.ok(equal(await decodeBlob(b(made.blob.blob)), document));
  const mine = await encodeBlob(document);
  // magic, version, codec, reserved and raw size agree with Python's header (the payloads may differ)
  assert.ok(equal(mine.blob.subarray(0, 20), b(made.blob.blob).subarray(0, 20)));
  assert.ok(equal(await decodeBlob(mine.blob), document));
  assert.ok(equal(lz4Decompress(lz4Compress(document), document.length), document));
  const bad = mine.blob.slice();
  bad[bad.length - 1] ^= 1;
  await assert.rejects(decodeBlob(bad), /Checksum mismatch/);
});

test('reading a picked file: a conversation gives its description; anything else a clear error', () => {
  const { info } = readConversation(b(made.blob.document));
  assert.deepEqual(info, { title: 'é ✓', platform: 'a2a', sessionId: '', messageCount: 0 });
  assert.throws(() => readConversation(new TextEncoder().encode('not json')), /not JSON/);
  assert.throws(() => readConversation(new TextEncoder().encode('{"format":"x"}')), /not a p2pd conversation/);
});
