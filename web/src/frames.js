// Transfer protocol frames, version 1 (p2pd/transfer/SPEC.md) — the browser twin of p2pd/transfer/frames.py.
// One frame = one binary data-channel message: version u8, type u8, transfer id 16 bytes, body, CRC-32 (IEEE,
// as zlib.crc32) of every byte before it. Integers are big-endian. decode() is strict and throws FrameError
// with the same reasons as the reference decoder.

import { equal, fromUtf8, utf8 } from './bytes.js';
import { visible } from './text.js';

export const PROTOCOL_VERSION = 1;
export const BASE_MESSAGE_SIZE = 16 * 1024;
export const MAX_MESSAGE_SIZE = 64 * 1024;
export const HEADER_SIZE = 18;
export const CRC_SIZE = 4;
export const MIN_FRAME_SIZE = HEADER_SIZE + CRC_SIZE;
export const CHUNK_OVERHEAD = HEADER_SIZE + 4 + CRC_SIZE;
export const MIN_CHUNK_SIZE = 1024;
export const MAX_CHUNKS = 0xffffffff;
export const MAX_INFO_SIZE = 4096;
export const MAX_TEXT_SIZE = 1024;
export const MAX_RANGES = 1024;
export const MIN_WINDOW = 64 * 1024;
export const MAX_WINDOW = 64 * 1024 * 1024;
export const ZERO_ID = new Uint8Array(16);
export const LZ4 = 1;
export const CODEC_NAMES = { 1: 'lz4', 2: 'zstd' };

export const T = { HELLO: 1, OFFER: 2, ACCEPT: 3, REJECT: 4, CHUNK: 5, ACK: 6, END: 7, DONE: 8, CANCEL: 9, ERROR: 10 };
export const TYPE_NAMES = Object.fromEntries(Object.entries(T).map(([k, v]) => [v, k]));
export const ROLE = { SENDER: 1, RECEIVER: 2 };
export const CODE = { DECLINED: 1, TOO_LARGE: 2, UNSUPPORTED_CODEC: 3, BUSY: 4, CANCELLED: 10, PROTOCOL: 20,
  CHECKSUM: 21, TIMEOUT: 22, IO: 23, INTERNAL: 24, INVALID: 25,
  PEER_GONE: 30 };
const CODE_NAMES = Object.fromEntries(Object.entries(CODE).map(([k, v]) => [v, k.toLowerCase()]));
export const codeName = (code) => CODE_NAMES[code] ?? `code ${code}`;

export class FrameError extends Error {}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (IEEE 802.3), as zlib.crc32; `crc` continues a previous value. */
export function crc32(bytes, crc = 0) {
  let c = (crc ^ 0xffffffff) >>> 0;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/u;

/** A peer-supplied string made safe to show, as the reference's visible(): escaped (\x1b, \u202e), length capped. */
export const printable = (text, limit = 300) => visible(text, limit);

const singleLine = (text) => String(text).replace(new RegExp(CONTROL.source, 'gu'), ' ').split(/\s+/u)
  .filter(Boolean).join(' ');

/** The OFFER's description, normalized as senders must (one line, capped). */
export function normalizedInfo({ title, platform, sessionId, messageCount }) {
  let t = singleLine(title);
  if (t.length > 500) t = `${t.slice(0, 499)}…`;
  return { title: t, platform: singleLine(platform).slice(0, 64), sessionId: singleLine(sessionId).slice(0, 256),
    messageCount: Math.max(0, Math.min(Math.trunc(Number(messageCount) || 0), 0x7fffffff)) };
}

function infoJson(info) {
  return utf8(JSON.stringify({ title: info.title, platform: info.platform, session_id: info.sessionId,
    message_count: info.messageCount }));
}

function parseInfo(bytes) {
  let obj;
  let text;
  try {
    text = fromUtf8(bytes);
  } catch {
    throw new FrameError('OFFER description is not valid UTF-8');
  }
  try {
    obj = JSON.parse(text);
  } catch (error) {
    throw new FrameError(`OFFER description is not valid JSON: ${error.message}`);
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    throw new FrameError('OFFER description is not a JSON object');
  }
  for (const key of ['title', 'platform', 'session_id']) {
    if (typeof obj[key] !== 'string') throw new FrameError(`OFFER description: '${key}' is missing or not a string`);
    if (CONTROL.test(obj[key])) throw new FrameError(`OFFER description: '${key}' contains control characters`);
  }
  const count = obj.message_count;
  if (!Number.isInteger(count) || count < 0 || count > 0x7fffffff) {
    throw new FrameError("OFFER description: 'message_count' is missing or not an integer in range");
  }
  return { title: obj.title, platform: obj.platform, sessionId: obj.session_id, messageCount: count };
}

export const nchunksOf = (offer) => Math.ceil(offer.compressedSize / offer.chunkSize);

function body(frame) {
  switch (frame.type) {
    case T.HELLO: {
      const b = new Uint8Array(6 + frame.codecs.length);
      const v = new DataView(b.buffer);
      v.setUint32(0, frame.maxMessageSize);
      b[4] = frame.role;
      b[5] = frame.codecs.length;
      b.set(frame.codecs, 6);
      return b;
    }
    case T.OFFER: {
      const info = infoJson(frame.info);
      const b = new Uint8Array(55 + info.length); // ">BQQ32sIH" (55 bytes), then the description
      const v = new DataView(b.buffer);
      b[0] = frame.codec;
      v.setBigUint64(1, BigInt(frame.rawSize));
      v.setBigUint64(9, BigInt(frame.compressedSize));
      b.set(frame.sha256, 17);
      v.setUint32(49, frame.chunkSize);
      v.setUint16(53, info.length);
      b.set(info, 55);
      return b;
    }
    case T.ACCEPT: {
      const b = new Uint8Array(6 + 8 * frame.have.length);
      const v = new DataView(b.buffer);
      v.setUint32(0, frame.window);
      v.setUint16(4, frame.have.length);
      frame.have.forEach(([a, z], i) => {
        v.setUint32(6 + 8 * i, a);
        v.setUint32(10 + 8 * i, z);
      });
      return b;
    }
    case T.REJECT:
    case T.CANCEL:
    case T.ERROR: {
      const text = utf8(frame.text);
      const b = new Uint8Array(2 + text.length);
      new DataView(b.buffer).setUint16(0, frame.code);
      b.set(text, 2);
      return b;
    }
    case T.CHUNK: {
      const b = new Uint8Array(4 + frame.payload.length);
      new DataView(b.buffer).setUint32(0, frame.index);
      b.set(frame.payload, 4);
      return b;
    }
    case T.ACK:
    case T.END: {
      const b = new Uint8Array(4);
      new DataView(b.buffer).setUint32(0, frame.type === T.ACK ? frame.upto : frame.nchunks);
      return b;
    }
    case T.DONE:
      return Uint8Array.from(frame.sha256);
    default:
      throw new FrameError(`unknown frame type ${frame.type}`);
  }
}

/** The bytes of one frame, built in one Uint8Array whose whole buffer is the frame (send exactly this). */
export function encode(frame) {
  check(frame);
  const b = body(frame);
  const out = new Uint8Array(HEADER_SIZE + b.length + CRC_SIZE);
  out[0] = PROTOCOL_VERSION;
  out[1] = frame.type;
  out.set(frame.transferId, 2);
  out.set(b, HEADER_SIZE);
  const crc = crc32(out.subarray(0, out.length - CRC_SIZE));
  new DataView(out.buffer).setUint32(out.length - CRC_SIZE, crc);
  return out;
}

/** Parse and validate one frame received as one message of at most `maxSize` bytes. */
export function decode(data, maxSize = BASE_MESSAGE_SIZE) {
  if (typeof data === 'string') throw new FrameError('a text message arrived on the transfer channel (frames are binary)');
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  const n = bytes.length;
  if (n < MIN_FRAME_SIZE) throw new FrameError(`frame of ${n} bytes is shorter than the ${MIN_FRAME_SIZE}-byte minimum`);
  if (n > maxSize) throw new FrameError(`frame of ${n} bytes exceeds the ${maxSize}-byte message limit`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, n);
  const version = bytes[0];
  if (version !== PROTOCOL_VERSION) {
    throw new FrameError(`unsupported protocol version ${version} (this peer speaks ${PROTOCOL_VERSION})`);
  }
  if (crc32(bytes.subarray(0, n - CRC_SIZE)) !== view.getUint32(n - CRC_SIZE)) {
    throw new FrameError('frame checksum mismatch (a corrupted or truncated frame)');
  }
  const type = bytes[1];
  const transferId = bytes.slice(2, HEADER_SIZE);
  const b = bytes.subarray(HEADER_SIZE, n - CRC_SIZE);
  const bv = new DataView(b.buffer, b.byteOffset, b.length);
  const name = TYPE_NAMES[type];
  if (!name) throw new FrameError(`unknown frame type 0x${type.toString(16).padStart(2, '0')}`);
  const exact = (size) => {
    if (b.length !== size) throw new FrameError(`${name} body is ${b.length} bytes, expected ${size}`);
  };
  let frame;
  switch (type) {
    case T.HELLO: {
      if (b.length < 6) throw new FrameError(`HELLO body is ${b.length} bytes, expected at least 6`);
      exact(6 + b[5]);
      if (b[4] !== ROLE.SENDER && b[4] !== ROLE.RECEIVER) throw new FrameError(`HELLO names unknown role ${b[4]}`);
      frame = { type, transferId, maxMessageSize: bv.getUint32(0), role: b[4], codecs: Array.from(b.subarray(6)) };
      break;
    }
    case T.OFFER: {
      if (b.length < 55) throw new FrameError(`OFFER body is ${b.length} bytes, expected at least 55`);
      const infoLen = bv.getUint16(53);
      exact(55 + infoLen);
      if (infoLen > MAX_INFO_SIZE) throw new FrameError(`OFFER description of ${infoLen} bytes exceeds ${MAX_INFO_SIZE}`);
      frame = { type, transferId, codec: b[0], rawSize: Number(bv.getBigUint64(1)),
        compressedSize: Number(bv.getBigUint64(9)), sha256: b.slice(17, 49), chunkSize: bv.getUint32(49),
        info: parseInfo(b.subarray(55)) };
      break;
    }
    case T.ACCEPT: {
      if (b.length < 6) throw new FrameError(`ACCEPT body is ${b.length} bytes, expected at least 6`);
      const count = bv.getUint16(4);
      exact(6 + 8 * count);
      const have = [];
      for (let i = 0; i < count; i++) have.push([bv.getUint32(6 + 8 * i), bv.getUint32(10 + 8 * i)]);
      frame = { type, transferId, window: bv.getUint32(0), have };
      break;
    }
    case T.REJECT:
    case T.CANCEL:
    case T.ERROR: {
      if (b.length < 2) throw new FrameError(`${name} body is ${b.length} bytes, expected at least 2`);
      let text;
      try {
        text = fromUtf8(b.subarray(2));
      } catch {
        throw new FrameError(`${name} reason is not valid UTF-8`);
      }
      frame = { type, transferId, code: bv.getUint16(0), text };
      break;
    }
    case T.CHUNK:
      if (b.length < 5) {
        throw new FrameError(`CHUNK body is ${b.length} bytes, expected an index and at least one payload byte`);
      }
      return { type, transferId, index: bv.getUint32(0), payload: b.subarray(4) };
    case T.ACK:
    case T.END:
      exact(4);
      frame = type === T.ACK ? { type, transferId, upto: bv.getUint32(0) } : { type, transferId, nchunks: bv.getUint32(0) };
      break;
    case T.DONE:
      exact(32);
      frame = { type, transferId, sha256: b.slice() };
      break;
    default:
      throw new FrameError(`unknown frame type 0x${type.toString(16)}`);
  }
  check(frame);
  return frame;
}

/** Range checks that do not depend on the conversation's state (encoding and decoding alike). */
export function check(frame) {
  if (frame.transferId.length !== 16) throw new FrameError('transfer id must be 16 bytes');
  switch (frame.type) {
    case T.HELLO:
      if (!equal(frame.transferId, ZERO_ID)) throw new FrameError('HELLO must carry the zero transfer id');
      if (frame.maxMessageSize < BASE_MESSAGE_SIZE || frame.maxMessageSize > 0xffffffff) {
        throw new FrameError(`HELLO advertises a ${frame.maxMessageSize}-byte message limit, below the ` +
          `${BASE_MESSAGE_SIZE} every peer must take`);
      }
      if (frame.codecs.length < 1 || frame.codecs.length > 16 || new Set(frame.codecs).size !== frame.codecs.length) {
        throw new FrameError('HELLO must list between 1 and 16 distinct codecs');
      }
      if (!frame.codecs.includes(LZ4)) throw new FrameError('HELLO must list lz4, the codec every peer speaks');
      break;
    case T.OFFER:
      if (equal(frame.transferId, ZERO_ID)) throw new FrameError('OFFER must carry a non-zero transfer id');
      if (frame.sha256.length !== 32) throw new FrameError('OFFER sha256 must be 32 bytes');
      if (frame.chunkSize < MIN_CHUNK_SIZE) {
        throw new FrameError(`OFFER chunk size ${frame.chunkSize} is below the ${MIN_CHUNK_SIZE}-byte minimum`);
      }
      if (frame.chunkSize + CHUNK_OVERHEAD > MAX_MESSAGE_SIZE) {
        throw new FrameError(`OFFER chunk size ${frame.chunkSize} makes CHUNK frames over ${MAX_MESSAGE_SIZE} bytes`);
      }
      if (frame.compressedSize === 0) throw new FrameError('OFFER of an empty payload (compressed size 0)');
      if (!Number.isSafeInteger(frame.compressedSize) || !Number.isSafeInteger(frame.rawSize)) {
        throw new FrameError('OFFER sizes are too large');
      }
      if (nchunksOf(frame) > MAX_CHUNKS) throw new FrameError('OFFER needs more than 2^32-1 chunks');
      if (infoJson(frame.info).length > MAX_INFO_SIZE) throw new FrameError(`OFFER description exceeds ${MAX_INFO_SIZE} bytes`);
      break;
    case T.ACCEPT: {
      if (frame.window < MIN_WINDOW || frame.window > MAX_WINDOW) {
        throw new FrameError(`ACCEPT window ${frame.window} is outside ${MIN_WINDOW}..${MAX_WINDOW} bytes`);
      }
      if (frame.have.length > MAX_RANGES) throw new FrameError(`ACCEPT lists ${frame.have.length} ranges, more than ${MAX_RANGES}`);
      let prevEnd = -1;
      for (const [start, end] of frame.have) {
        if (!(start < end)) throw new FrameError(`ACCEPT range [${start}, ${end}) is empty or reversed`);
        if (start <= prevEnd) throw new FrameError('ACCEPT ranges must be sorted, disjoint and not touching');
        prevEnd = end;
      }
      break;
    }
    case T.REJECT:
    case T.CANCEL:
    case T.ERROR:
      if (!(frame.code >= 0 && frame.code <= 0xffff)) throw new FrameError('reason code out of range');
      if (utf8(frame.text).length > MAX_TEXT_SIZE) {
        throw new FrameError(`${TYPE_NAMES[frame.type]} reason exceeds ${MAX_TEXT_SIZE} bytes`);
      }
      break;
    case T.CHUNK:
      if (!frame.payload.length) throw new FrameError('CHUNK with an empty payload');
      break;
    case T.ACK:
    case T.END: {
      const v = frame.type === T.ACK ? frame.upto : frame.nchunks;
      if (!(v >= 0 && v <= MAX_CHUNKS)) throw new FrameError(`${TYPE_NAMES[frame.type]} value out of range`);
      break;
    }
    case T.DONE:
      if (frame.sha256.length !== 32) throw new FrameError('DONE sha256 must be 32 bytes');
      break;
    default:
      break;
  }
}

/** Cut a reason to fit MAX_TEXT_SIZE bytes of UTF-8 without splitting a character. */
export function reasonText(text) {
  const raw = utf8(text);
  if (raw.length <= MAX_TEXT_SIZE) return text;
  return `${new TextDecoder().decode(raw.subarray(0, MAX_TEXT_SIZE - 3)).replace(/\uFFFD$/u, '')}…`;
}
