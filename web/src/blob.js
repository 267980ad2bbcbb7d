// The blob (p2pd/blob.md) and its LZ4 frame payload, plus reading a picked .a2a.json. LZ4 is lz4js (wrapped as
// an ES module by tools/vendor.mjs); this module walks the frame itself (lz4js's frame reader skips checksums
// and misreads block checksums) and checks sizes and checksums, so a bad payload gives a clear error.

import { compress, decompressBlock, xxhash32 } from '../vendor/lz4js.js';
import { concat, equal, fromUtf8, sha256, utf8 } from './bytes.js';
import { P2pdError, invalid } from './errors.js';

const LZ4_MAGIC = 0x184d2204;
const BLOCK_MAX = { 4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20 };
export const BLOB_MAGIC = utf8('P2PDBLOB');
export const BLOB_HEADER_SIZE = 60;
export const CODEC_LZ4 = 1;

const codecError = (what) => new P2pdError('invalid', `The conversation could not be decompressed: ${what}.`);

/**
 * Decompress one LZ4 frame that must hold exactly `rawSize` bytes. The frame and its blocks are walked here
 * (bounds, block and content checksums, no trailing bytes); each compressed block is expanded by lz4js.
 */
export function lz4Decompress(src, rawSize) {
  const view = new DataView(src.buffer, src.byteOffset, src.length);
  if (src.length < 7 || view.getUint32(0, true) !== LZ4_MAGIC) throw codecError('not an LZ4 frame');
  const flg = src[4];
  const bd = src[5];
  if ((flg >> 6) !== 1) throw codecError('unsupported LZ4 frame version');
  if (flg & 0x03) throw codecError('LZ4 dictionaries and reserved flags are not supported');
  const blockMax = BLOCK_MAX[(bd >> 4) & 7];
  if (!blockMax || bd & 0x8f) throw codecError('invalid LZ4 block size');
  let at = 6;
  if (flg & 0x08) {
    if (src.length < at + 8) throw codecError('the frame is truncated');
    const size = view.getBigUint64(at, true);
    if (size !== BigInt(rawSize)) throw codecError(`the frame holds ${size} bytes, the offer said ${rawSize}`);
    at += 8;
  }
  if (src.length < at + 1) throw codecError('the frame is truncated');
  if (((xxhash32(0, src, 4, at - 4) >>> 8) & 0xff) !== src[at]) throw codecError('LZ4 header checksum mismatch');
  at += 1;
  const dst = new Uint8Array(rawSize + 1); // a spare byte: filling it means the data expands past rawSize
  let d = 0;
  for (;;) {
    if (src.length < at + 4) throw codecError('the frame is truncated');
    const word = view.getUint32(at, true);
    at += 4;
    if (word === 0) break;
    const size = word & 0x7fffffff;
    if (size > blockMax) throw codecError('an LZ4 block is larger than the frame allows');
    if (at + size + (flg & 0x10 ? 4 : 0) > src.length) throw codecError('the frame is truncated');
    if (word & 0x80000000) {
      if (d + size > rawSize) throw codecError(`it expands past the ${rawSize} bytes the offer said`);
      dst.set(src.subarray(at, at + size), d);
      d += size;
    } else {
      try {
        d = decompressBlock(src, dst, at, size, d);
      } catch (error) {
        throw codecError(error.message);
      }
      if (!(d <= rawSize)) throw codecError(`it expands past the ${rawSize} bytes the offer said`);
    }
    if (flg & 0x10) {
      if ((xxhash32(0, src, at, size) >>> 0) !== view.getUint32(at + size, true)) throw codecError('LZ4 block checksum mismatch');
      at += 4;
    }
    at += size;
  }
  if (d !== rawSize) throw codecError(`it expands to ${d} bytes, the offer said ${rawSize}`);
  const out = dst.subarray(0, rawSize);
  if (flg & 0x04) {
    if (src.length < at + 4) throw codecError('the frame is truncated');
    if ((xxhash32(0, out, 0, out.length) >>> 0) !== view.getUint32(at, true)) throw codecError('LZ4 content checksum mismatch');
    at += 4;
  }
  if (at !== src.length) throw codecError('trailing bytes after the LZ4 frame');
  return out;
}

export function lz4Compress(raw) {
  return Uint8Array.from(compress(raw));
}

/** A complete blob (60-byte header + LZ4 payload) for a JSON document, and its parts. */
export async function encodeBlob(documentBytes) {
  const payload = lz4Compress(documentBytes);
  const digest = await sha256(payload);
  const header = new Uint8Array(BLOB_HEADER_SIZE);
  const view = new DataView(header.buffer);
  header.set(BLOB_MAGIC, 0);
  header[8] = 1;
  header[9] = CODEC_LZ4;
  view.setBigUint64(12, BigInt(documentBytes.length));
  view.setBigUint64(20, BigInt(payload.length));
  header.set(digest, 28);
  return { blob: concat(header, payload), payload, sha256: digest, rawSize: documentBytes.length };
}

/** Check a blob (header, length, SHA-256) and give back the JSON document bytes. */
export async function decodeBlob(blob, maxRawSize = 512 * 1024 * 1024) {
  if (blob.length < BLOB_HEADER_SIZE || !equal(blob.subarray(0, 8), BLOB_MAGIC)) throw invalid('Not a p2pd blob.');
  const view = new DataView(blob.buffer, blob.byteOffset, blob.length);
  if (blob[8] !== 1) throw invalid(`Unsupported blob version ${blob[8]}.`);
  if (blob[9] !== CODEC_LZ4) throw invalid(`This page reads only lz4 blobs (codec id ${blob[9]}).`);
  const rawSize = Number(view.getBigUint64(12));
  const compSize = Number(view.getBigUint64(20));
  if (rawSize > maxRawSize) throw invalid('The blob is too large for this page.');
  const payload = blob.subarray(BLOB_HEADER_SIZE);
  if (payload.length !== compSize) throw invalid('The blob is truncated or has trailing bytes.');
  if (!equal(await sha256(payload), blob.subarray(28, 60))) throw new P2pdError('checksum', 'Checksum mismatch in the blob.');
  return lz4Decompress(payload, rawSize);
}

/**
 * Read a picked `.a2a.json`: the parsed document and the OFFER description. Throws a P2pdError('invalid') that
 * says what is wrong with the file.
 */
export function readConversation(bytes) {
  let doc;
  try {
    doc = JSON.parse(fromUtf8(bytes));
  } catch {
    throw invalid('This file is not JSON (pick a .a2a.json conversation exported by p2pd).');
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc) || doc.format !== 'p2pd.conversation') {
    throw invalid('This JSON is not a p2pd conversation document (its "format" is not "p2pd.conversation").');
  }
  if (!Number.isInteger(doc.formatVersion) || doc.formatVersion > 1) {
    throw invalid(`Unsupported conversation format version ${String(doc.formatVersion)}.`);
  }
  if (!Array.isArray(doc.messages)) throw invalid('The conversation document has no messages list.');
  const contextId = typeof doc.contextId === 'string' ? doc.contextId : '';
  const origin = doc.origin && typeof doc.origin === 'object' ? doc.origin : {};
  const count = Number.isInteger(doc.counts?.messages) ? doc.counts.messages : doc.messages.length;
  return {
    doc,
    info: { title: String(doc.title || contextId || 'conversation'), platform: String(origin.platform || 'a2a'),
      sessionId: String(origin.sessionId || contextId), messageCount: count },
  };
}
