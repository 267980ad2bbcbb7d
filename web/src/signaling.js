// The signaling client: a WebSocket to p2pd-signal (subprotocol p2pd-signal.v1, signaling/PROTOCOL.md) that
// joins the code's room and runs the Pairing state machine over `relay` messages — the browser twin of
// p2pd/pairing/client.py's `Rendezvous` (and of machine.py's `Session` for the server's events). The server only
// ever sees the nameplate and sealed data. Every failure carries `code`, the cause as p2pd/errors.py names it
// (signaling_unreachable, signaling_lost, signaling_refused, peer_gone, no_peer, timeout, not_found, or the
// pairing's own); the server's words are only shown, never decided on.

import { P2pdError, failed } from './errors.js';
import { Pairing, withCode } from './pairing.js';
import { generateCode } from './codes.js';
import { iceServersFrom } from './ice.js';
import { visible } from './text.js';
import { WORDS } from './wordlist.js';

export const SUBPROTOCOL = 'p2pd-signal.v1';

/** The signaling URL of the server that served this page: same origin, ws(s)://host/. */
export function sameOriginSignalUrl(location) {
  return `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/`;
}

export class Rendezvous {
  /**
   * Connect and enter the room of `code`, creating it when missing (`create`, as p2pd does): either side may
   * come first, and the first waits in the room for the other within `pair`'s timeout.
   * Without a code (`code: null`) the page makes one, either side: the server allocates a fresh nameplate
   * and the words are drawn here (they never reach the server); `rv.code` is the code to hand over.
   */
  static async open(url, { role, code, create = true, timeoutMs = 10000 }) {
    const rv = new Rendezvous(url, role, code);
    await rv.#connect(create, timeoutMs);
    return rv;
  }

  constructor(url, role, code) {
    this.url = url;
    this.role = role;
    this.code = code;
    this.peer = null;
    this.failure = null;
    this.inbox = [];
    this.iceServers = []; // STUN/TURN from the server's ice_servers message (ice.js)
    this.waiters = [];
    this.listeners = new Set();
    this.chain = Promise.resolve();
  }

  get verification() {
    return this.pairing?.verification ?? null;
  }

  get paired() {
    return this.pairing?.state === 'paired';
  }

  /** Called with the P2pdError once the pairing or the signaling connection fails (peer left, room closed…). */
  onFailure(listener) {
    this.listeners.add(listener);
    if (this.failure) listener(this.failure);
  }

  #connect(create, timeoutMs) {
    return new Promise((resolve, reject) => {
      let ws;
      try {
        ws = new WebSocket(this.url, SUBPROTOCOL);
      } catch (error) {
        reject(withCode(failed(`Cannot reach the signaling server at ${this.url}: ${error.message}`),
          'signaling_unreachable'));
        return;
      }
      this.ws = ws;
      const timer = setTimeout(() => {
        reject(withCode(failed(`The signaling server did not answer within ${timeoutMs / 1000} s.`),
          'signaling_unreachable'));
        ws.close();
      }, timeoutMs);
      let joined = false;
      ws.onerror = () => {
        if (!joined) {
          clearTimeout(timer);
          reject(withCode(failed(`Cannot reach the signaling server at ${this.url}.`), 'signaling_unreachable'));
        }
      };
      ws.onclose = () => {
        if (!joined) {
          clearTimeout(timer);
          reject(withCode(failed('The signaling server closed the connection.'), 'signaling_lost'));
        } else {
          this.#fail(withCode(failed('Lost the connection to the signaling server.'), 'signaling_lost'));
        }
      };
      ws.onmessage = (event) => {
        let message;
        try {
          message = JSON.parse(event.data);
        } catch {
          this.#fail(withCode(failed('The signaling server sent a malformed message.'), 'signaling_lost'));
          return;
        }
        if (message === null || typeof message !== 'object') return;
        if (!joined) {
          if (message.type === 'welcome') {
            if (message.protocol !== SUBPROTOCOL) {
              clearTimeout(timer);
              reject(withCode(failed('The signaling server speaks another protocol version.'), 'signaling_refused'));
              ws.close();
              return;
            }
            ws.send(JSON.stringify(this.code === null ? { type: 'allocate', id: 1 }
              : { type: 'join', id: 1, room: this.code.nameplate, create }));
          } else if (message.type === 'joined') {
            joined = true;
            clearTimeout(timer);
            this.room = String(message.room);
            if (this.code === null) this.code = generateCode(this.room, WORDS);
            this.peerId = String(message.peer_id);
            this.pairing = new Pairing(this.code, this.role, { room: this.room });
            if (Array.isArray(message.peers) && message.peers.length) this.peer = String(message.peers[0]);
            resolve();
          } else if (message.type === 'error') {
            clearTimeout(timer);
            reject(this.#joinError(message));
            ws.close();
          }
          return;
        }
        this.chain = this.chain.then(() => this.#dispatch(message)).catch((error) => {
          this.#fail(error instanceof P2pdError ? error : withCode(failed(`Pairing failed: ${error.message}`),
            'unexpected'));
        });
      };
    });
  }

  #joinError(message) {
    if (this.code === null) {
      return withCode(failed(`The signaling server could not make a code: ${visible(message.reason ?? message.code)}`),
        'signaling_refused');
    }
    const plate = this.code.nameplate;
    if (message.code === 'no-such-room') {
      return withCode(new P2pdError('not-found', `No one is waiting on number ${plate}: check the code, or ` +
        'start the other side first.'), 'not_found');
    }
    if (message.code === 'room-full') {
      return withCode(failed(`Number ${plate} is already in use by two peers.`), 'signaling_refused');
    }
    return withCode(failed(`The signaling server refused to pair: ${visible(message.reason ?? message.code)}`),
      'signaling_refused');
  }

  async #dispatch(message) {
    const kind = message.type;
    if (kind === 'peer_joined') {
      if (this.peer === null) {
        this.peer = String(message.peer_id);
        this.#peerPresent?.();
      }
    } else if (kind === 'peer_left') {
      if (message.peer_id === this.peer) {
        this.#fail(withCode(new P2pdError('peer-gone', this.paired ? 'The other side went away (it closed or ' +
          'lost its connection).' : 'The other side left before the pairing completed.'), 'peer_gone'));
      }
    } else if (kind === 'ice_servers') {
      this.iceServers = iceServersFrom(message);
    } else if (kind === 'room_closed') {
      if (message.reason !== 'expired' && this.peer !== null && message.by === this.peer) {
        this.#fail(withCode(new P2pdError('peer-gone', 'The other side closed the pairing room.'), 'peer_gone'));
      } else {
        this.#fail(withCode(failed(message.reason === 'expired' ? 'The pairing room expired on the signaling ' +
          'server.' : 'The pairing room was closed on the signaling server.'), 'signaling_lost'));
      }
    } else if (kind === 'error') {
      this.#fail(withCode(failed(`The signaling server refused a message: ${visible(message.reason)}`),
        'signaling_refused'));
    } else if (kind === 'relay' && this.peer !== null && message.from === this.peer) {
      const step = await this.pairing.receive(message.data);
      for (const data of step.send) this.#relay(data);
      for (const item of step.delivered) this.#deliver(item);
      if (step.paired) this.#pairedNow?.();
      if (step.error) this.#fail(step.error);
    }
  }

  #peerPresent = null;
  #pairedNow = null;

  /** Wait for the peer, run the PAKE and key confirmation; resolves to the verification string. */
  async pair(timeoutMs = 300000) {
    if (this.failure) throw this.failure;
    const seconds = Math.round(timeoutMs / 1000);
    const deadline = new Promise((_, reject) => {
      // Nobody came (no_peer), or the peer came but did not finish the key exchange (timeout), as in client.py.
      this.pairTimer = setTimeout(() => reject(this.peer === null
        ? withCode(failed(`No peer joined within ${seconds} s.`), 'no_peer')
        : withCode(failed(`The other side did not complete the key exchange within ${seconds} s.`), 'timeout')),
      timeoutMs);
    });
    const failure = new Promise((_, reject) => this.onFailure(reject));
    try {
      if (this.peer === null) {
        await Promise.race([new Promise((resolve) => { this.#peerPresent = resolve; }), deadline, failure]);
      }
      const paired = new Promise((resolve) => { this.#pairedNow = resolve; });
      if (this.role === 'sender') {
        for (const data of await this.pairing.start()) this.#relay(data);
      }
      if (!this.paired) await Promise.race([paired, deadline, failure]);
      return this.verification;
    } finally {
      clearTimeout(this.pairTimer);
    }
  }

  async sendSealed(obj) {
    if (this.failure) throw this.failure;
    this.#relay(await this.pairing.seal(obj));
  }

  /** The peer's next sealed object, authenticated and in order. */
  recvSealed(timeoutMs = 30000) {
    if (this.inbox.length) return Promise.resolve(this.inbox.shift());
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== resolve);
        reject(withCode(failed(`No message from the other side within ${timeoutMs / 1000} s.`), 'timeout'));
      }, timeoutMs);
      this.waiters.push({ resolve: (v) => { clearTimeout(timer); resolve(v); },
        reject: (e) => { clearTimeout(timer); reject(e); } });
    });
  }

  close() {
    this.closed = true;
    if (this.ws && this.ws.readyState <= 1) this.ws.close();
  }

  #relay(data) {
    if (this.peer === null || this.ws.readyState !== WebSocket.OPEN) return;
    this.ws.send(JSON.stringify({ type: 'relay', to: this.peer, data }));
  }

  #deliver(item) {
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve(item);
    else this.inbox.push(item);
  }

  #fail(error) {
    if (this.failure || this.closed) return;
    this.failure = error;
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
    for (const listener of this.listeners) listener(error);
  }
}
