// The page's worker (a module worker from this origin, so the page's CSP holds): the heavy steps of a big
// conversation run here, off the page's main thread, so the page keeps drawing frames while they run —
//   unpack: LZ4-decompress a verified payload, then parse and check the document;
//   read:   parse and check a picked file;
//   pack:   check a file to send and make its LZ4 payload and SHA-256.
// A parsed document goes back in pieces (pieces.js), without its `records` (the source lines a document may keep
// for exact round trips: the page never shows them, and what it saves is the bytes it received). Without Worker support (node's tests) offthread.js calls
// `work` in the same thread.

import { encodeBlob, lz4Decompress, readConversation } from './blob.js';
import { pieces } from './pieces.js';

/** Do one job; `post(message, transfer)` says what came of it: pieces, then 'done' (or 'error'). */
export async function work({ op, buffer, rawSize }, post) {
  try {
    const bytes = new Uint8Array(buffer);
    if (op === 'pack') {
      const { doc, info } = readConversation(bytes);
      const packed = await encodeBlob(bytes);
      post({ kind: 'done', info, messageCount: doc.messages.length, rawSize: bytes.length,
        payload: packed.payload, sha256: packed.sha256 }, [packed.payload.buffer]);
      return;
    }
    const raw = op === 'unpack' ? lz4Decompress(bytes, rawSize) : bytes;
    const { doc, info } = readConversation(raw);
    delete doc.records; // the source lines kept for exact round trips: never shown, and the download is `raw`
    for (const piece of pieces(doc)) post({ kind: 'piece', piece });
    // a received document goes back as a Blob (to download): copied here, not on the page's thread
    const file = op === 'unpack' ? new Blob([raw], { type: 'application/json' }) : null;
    post({ kind: 'done', info, rawSize: raw.length, file });
  } catch (error) {
    post({ kind: 'error', error: { kind: error?.kind ?? 'failed', message: String(error?.message ?? error) } });
  }
}

if (typeof WorkerGlobalScope !== 'undefined' && globalThis instanceof WorkerGlobalScope) {
  globalThis.onmessage = (event) => work(event.data, (message, transfer = []) => globalThis.postMessage(message, transfer));
}
