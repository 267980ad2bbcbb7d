// The page's resume store, the browser twin of p2pd/transfer/partial.py: what a receive had made durable is kept
// in IndexedDB, keyed by the payload's SHA-256, so a reload or a dropped connection does not start from zero.
// A later OFFER with the same SHA-256 and compressed size reuses it: the stored *byte* ranges become whole chunks
// of the new OFFER's chunk size (a chunk only partly held is sent again) and go into ACCEPT (SPEC.md §7).
//
// Layout: database `p2pd-partials`, store `partials` (sha256 hex → {sha, compressedSize, ranges: [[start, end)…]
// of payload bytes, updated}) and store `blocks` ([sha256 hex, offset] → {data}). A batch of chunks is written
// with its new ranges in one transaction; the page acknowledges (ACK) only once that transaction completed.
// Partials untouched for a week are swept when the store opens; success and a checksum failure remove theirs.

import { hex } from './bytes.js';

const DB_NAME = 'p2pd-partials';
const MAX_AGE_MS = 7 * 24 * 3600 * 1000;
export const MAX_RANGES = 1024; // ACCEPT holds at most this many ranges

const done = (request) => new Promise((resolve, reject) => {
  request.onsuccess = () => resolve(request.result);
  request.onerror = () => reject(request.error);
});

const committed = (tx) => new Promise((resolve, reject) => {
  tx.oncomplete = () => resolve();
  tx.onerror = () => reject(tx.error);
  tx.onabort = () => reject(tx.error ?? new Error('transaction aborted'));
});

function openDb(indexedDB) {
  const request = indexedDB.open(DB_NAME, 1);
  request.onupgradeneeded = () => {
    request.result.createObjectStore('partials', { keyPath: 'sha' });
    request.result.createObjectStore('blocks');
  };
  return done(request);
}

const blockRange = (sha) => IDBKeyRange.bound([sha, 0], [sha, Number.MAX_SAFE_INTEGER]);

/** `ranges` (sorted, disjoint, not touching) with [start, end) added. */
export function addRange(ranges, start, end) {
  const out = [];
  let [a, b] = [start, end];
  for (const [s, e] of ranges) {
    if (e < a || s > b) out.push([s, e]);
    else [a, b] = [Math.min(a, s), Math.max(b, e)];
  }
  out.push([a, b]);
  return out.sort((x, y) => x[0] - y[0]);
}

/** Byte ranges → the whole chunks of `chunkSize` they hold, as ACCEPT's [start, end) chunk ranges. */
export function chunkRanges(byteRanges, chunkSize, compressedSize) {
  const nchunks = Math.ceil(compressedSize / chunkSize);
  const out = [];
  for (const [start, end] of byteRanges) {
    const first = Math.ceil(start / chunkSize);
    const last = end >= compressedSize ? nchunks : Math.floor(end / chunkSize);
    if (last > first) out.push([first, last]);
  }
  return out.slice(0, MAX_RANGES);
}

/** One payload's partial: open with `PartialStore.open(offer)`; null where the browser has no IndexedDB. */
export class PartialStore {
  static async open(offer, { indexedDB = globalThis.indexedDB, now = Date.now() } = {}) {
    if (!indexedDB) return null;
    let db;
    try {
      db = await openDb(indexedDB);
    } catch {
      return null; // storage refused (private window, quota): receive without resume
    }
    const sha = hex(offer.sha256);
    const store = new PartialStore(db, sha, offer.compressedSize);
    await store.#sweep(now);
    const tx = db.transaction('partials', 'readonly');
    const record = await done(tx.objectStore('partials').get(sha));
    if (record && record.compressedSize === offer.compressedSize && Array.isArray(record.ranges)) {
      store.ranges = record.ranges;
    }
    return store;
  }

  constructor(db, sha, compressedSize) {
    this.db = db;
    this.sha = sha;
    this.compressedSize = compressedSize;
    this.ranges = [];
  }

  /** How many payload bytes are held. */
  get heldBytes() {
    return this.ranges.reduce((sum, [a, b]) => sum + b - a, 0);
  }

  /** ACCEPT's held chunk ranges for an OFFER of `chunkSize`. */
  heldChunks(chunkSize) {
    return chunkRanges(this.ranges, chunkSize, this.compressedSize);
  }

  /** Copy what is held into `payload` (the whole payload's buffer). */
  async load(payload) {
    const tx = this.db.transaction('blocks', 'readonly');
    const store = tx.objectStore('blocks');
    const [keys, values] = await Promise.all([done(store.getAllKeys(blockRange(this.sha))),
      done(store.getAll(blockRange(this.sha)))]);
    keys.forEach(([, offset], i) => {
      const data = values[i];
      if (offset + data.length <= payload.length) payload.set(data, offset);
    });
  }

  /** Store `writes` ([offset, bytes] in any order) and their ranges at once; resolves once durable. */
  async write(writes) {
    if (!writes.length) return;
    const sorted = [...writes].sort((x, y) => x[0] - y[0]);
    const blocks = []; // contiguous writes joined into one block
    for (const [offset, data] of sorted) {
      const last = blocks[blocks.length - 1];
      if (last && last.end === offset) {
        last.parts.push(data);
        last.end += data.length;
      } else {
        blocks.push({ offset, end: offset + data.length, parts: [data] });
      }
    }
    let ranges = this.ranges;
    const tx = this.db.transaction(['partials', 'blocks'], 'readwrite');
    for (const block of blocks) {
      const data = new Uint8Array(block.end - block.offset);
      let at = 0;
      for (const part of block.parts) {
        data.set(part, at);
        at += part.length;
      }
      tx.objectStore('blocks').put(data, [this.sha, block.offset]);
      ranges = addRange(ranges, block.offset, block.end);
    }
    tx.objectStore('partials').put({ sha: this.sha, compressedSize: this.compressedSize, ranges, updated: Date.now() });
    await committed(tx);
    this.ranges = ranges;
  }

  /** Forget this payload's partial (after success, or a checksum failure: it is known bad). */
  async remove() {
    await PartialStore.#removeSha(this.db, this.sha);
    this.ranges = [];
  }

  static async #removeSha(db, sha) {
    const tx = db.transaction(['partials', 'blocks'], 'readwrite');
    tx.objectStore('partials').delete(sha);
    tx.objectStore('blocks').delete(blockRange(sha));
    await committed(tx);
  }

  async #sweep(now) {
    const tx = this.db.transaction('partials', 'readonly');
    const records = await done(tx.objectStore('partials').getAll());
    for (const record of records) {
      if (!(now - Number(record.updated) < MAX_AGE_MS)) await PartialStore.#removeSha(this.db, record.sha);
    }
  }

  close() {
    this.db.close();
  }
}
