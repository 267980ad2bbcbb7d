// For tests/web/test_codes.py: what web/src/codes.js does to every code point, as JSON on stdout —
// {"changed": {hex: normalized text} for each one its normalization changes, "first": [hex…] the code points a
// word may start with (letters, digits), "inner": [hex…] those it may hold after the first (also marks)}.
import { normalizeText } from '../../src/codes.js';

const changed = {};
const first = [];
const inner = [];
const FIRST = /^[\p{L}\p{N}]$/u;
const INNER = /^[\p{L}\p{M}\p{N}]$/u;
for (let cp = 0; cp <= 0x10ffff; cp += 1) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  const ch = String.fromCodePoint(cp);
  const normalized = normalizeText(ch);
  if (normalized !== ch) changed[cp.toString(16)] = normalized;
  if (FIRST.test(ch)) first.push(cp.toString(16));
  if (INNER.test(ch)) inner.push(cp.toString(16));
}
process.stdout.write(JSON.stringify({ unicode: process.versions.unicode, changed, first, inner }));
