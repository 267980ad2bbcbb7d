// Errors the page shows. `kind` picks the wording and lets tests tell them apart; the message is for people.

export class P2pdError extends Error {
  constructor(kind, message) {
    super(message);
    this.name = 'P2pdError';
    this.kind = kind; // wrong-code | peer-gone | checksum | declined | not-found | tampered | invalid | failed
  }
}

export const wrongCode = () => new P2pdError('wrong-code',
  'Wrong code: the other side used a different code (or someone interfered). Nothing was transferred.');
export const tampered = (what) => new P2pdError('tampered', what);
export const failed = (what) => new P2pdError('failed', what);
export const invalid = (what) => new P2pdError('invalid', what);
