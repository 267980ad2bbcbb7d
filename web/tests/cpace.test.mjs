// CPace and the key schedule against tests/vectors/cpace_x25519.json: the draft's published X25519 vector at
// every printed step, p2pd's own cases, RFC 9380's Elligator2 map, RFC 7748's X25519, low-order shares, and
// p2pd's keys, confirmation tags, verification string and a sealed message made by Python.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fromHex, hex, utf8 } from '../src/bytes.js';
import { CPace, CPaceError, calculateGenerator, decodeUCoordinate, elligator2, encodeUCoordinate, generatorString,
  scalarMult, transcriptIr } from '../src/cpace.js';
import { Opener, Sealer, confirmationTag, deriveKeys, verificationString } from '../src/seal.js';
import { Pairing } from '../src/pairing.js';
import { parseCode } from '../src/codes.js';

const V = JSON.parse(readFileSync(new URL('../../tests/vectors/cpace_x25519.json', import.meta.url)));

async function runVector(c) {
  const [prs, ci, sid, ada, adb] = [c.PRS, c.CI, c.sid, c.ADa, c.ADb].map(fromHex);
  assert.equal(hex(generatorString(prs, ci, sid)), c.generator_string);
  assert.equal(hex(encodeUCoordinate(decodeUCoordinate(fromHex(c.hash_generator_string)))), c.u);
  assert.equal(hex(await calculateGenerator(prs, ci, sid)), c.g);
  const a = await CPace.create(prs, { role: 'initiator', ci, sid, ad: ada, scalar: fromHex(c.ya) });
  const b = await CPace.create(prs, { role: 'responder', ci, sid, ad: adb, scalar: fromHex(c.yb) });
  assert.equal(hex(a.share), c.Ya);
  assert.equal(hex(b.share), c.Yb);
  assert.equal(hex(scalarMult(fromHex(c.ya), b.share)), c.K);
  if (c.transcript_ir) assert.equal(hex(transcriptIr(a.share, ada, b.share, adb)), c.transcript_ir);
  const iskA = await a.finish(b.share, adb);
  const iskB = await b.finish(a.share, ada);
  assert.equal(hex(iskA), c.ISK_IR);
  assert.equal(hex(iskB), c.ISK_IR);
}

test("the draft's published X25519 test vector, every step", () => runVector(V.published));

for (const c of V.cases) test(`CPace case: ${c.name}`, () => runVector(c));

test('p2pd pairing case: CPace, keys, tags, verification string', async () => {
  const c = V.p2pd;
  await runVector(c);
  const keys = await deriveKeys(fromHex(c.ISK_IR), c.room);
  assert.equal(hex(keys.confirm.sender), c.confirm_key_sender);
  assert.equal(hex(keys.confirm.receiver), c.confirm_key_receiver);
  assert.equal(hex(keys.seal.sender), c.seal_key_sender);
  assert.equal(hex(keys.seal.receiver), c.seal_key_receiver);
  assert.equal(hex(keys.sas), c.sas_key);
  assert.equal(hex(await confirmationTag(keys, 'sender')), c.confirm_tag_sender);
  assert.equal(hex(await confirmationTag(keys, 'receiver')), c.confirm_tag_receiver);
  assert.equal(await verificationString(keys.sas), c.verification_string);
  const code = parseCode(c.code);
  assert.equal(hex(code.password), c.PRS);
});

test('a sealed message made by Python opens, and sealing the same object gives the same box', async () => {
  const c = V.p2pd;
  const example = c.sealed_example;
  const keys = await deriveKeys(fromHex(c.ISK_IR), c.room);
  const opener = await Opener.create(keys, c.room, 'receiver');
  assert.deepEqual(await opener.open(example.message), JSON.parse(example.plaintext_json));
  const sealer = await Sealer.create(keys, c.room, 'sender');
  assert.deepEqual(await sealer.seal(JSON.parse(example.plaintext_json)), example.message);
  // replayed, reordered or modified messages fail
  await assert.rejects(opener.open(example.message), /out of order or twice/);
  const other = await Opener.create(keys, c.room, 'receiver');
  const box = example.message.box;
  const flipped = (box[0] === 'A' ? 'B' : 'A') + box.slice(1);
  await assert.rejects(other.open({ ...example.message, box: flipped }), /integrity check/);
  const reflected = await Opener.create(keys, c.room, 'sender');
  await assert.rejects(reflected.open(example.message), /integrity check/);
});

test("RFC 9380 Elligator2 map values match the Python implementation's", () => {
  for (const { r, u } of V.elligator2) assert.equal(hex(encodeUCoordinate(elligator2(decodeUCoordinate(fromHex(r))))), u);
});

test('RFC 7748 X25519 vectors', () => {
  for (const v of V.x25519_rfc7748) assert.equal(hex(scalarMult(fromHex(v.scalar), fromHex(v.u))), v.out);
});

test('low-order shares are refused', async () => {
  const party = await CPace.create(utf8('pw'), { role: 'initiator', sid: new Uint8Array(16) });
  for (const share of V.invalid_shares) {
    assert.throws(() => scalarMult(fromHex(V.p2pd.ya), fromHex(share)), CPaceError);
  }
  await assert.rejects(party.finish(fromHex(V.invalid_shares[0])), CPaceError);
});

async function converse(senderCode, receiverCode) {
  const sender = new Pairing(parseCode(senderCode), 'sender', { room: '7' });
  const receiver = new Pairing(parseCode(receiverCode), 'receiver', { room: '7' });
  const first = await sender.start();
  const r1 = await receiver.receive(first[0]);
  const s1 = await sender.receive(r1.send[0]);
  const r2 = await receiver.receive(s1.send[0]);
  return { sender, receiver, s1, r2 };
}

test('two pairings with the same code pair, agree on the verification string and exchange sealed messages', async () => {
  const { sender, receiver, s1, r2 } = await converse('7-guitar-meadow', '7 Guitar  MEADOW');
  assert.ok(s1.paired && r2.paired);
  assert.equal(sender.verification, receiver.verification);
  const step = await receiver.receive(await sender.seal({ type: 'offer', sdp: 'v=0' }));
  assert.deepEqual(step.delivered, [{ type: 'offer', sdp: 'v=0' }]);
});

test('a wrong code fails on both sides as wrong code', async () => {
  const { s1, r2 } = await converse('7-guitar-meadow', '7-guitar-meadows');
  assert.equal(s1.error.kind, 'wrong-code');
  assert.equal(s1.send.length, 1, 'the sender still sends its confirmation');
  assert.equal(r2.error.kind, 'wrong-code');
});

test('codes parse like codes.py', () => {
  assert.equal(String(parseCode('  007-Amber-RIVER ')), '7-amber-river');
  assert.throws(() => parseCode('amber-river'), /starts with a number/);
  assert.throws(() => parseCode('7-amber'), /at least 2 words/);
  assert.throws(() => parseCode('7-amb3r!-x'), /letters and digits/);
});
