// The pairing machine against the shared behaviour vectors (tests/vectors/pairing_machine.json, made by
// tests/pairing/vectors.py from p2pd/pairing/machine.py): same inputs and fixed randomness → the same messages,
// opened objects, states, failure causes and verification strings as the Python machine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fromHex } from '../src/bytes.js';
import { parseCode } from '../src/codes.js';
import { Pairing } from '../src/pairing.js';

const V = JSON.parse(readFileSync(new URL('../../tests/vectors/pairing_machine.json', import.meta.url)));

function machinesOf(trace) {
  return Object.fromEntries(Object.entries(trace.machines).map(([key, spec]) => [key,
    new Pairing(parseCode(spec.code), spec.role, { room: spec.room, sid: spec.sid ? fromHex(spec.sid) : null,
      scalar: fromHex(spec.scalar) })]));
}

async function outputOf(machine, input) {
  try {
    if (input.op === 'start') return { send: await machine.start(), state: machine.state };
    if (input.op === 'seal') return { sealed: await machine.seal(input.obj) };
  } catch (error) {
    if (error.name === 'P2pdError') throw error;
    return { raises: true };
  }
  const step = await machine.receive(input.data);
  return { send: step.send, delivered: step.delivered, paired: Boolean(step.paired),
    error: step.error ? (step.error.code ?? `no code (${step.error.kind})`) : null, state: machine.state,
    verification: machine.verification };
}

for (const trace of V.traces) {
  test(`pairing vector: ${trace.name}`, async () => {
    const machines = machinesOf(trace);
    for (const [index, step] of trace.steps.entries()) {
      const got = await outputOf(machines[step.machine], step.input);
      assert.deepEqual(got, step.output, `step ${index} (${step.machine} ${step.input.op})`);
    }
  });
}

test('the vectors cover every pairing failure', () => {
  const causes = new Set(V.traces.flatMap((t) => t.steps.map((s) => s.output.error)).filter((c) => c));
  assert.deepEqual([...causes].sort(), ['protocol', 'role_clash', 'tampered', 'wrong_code']);
});
