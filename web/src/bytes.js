// Small byte helpers shared by the protocol modules: hex, base64 (strict, standard alphabet, padded), UTF-8,
// concatenation, and CPace's length-value encoding (LEB128 length prefixes).

export const utf8 = (text) => new TextEncoder().encode(text);
export const fromUtf8 = (bytes) => new TextDecoder('utf-8', { fatal: true }).decode(bytes);

export function hex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

export function fromHex(text) {
  if (text.length % 2 !== 0 || /[^0-9a-fA-F]/.test(text)) throw new Error('not a hex string');
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.substr(i * 2, 2), 16);
  return out;
}

export function concat(...parts) {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export function equal(a, b) {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

export function b64encode(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

const B64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Strict standard base64; returns null for anything else (callers turn that into their own error). */
export function b64decode(text, maxLength = 1 << 20) {
  if (typeof text !== 'string' || text.length > maxLength || !B64.test(text)) return null;
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

export function prependLen(data) {
  const prefix = [];
  let length = data.length;
  for (;;) {
    const byte = length & 0x7f;
    length = Math.floor(length / 128);
    if (length) prefix.push(byte | 0x80);
    else {
      prefix.push(byte);
      break;
    }
  }
  return concat(Uint8Array.from(prefix), data);
}

export const lvCat = (...parts) => concat(...parts.map(prependLen));

export function u64be(value) {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(value));
  return out;
}

export async function sha256(data) {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', data));
}

export async function sha512(data) {
  return new Uint8Array(await crypto.subtle.digest('SHA-512', data));
}
