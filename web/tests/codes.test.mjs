// The page's code parsing against the shared vectors (tests/vectors/codes.json, made by
// tests/pairing/code_vectors.py from p2pd/pairing/codes.py): the same normalized code and PAKE password, or the
// same kind of refusal, for every input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { hex } from '../src/bytes.js';
import { parseCode } from '../src/codes.js';
import { checkTypos, suggestions } from '../src/typos.js';

const V = JSON.parse(readFileSync(new URL('../../tests/vectors/codes.json', import.meta.url)));

for (const [index, vector] of V.parse.entries()) {
  test(`code vector ${index}: ${JSON.stringify(vector.input).slice(0, 40)}`, () => {
    if (vector.error) {
      assert.throws(() => parseCode(vector.input), (error) => error.kind === 'invalid' && error.reason === vector.error);
    } else {
      const code = parseCode(vector.input);
      assert.equal(code.toString(), vector.code);
      assert.equal(hex(code.password), vector.password);
    }
  });
}

// The typo rule (typos.js, as p2pd/pairing/typos.py) against the same file's `typos` cases: the same suggestions,
// in the same order, and a refusal exactly when there are some.
for (const vector of V.typos) {
  test(`typo vector: ${vector.input}`, () => {
    const code = parseCode(vector.input);
    assert.deepEqual(suggestions(code), vector.suggestions);
    if (vector.suggestions.length) {
      assert.throws(() => checkTypos(code), (error) => error.kind === 'invalid' && error.reason === 'typo' &&
        error.message.includes(`did you mean ${vector.suggestions.join(' or ')}?`));
    } else {
      assert.equal(checkTypos(code), code);
    }
  });
}
