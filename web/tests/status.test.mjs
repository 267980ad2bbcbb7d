// The page's status words: units agree (percent, rate and time left all on the compressed payload), the import
// command is exact and shell-safe, and the secure-context check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatProgress, human, importCommand, secureContextProblem } from '../src/status.js';

test('human sizes use decimal units', () => {
  assert.equal(human(999), '999 B');
  assert.equal(human(1500), '1.5 KB');
  assert.equal(human(3_700_000), '3.7 MB');
});

test('progress: percent, rate and time left count the same bytes', () => {
  const text = formatProgress({ done: 2_000_000, total: 8_000_000, seconds: 2, since: 0, verb: 'received' });
  assert.equal(text, '25 % · 2.0 MB of 8.0 MB received (compressed, on the wire) · 1.0 MB/s · about 6 s left');
  const early = formatProgress({ done: 100, total: 1000, seconds: 0.05 });
  assert.match(early, /^10 % · 100 B of 1.0 KB received .* measuring the rate…$/);
  const done = formatProgress({ done: 1000, total: 1000, seconds: 1, since: 500, verb: 'acknowledged' });
  assert.equal(done, '100 % · 1.0 KB of 1.0 KB acknowledged (compressed, on the wire) · 500 B/s · done');
  const slow = formatProgress({ done: 1_000_000, total: 301_000_000, seconds: 1, since: 0 });
  assert.match(slow, /about 5 min left$/);
});

test('the import command names the file exactly and is safe to paste', () => {
  assert.equal(importCommand('4d5611e5-241a.a2a.json'), 'p2pd import 4d5611e5-241a.a2a.json');
  assert.equal(importCommand('-x.a2a.json'), 'p2pd import ./-x.a2a.json');
  assert.equal(importCommand("it's.json"), "p2pd import 'it'\\''s.json'");
});

test('secure context: WebCrypto needed', () => {
  assert.equal(secureContextProblem({ isSecureContext: true, crypto: { subtle: {} } }), null);
  assert.match(secureContextProblem({ isSecureContext: false, crypto: {} }), /https/);
  assert.match(secureContextProblem({ isSecureContext: true, crypto: {} }), /https/);
});
