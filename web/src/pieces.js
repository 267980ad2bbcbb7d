// A parsed conversation document handed from the worker to the page in pieces, so that no single message
// between them costs the page more than a few milliseconds to take in (structured clone is paid by the side that
// receives, per object): the document's top level first, its long arrays (messages, records, a subagent's own
// messages …) after it in batches. `pieces(doc)` yields them in the worker; `Assembly` puts them back together
// in the page, one piece per task, and ends with the same document JSON.parse made.
//
// Pieces: ['root', object]  — the document with every heavy array emptied;
//         ['push', path, items] — items appended to the array at `path` (keys from the root), in order.
// An element that itself holds heavy arrays (a subagent with thousands of messages) goes as its emptied copy,
// then its arrays as pieces of their own.

export const BATCH = 128; // array elements per piece
const HEAVY = 64; // an array longer than this is sent in pieces

const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Whether `value` (an array) is sent in pieces: long, or holding an element that is. */
function heavy(value) {
  return Array.isArray(value) && (value.length > HEAVY || value.some((item) => isObject(item) && hasHeavy(item)));
}

function hasHeavy(object) {
  return Object.values(object).some(heavy);
}

/** `object` with its heavy arrays emptied, and those arrays as [key, array]. */
function split(object) {
  const copy = { ...object };
  const arrays = [];
  for (const [key, value] of Object.entries(object)) {
    if (heavy(value)) {
      copy[key] = [];
      arrays.push([key, value]);
    }
  }
  return { copy, arrays };
}

function* arrayPieces(path, array) {
  let batch = [];
  for (const [i, item] of array.entries()) {
    if (isObject(item) && hasHeavy(item)) {
      const { copy, arrays } = split(item);
      batch.push(copy);
      yield ['push', path, batch];
      batch = [];
      for (const [key, inner] of arrays) yield* arrayPieces([...path, i, key], inner);
    } else {
      batch.push(item);
      if (batch.length >= BATCH) {
        yield ['push', path, batch];
        batch = [];
      }
    }
  }
  if (batch.length) yield ['push', path, batch];
}

/** The pieces of a parsed document (any JSON value; only a top-level object is split). */
export function* pieces(doc) {
  if (!isObject(doc)) {
    yield ['root', doc];
    return;
  }
  const { copy, arrays } = split(doc);
  yield ['root', copy];
  for (const [key, array] of arrays) yield* arrayPieces([key], array);
}

/** Puts pieces back together: `add(piece)` in order, then `doc` is the document. */
export class Assembly {
  constructor() {
    this.doc = undefined;
  }

  add([kind, ...rest]) {
    if (kind === 'root') {
      [this.doc] = rest;
      return;
    }
    const [path, items] = rest;
    let target = this.doc;
    for (const key of path) target = target[key];
    for (const item of items) target.push(item);
  }
}
