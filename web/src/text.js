// Showing text that came from elsewhere (a peer's title or reason, the server's words) without letting it act:
// the twin of p2pd/support/text.py's visible(). Control characters (C0, DEL, C1), bidi marks, embeddings,
// overrides and isolates, zero-width and other invisible format characters (Unicode category Cf above U+00FF)
// become visible escapes (\x1b, \u202e); nothing else changes; the result is cut to `limit` code points.
// tests/vectors/visible_text.json holds cases both implementations must turn into the same text.

const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u200b-\u200d\u2028\u2029\u2060-\u2064\ufeff\ufff9-\ufffb]|\p{Cf}/gu;

export function visible(text, limit = 300) {
  const out = String(text ?? '').replace(UNSAFE, (ch) => {
    const code = ch.codePointAt(0);
    if (code === 0xad) return ch; // soft hyphen: a format character at or below U+00FF, left as the reference does
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
  if (limit === null) return out;
  const points = [...out];
  return points.length <= limit ? out : `${points.slice(0, limit - 1).join('')}…`;
}

/** Like visible(), with runs of whitespace (newlines included) first folded to one space. */
export function visibleLine(text, limit = 300) {
  return visible(String(text ?? '').split(/\s+/u).filter(Boolean).join(' '), limit);
}
