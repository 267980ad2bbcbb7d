// Pairing codes `<nameplate>-<word>-<word>`, parsed as p2pd/pairing/codes.py does: NFKC, case-folded, trimmed;
// runs of spaces and hyphens separate. The nameplate is the (public) room; the words are the PAKE password.

import { invalid } from './errors.js';

const MAX_WORDS = 8;
const MAX_NAMEPLATE_DIGITS = 9;
const MAX_WORD_CHARS = 32;

export function parseCode(text) {
  const normalized = String(text ?? '').normalize('NFKC').trim().toLowerCase();
  if (!normalized) throw invalid('The pairing code is empty (expected something like 4-amber-river).');
  const parts = normalized.split(/[\s-]+/u).filter(Boolean);
  const [plate, ...words] = parts;
  if (!plate || !/^[0-9]+$/.test(plate)) {
    throw invalid('A pairing code starts with a number (the nameplate), as in 4-amber-river.');
  }
  if (plate.replace(/^0+/, '').length > MAX_NAMEPLATE_DIGITS) {
    throw invalid(`The number at the start of the code is longer than ${MAX_NAMEPLATE_DIGITS} digits.`);
  }
  if (words.length < 2) {
    throw invalid(`The pairing code needs at least 2 words after the number, it has ${words.length} ` +
      '(expected e.g. 4-amber-river).');
  }
  if (words.length > MAX_WORDS) throw invalid(`The pairing code has ${words.length} words; at most ${MAX_WORDS}.`);
  words.forEach((word, i) => {
    if ([...word].length > MAX_WORD_CHARS) throw invalid(`Word ${i + 1} of the pairing code is too long.`);
    if (!/^[\p{L}\p{N}]+$/u.test(word)) {
      throw invalid(`Word ${i + 1} of the pairing code contains characters other than letters and digits.`);
    }
  });
  const nameplate = String(BigInt(plate));
  return { nameplate, words, password: new TextEncoder().encode(words.join('-')),
    toString: () => [nameplate, ...words].join('-') };
}

/** The code carried in a page link's fragment (`#7-amber-river`), or null. */
export function codeFromFragment(hash) {
  const text = decodeURIComponent(String(hash || '').replace(/^#/, ''));
  if (!text) return null;
  try {
    return parseCode(text);
  } catch {
    return null;
  }
}

/**
 * A fresh code for the nameplate the server allocated: `words` words drawn uniformly from the project's list
 * (1024 words: 10 random bits each, from crypto.getRandomValues), as p2pd/pairing/codes.py's generate_code.
 */
export function generateCode(nameplate, wordlist, words = 2) {
  if (wordlist.length !== 1024) throw new Error('the word list must hold 1024 words');
  const random = crypto.getRandomValues(new Uint16Array(words));
  return parseCode([String(nameplate), ...[...random].map((r) => wordlist[r & 1023])].join('-'));
}
