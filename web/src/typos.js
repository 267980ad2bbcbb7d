// Typos in a typed code, caught before anything is sent: the rule of p2pd/pairing/typos.py (its docstring says
// why), pinned for both by tests/vectors/codes.json's `typos` cases. No two words of the list are one edit apart,
// so a word outside it one edit (a letter added, dropped or changed, two neighbours swapped) from a list word is
// most likely that word mistyped. A code is refused when every word is in the list or one edit from it and not
// all are in it; a word far from every list word marks a hand-chosen code, used as typed.

import { P2pdError } from './errors.js';
import { WORDS } from './wordlist.js';

export const MAX_SUGGESTIONS = 3;
const KNOWN = new Set(WORDS);
const LETTERS = 'abcdefghijklmnopqrstuvwxyz'; // the list's words are lowercase ASCII

/** The list words one edit from `word` (none for a word of the list itself), in list order. */
export function nearWords(word) {
  if (KNOWN.has(word)) return [];
  const chars = [...word];
  const edits = new Set();
  for (let i = 0; i <= chars.length; i++) {
    const head = chars.slice(0, i).join('');
    const tail = chars.slice(i);
    const rest = tail.slice(1).join('');
    if (tail.length) {
      edits.add(head + rest); // a letter dropped
      if (tail.length > 1) edits.add(head + tail[1] + tail[0] + tail.slice(2).join('')); // neighbours swapped
    }
    for (const letter of LETTERS) {
      edits.add(head + letter + tail.join('')); // a letter added
      if (tail.length) edits.add(head + letter + rest); // a letter changed
    }
  }
  return WORDS.filter((w) => edits.has(w));
}

/**
 * What `code` (parsed by codes.js) probably meant when it looks like a made code mistyped: each word outside the
 * list replaced by its near list words, at most MAX_SUGGESTIONS codes as text. Empty: use the code as typed.
 */
export function suggestions(code) {
  const options = code.words.map((word) => (KNOWN.has(word) ? [word] : nearWords(word)));
  if (options.every((o, i) => o.length === 1 && o[0] === code.words[i])) return []; // all list words
  if (!options.every((o) => o.length)) return []; // a word far from every list word: hand-chosen
  const out = [];
  const walk = (i, chosen) => {
    if (out.length >= MAX_SUGGESTIONS) return;
    if (i === options.length) {
      out.push([code.nameplate, ...chosen].join('-'));
      return;
    }
    for (const word of options[i]) walk(i + 1, [...chosen, word]);
  };
  walk(0, []);
  return out;
}

/** `code` when no word looks mistyped; else throws a P2pdError('invalid', reason 'typo'): "did you mean …?". */
export function checkTypos(code) {
  const meant = suggestions(code);
  if (!meant.length) return code;
  const typos = code.words.filter((w) => nearWords(w).length);
  const said = typos.map((w) => `“${w}”`).join(', ');
  const verb = typos.length > 1 ? 'are each' : 'is';
  const error = new P2pdError('invalid',
    `${said} ${verb} one letter from a word of p2pd's list: did you mean ${meant.join(' or ')}?`);
  throw Object.assign(error, { reason: 'typo', suggestions: meant });
}
