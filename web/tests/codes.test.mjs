// The page's code parsing against the shared vectors (tests/vectors/codes.json, made by
// tests/pairing/code_vectors.py from p2pd/pairing/codes.py): the same normalized code and PAKE password, or the
// same kind of refusal, for every input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { hex } from '../src/bytes.js';
import { parseCode } from '../src/codes.js';

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
