// The page: wires the forms to session.js and shows what happens in words a person understands. The state
// is mirrored on <body data-state> (idle, pairing, offer, receiving, done, sent, failed) for people's CSS
// and for the browser tests.

import { parseCode, codeFromFragment } from './codes.js';
import { P2pdError } from './errors.js';
import { renderConversation } from './render.js';
import { receiveConversation, sendConversation } from './session.js';
import { sameOriginSignalUrl } from './signaling.js';

const $ = (id) => document.getElementById(id);
const signalUrl = sameOriginSignalUrl(window.location);
let pickedFile = null;

function human(n) {
  const units = ['B', 'KB', 'MB', 'GB'];
  let i = 0;
  let v = n;
  while (Math.abs(v) >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

function setState(state) {
  document.body.dataset.state = state;
}

function show(id, visible = true) {
  $(id).hidden = !visible;
}

const WORDS = {
  'wrong-code': (e) => e.message,
  'peer-gone': () => 'The other side went away (it closed or lost its connection) before the transfer finished. ' +
    'Nothing was kept.',
  checksum: () => 'Checksum failure: what arrived does not match the SHA-256 the sender announced. Nothing was kept.',
  'not-found': (e) => e.message,
  tampered: (e) => `${e.message} Nothing was transferred.`,
};

function fail(error, direction) {
  const p2pd = error instanceof P2pdError ? error : new P2pdError('failed', String(error?.message ?? error));
  let text = (WORDS[p2pd.kind] ?? ((e) => e.message))(p2pd);
  if (p2pd.kind === 'declined') {
    text = direction === 'receive' && declinedHere ? 'You declined the offer. Nothing was transferred.'
      : `The receiver declined the offer. ${p2pd.message}`;
  }
  $('error').textContent = text;
  $('error').dataset.kind = p2pd.kind;
  show('error');
  show('offer', false);
  setState('failed');
  show('again');
}

let declinedHere = false;

// WebCrypto (pairing, sealing, SHA-256) exists only on secure pages: https, or http on localhost.
function insecurePage() {
  if (window.isSecureContext && globalThis.crypto?.subtle) return null;
  return new P2pdError('insecure', 'This page needs https: browsers allow the cryptography it pairs with only on ' +
    `secure pages (https, or http://localhost), and ${window.location.origin} is not one. Open the https address ` +
    'of this server; its operator can enable TLS with p2pd-signal --cert/--key or a reverse proxy.');
}

function ui(direction) {
  return {
    status: (text) => {
      $('status').textContent = text;
    },
    paired: (verification) => {
      $('sas-value').textContent = verification;
      show('sas');
    },
    decide: (offer) => new Promise((resolve) => {
      setState('offer');
      $('offer-title').textContent = offer.info.title || '(untitled)';
      $('offer-agent').textContent = `${offer.info.platform} · session ${offer.info.sessionId}`;
      $('offer-messages').textContent = String(offer.info.messageCount);
      $('offer-size').textContent = `${human(offer.rawSize)} (${human(offer.compressedSize)} compressed)`;
      show('offer');
      $('status').textContent = 'Accept this conversation?';
      const answer = (yes) => {
        show('offer', false);
        $('accept').onclick = null;
        $('decline').onclick = null;
        declinedHere = !yes;
        if (yes) {
          setState('receiving');
          $('status').textContent = 'Receiving…';
        }
        resolve(yes);
      };
      $('accept').onclick = () => answer(true);
      $('decline').onclick = () => answer(false);
    }),
    progress: (done, total) => {
      show('progress-box');
      $('progress').max = total || 1;
      $('progress').value = done;
      $('progress-text').textContent = `${human(done)} of ${human(total)} ${direction === 'receive' ? 'received' : 'acknowledged'}`;
      $('progress').dataset.done = String(done);
    },
  };
}

function begin() {
  show('start', false);
  show('session');
  show('error', false);
  show('result', false);
  show('again', false);
  show('sas', false);
  show('progress-box', false);
  $('conversation').replaceChildren();
  declinedHere = false;
  setState('pairing');
}

function downloadName(doc) {
  const base = String(doc.contextId || 'conversation').replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 80) || 'conversation';
  return `${base}.a2a.json`;
}

async function receive(codeText) {
  let code;
  try {
    code = parseCode(codeText);
  } catch (error) {
    begin();
    fail(error, 'receive');
    return;
  }
  begin();
  if (insecurePage()) {
    fail(insecurePage(), 'receive');
    return;
  }
  try {
    const result = await receiveConversation({ signalUrl, code, ui: ui('receive') });
    setState('done');
    const rate = result.seconds > 0 ? `, ${human(result.offer.compressedSize / result.seconds)}/s` : '';
    $('status').textContent = 'Received.';
    $('result-text').textContent = `SHA-256 verified (${result.sha256.slice(0, 16)}…): ${result.doc.messages.length} ` +
      `messages, ${human(result.raw.length)} in ${result.seconds.toFixed(2)} s${rate}.`;
    $('result').dataset.sha256 = result.sha256;
    $('result').dataset.seconds = String(result.seconds);
    const file = new Blob([result.raw], { type: 'application/json' });
    $('download').onclick = () => {
      const a = document.createElement('a');
      a.href = URL.createObjectURL(file);
      a.download = downloadName(result.doc);
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10000);
    };
    show('result');
    show('again');
    $('conversation').replaceChildren(renderConversation(result.doc));
  } catch (error) {
    fail(error, 'receive');
  }
}

async function send(codeText) {
  begin();
  if (insecurePage()) {
    fail(insecurePage(), 'send');
    return;
  }
  if (!pickedFile) {
    fail(new P2pdError('invalid', 'Pick a .a2a.json conversation file first.'), 'send');
    return;
  }
  try {
    const code = parseCode(codeText);
    const bytes = new Uint8Array(await pickedFile.arrayBuffer());
    const result = await sendConversation({ signalUrl, code, bytes, ui: ui('send') });
    setState('sent');
    $('status').textContent = 'Sent.';
    $('result-text').textContent = `The receiver verified SHA-256 ${result.sha256.slice(0, 16)}…: ` +
      `${result.doc.messages.length} messages, ${human(result.bytes)} compressed, in ${result.seconds.toFixed(2)} s.`;
    show('download', false);
    show('result');
    show('again');
  } catch (error) {
    fail(error, 'send');
  }
}

function pick(file) {
  pickedFile = file ?? null;
  $('file-name').textContent = file ? `${file.name} (${human(file.size)})` : 'Drop a .a2a.json file here or choose one.';
}

$('receive-form').addEventListener('submit', (event) => {
  event.preventDefault();
  receive($('code').value);
});
$('send-form').addEventListener('submit', (event) => {
  event.preventDefault();
  send($('send-code').value);
});
$('file').addEventListener('change', () => pick($('file').files[0]));
const drop = $('drop');
drop.addEventListener('dragover', (event) => {
  event.preventDefault();
  drop.classList.add('over');
});
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', (event) => {
  event.preventDefault();
  drop.classList.remove('over');
  pick(event.dataTransfer.files[0]);
});
$('again').addEventListener('click', () => {
  show('session', false);
  show('download');
  show('start');
  $('conversation').replaceChildren();
  setState('idle');
});

// A link with the code in its fragment (#7-amber-river) starts receiving at once. The fragment never goes to
// the server; it is also taken out of the address bar and history.
const fromLink = codeFromFragment(window.location.hash);
if (window.location.hash) history.replaceState(null, '', window.location.pathname + window.location.search);
if (fromLink) {
  $('code').value = String(fromLink);
  receive(String(fromLink));
}
document.body.dataset.ready = 'true';
