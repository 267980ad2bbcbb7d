// Pairing codes `<nameplate>-<word>-<word>`, parsed exactly as p2pd/pairing/codes.py does (the rule is written
// there, above `_SEPARATORS`, and pinned for both by tests/vectors/codes.json):
//   NFKC → invisible characters dropped → full Unicode case folding → NFKC → split on runs of White_Space,
//   hyphen-minus, U+2010–U+2015 and U+2212 → ASCII-digit nameplate (leading zeros dropped) + words of letters
//   and digits (and, after the first character, combining marks). The nameplate is the (public) room; the words are the PAKE password.

import { invalid } from './errors.js';

const MAX_WORDS = 8;
const MAX_NAMEPLATE_DIGITS = 9;
const MAX_WORD_CHARS = 32;

const IGNORED = /[\u00ad\u200b\u200c\u200d\u2060\ufeff]/gu; // soft hyphen, zero-width characters, BOM
const SEPARATORS = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\-\u2010-\u2015\u2212]+/u;

// Full case folding (Unicode CaseFolding.txt, statuses C and F — Python's str.casefold) is the lowercase mapping
// except for the code points below (hex code point: hex code points of its folding), made from Python's tables,
// and Cherokee, which folds to its capital letters. tests/web/test_codes.py checks every code point against Python.
const FOLDS = ('b5:3bc;df:73 73;149:2bc 6e;17f:73;1f0:6a 30c;345:3b9;390:3b9 308 301;3b0:3c5 308 301;3c2:3c3;'
  + '3d0:3b2;3d1:3b8;3d5:3c6;3d6:3c0;3f0:3ba;3f1:3c1;3f5:3b5;587:565 582;1c80:432;1c81:434;1c82:43e;'
  + '1c83:441;1c84:442;1c85:442;1c86:44a;1c87:463;1c88:a64b;1e96:68 331;1e97:74 308;1e98:77 30a;'
  + '1e99:79 30a;1e9a:61 2be;1e9b:1e61;1e9e:73 73;1f50:3c5 313;1f52:3c5 313 300;1f54:3c5 313 301;'
  + '1f56:3c5 313 342;1f80:1f00 3b9;1f81:1f01 3b9;1f82:1f02 3b9;1f83:1f03 3b9;1f84:1f04 3b9;'
  + '1f85:1f05 3b9;1f86:1f06 3b9;1f87:1f07 3b9;1f88:1f00 3b9;1f89:1f01 3b9;1f8a:1f02 3b9;1f8b:1f03 3b9;'
  + '1f8c:1f04 3b9;1f8d:1f05 3b9;1f8e:1f06 3b9;1f8f:1f07 3b9;1f90:1f20 3b9;1f91:1f21 3b9;1f92:1f22 3b9;'
  + '1f93:1f23 3b9;1f94:1f24 3b9;1f95:1f25 3b9;1f96:1f26 3b9;1f97:1f27 3b9;1f98:1f20 3b9;1f99:1f21 3b9;'
  + '1f9a:1f22 3b9;1f9b:1f23 3b9;1f9c:1f24 3b9;1f9d:1f25 3b9;1f9e:1f26 3b9;1f9f:1f27 3b9;1fa0:1f60 3b9;'
  + '1fa1:1f61 3b9;1fa2:1f62 3b9;1fa3:1f63 3b9;1fa4:1f64 3b9;1fa5:1f65 3b9;1fa6:1f66 3b9;1fa7:1f67 3b9;'
  + '1fa8:1f60 3b9;1fa9:1f61 3b9;1faa:1f62 3b9;1fab:1f63 3b9;1fac:1f64 3b9;1fad:1f65 3b9;1fae:1f66 3b9;'
  + '1faf:1f67 3b9;1fb2:1f70 3b9;1fb3:3b1 3b9;1fb4:3ac 3b9;1fb6:3b1 342;1fb7:3b1 342 3b9;1fbc:3b1 3b9;'
  + '1fbe:3b9;1fc2:1f74 3b9;1fc3:3b7 3b9;1fc4:3ae 3b9;1fc6:3b7 342;1fc7:3b7 342 3b9;1fcc:3b7 3b9;'
  + '1fd2:3b9 308 300;1fd3:3b9 308 301;1fd6:3b9 342;1fd7:3b9 308 342;1fe2:3c5 308 300;1fe3:3c5 308 301;'
  + '1fe4:3c1 313;1fe6:3c5 342;1fe7:3c5 308 342;1ff2:1f7c 3b9;1ff3:3c9 3b9;1ff4:3ce 3b9;1ff6:3c9 342;'
  + '1ff7:3c9 342 3b9;1ffc:3c9 3b9;fb00:66 66;fb01:66 69;fb02:66 6c;fb03:66 66 69;fb04:66 66 6c;'
  + 'fb05:73 74;fb06:73 74;fb13:574 576;fb14:574 565;fb15:574 56b;fb16:57e 576;fb17:574 56d');
const FOLD = new Map(FOLDS.split(';').map((entry) => {
  const [from, to] = entry.split(':');
  return [parseInt(from, 16), String.fromCodePoint(...to.split(' ').map((h) => parseInt(h, 16)))];
}));

function foldCodePoint(ch) {
  const cp = ch.codePointAt(0);
  const special = FOLD.get(cp);
  if (special !== undefined) return special;
  if (cp >= 0x13a0 && cp <= 0x13f5) return ch; // Cherokee capitals fold to themselves
  if (cp >= 0x13f8 && cp <= 0x13fd) return String.fromCodePoint(cp - 8);
  if (cp >= 0xab70 && cp <= 0xabbf) return String.fromCodePoint(cp - 0xab70 + 0x13a0);
  return ch.toLowerCase(); // one code point at a time: no context (no final sigma), as folding is
}

/** Steps 1–4 of the rule: NFKC, invisible characters dropped, case folded, NFKC again. */
export function normalizeText(text) {
  const nfkc = String(text ?? '').normalize('NFKC').replace(IGNORED, '');
  return Array.from(nfkc, foldCodePoint).join('').normalize('NFKC');
}

// `reason` names the kind of problem as tests/vectors/codes.json and codes.py's details["reason"] do.
const refuse = (reason, message) => Object.assign(invalid(message), { reason });

export function parseCode(text) {
  const parts = normalizeText(text).split(SEPARATORS).filter(Boolean);
  if (!parts.length) throw refuse('empty', 'The pairing code is empty (expected something like 4-amber-river).');
  const [plate, ...words] = parts;
  if (!/^[0-9]+$/.test(plate)) {
    throw refuse('no-nameplate', 'A pairing code starts with a number (the nameplate), as in 4-amber-river.');
  }
  if (plate.replace(/^0+/, '').length > MAX_NAMEPLATE_DIGITS) {
    throw refuse('nameplate-too-long',
      `The number at the start of the code is longer than ${MAX_NAMEPLATE_DIGITS} digits.`);
  }
  if (words.length < 2) {
    throw refuse('too-few-words', `The pairing code needs at least 2 words after the number, it has ` +
      `${words.length} (expected e.g. 4-amber-river).`);
  }
  if (words.length > MAX_WORDS) {
    throw refuse('too-many-words', `The pairing code has ${words.length} words; at most ${MAX_WORDS}.`);
  }
  words.forEach((word, i) => {
    if ([...word].length > MAX_WORD_CHARS) {
      throw refuse('word-too-long', `Word ${i + 1} of the pairing code is longer than ${MAX_WORD_CHARS} characters.`);
    }
    if (!/^[\p{L}\p{N}][\p{L}\p{M}\p{N}]*$/u.test(word)) {
      throw refuse('not-letters', `Word ${i + 1} of the pairing code contains characters other than letters and ` +
        'digits.');
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
