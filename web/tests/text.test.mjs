// Peer text shown in the page: text.js's visible() against the vectors made by p2pd/support/text.py's visible().
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { visible } from '../src/text.js';
import { printable } from '../src/frames.js';

const vectors = JSON.parse(readFileSync(new URL('../../tests/vectors/visible_text.json', import.meta.url), 'utf8'));

test('visible() escapes as the Python side does', () => {
  assert.ok(vectors.cases.length > 20);
  for (const { text, limit, visible: expected } of vectors.cases) {
    assert.equal(visible(text, limit), expected, JSON.stringify(text));
    assert.equal(printable(text, limit), expected, 'frames.printable is the same rule');
  }
});
