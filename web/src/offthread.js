// The page's side of worker.js: each job gets its own module worker, ended when the job is. The payload or file
// is handed over (transferred, not copied) and a parsed document comes back in pieces, each taken in by its own
// task, so the page draws frames in between (no long task however big the conversation).

import { P2pdError } from './errors.js';
import { Assembly } from './pieces.js';

function job(message) {
  const assembly = new Assembly();
  return new Promise((resolve, reject) => {
    let worker = null;
    const answer = (reply) => {
      if (reply.kind === 'piece') {
        assembly.add(reply.piece);
        return;
      }
      worker?.terminate();
      globalThis.performance?.mark(`p2pd-${message.op}-done`); // the benchmark's split: worker and hand-over, then drawing
      if (reply.kind === 'error') reject(new P2pdError(reply.error.kind, reply.error.message));
      else resolve({ ...reply, doc: assembly.doc });
    };
    if (typeof Worker === 'undefined') { // node's tests: the same work in this thread
      import('./worker.js').then(({ work }) => work(message, answer)).catch(reject);
      return;
    }
    worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: `p2pd ${message.op}` });
    worker.onmessage = (event) => answer(event.data);
    worker.onerror = (event) => {
      event.preventDefault();
      answer({ kind: 'error', error: { kind: 'failed',
        message: `The page's worker could not run (${event.message || 'no reason given'}).` } });
    };
    worker.postMessage(message, [message.buffer]);
  });
}

/** Decompress a verified payload of `rawSize` bytes and parse it: {file (a Blob of the document), rawSize, doc, info}. */
export const unpack = (payload, rawSize) => job({ op: 'unpack', buffer: ownBuffer(payload), rawSize });

/** Parse a picked file's bytes (an ArrayBuffer, handed over): {rawSize, doc, info}. */
export const read = (buffer) => job({ op: 'read', buffer });

/** Check a file to send and pack it: {payload, sha256, rawSize, info, messageCount}. */
export const pack = (buffer) => job({ op: 'pack', buffer });

/** The bytes of `view` as an ArrayBuffer of their own (the view's whole buffer when it spans it). */
function ownBuffer(view) {
  if (view.byteOffset === 0 && view.byteLength === view.buffer.byteLength) return view.buffer;
  return view.slice().buffer;
}
