// The page: wires the forms to session.js and shows what happens in words a person understands. The state
// is mirrored on <body data-state> (insecure, idle, pairing, offer, receiving, sending, done, sent, reading,
// failed) for people's CSS and for the browser tests; the status line is set with the state, so it never shows a
// step the page has left. Either side can start here: "Make a code" shows a code (and its QR) for the other side;
// Cancel stops any exchange in progress (a CANCEL frame once the transfer runs).

import { typedCode } from './codeinput.js';
import { parseCode } from './codes.js';
import { P2pdError } from './errors.js';
import { keepOffline } from './install.js';
import { formatProgress, human, importCommand, secureContextProblem } from './status.js';
import { visible } from './text.js';

const $ = (id) => document.getElementById(id);
let pickedFile = null;
let declinedHere = false;
let unsaved = false; // a received conversation that was not downloaded yet
let direction = 'receive';
let controller = null; // the AbortController of the exchange in progress (Cancel)
let cancelledHere = false;
let loading = null; // session.js and friends, loaded only where the page can work (a secure context)

const BUSY = new Set(['pairing', 'offer', 'receiving', 'sending']);

function setState(state, status) {
  document.body.dataset.state = state;
  if (status !== undefined) setStatus(status);
}

function setStatus(text) {
  $('status').textContent = text;
  $('status').hidden = !text;
}

function show(id, visible = true) {
  $(id).hidden = !visible;
}

const kept = (e) => (e.keptBytes ? `${human(e.keptBytes)} of it are kept in this browser: receive the same ` +
  'conversation again (with a new code) to go on from there.' : 'Nothing was kept.');
const WORDS = {
  'peer-gone': (e) => 'The other side went away (it closed or lost its connection) before the transfer finished. ' +
    kept(e),
  checksum: () => 'Checksum failure: what arrived does not match the SHA-256 the sender announced. Nothing was kept.',
  tampered: (e) => `${e.message} Nothing was transferred.`,
  declined: (e) => (direction === 'receive' && declinedHere ? 'You declined the offer. Nothing was transferred.'
    : `${e.message} Nothing was transferred.`),
  cancelled: (e) => {
    if (!cancelledHere) return e.message;
    if (direction === 'receive' && Number($('progress').dataset.done || 0) > 0) {
      return 'You cancelled; the other side was told. What arrived is kept in this browser: receive the same ' +
        'conversation again to go on from there.';
    }
    return 'You cancelled; the other side was told.';
  },
};

function fail(error) {
  const p2pd = error instanceof P2pdError ? error : new P2pdError('failed', String(error?.message ?? error));
  $('error').textContent = (WORDS[p2pd.kind] ?? ((e) => e.message))(p2pd);
  $('error').dataset.kind = p2pd.kind;
  show('error');
  show('offer', false);
  show('cancel', false);
  show('made-code', false);
  const what = { receive: 'Receiving', send: 'Sending', read: 'Reading' }[direction];
  setState('failed', p2pd.kind === 'invalid' ? 'Not started.' : `${what} stopped.`);
  show('again');
}

function ui() {
  let first = null; // [time, bytes] of the first progress report: the rate counts from there
  return {
    status: (text) => setStatus(text),
    codeMade: async (code) => {
      const { showMadeCode } = await import('./codecard.js');
      showMadeCode($, window.location, code, direction);
      $('made-code-heading').focus();
    },
    paired: (verification) => {
      show('made-code', false);
      $('sas-value').textContent = verification;
      show('sas');
    },
    decide: (offer) => new Promise((resolve) => {
      // peer text: control and bidi-override characters shown escaped (text.js, as support/text.py)
      $('offer-title').textContent = visible(offer.info.title, 500) || '(untitled)';
      $('offer-agent').textContent = `${visible(offer.info.platform, 64)} · session ${visible(offer.info.sessionId)}`;
      $('offer-messages').textContent = String(offer.info.messageCount);
      $('offer-size').textContent = `${human(offer.rawSize)} (${human(offer.compressedSize)} compressed, on the wire)`;
      setState('offer', 'Accept this conversation?');
      show('offer');
      $('offer-heading').focus();
      const answer = (yes) => {
        show('offer', false);
        $('accept').onclick = null;
        $('decline').onclick = null;
        declinedHere = !yes;
        if (yes) setState('receiving', 'Receiving…');
        else setStatus('Declining…');
        resolve(yes);
      };
      $('accept').onclick = () => answer(true);
      $('decline').onclick = () => answer(false);
    }),
    progress: (done, total, resumed = 0) => {
      const now = performance.now();
      if (first === null) {
        first = [now, done];
        if (direction === 'send') setState('sending', 'Sending…');
        if (resumed > 0) {
          $('progress-box').dataset.resumed = String(resumed);
          setStatus(`Receiving… (resumed: ${human(resumed)} were already here)`);
        }
      }
      show('progress-box');
      $('progress').max = total || 1;
      $('progress').value = done;
      const text = formatProgress({ done, total, seconds: (now - first[0]) / 1000, since: first[1],
        verb: direction === 'receive' ? 'received' : 'acknowledged' });
      $('progress-text').textContent = text;
      $('progress').setAttribute('aria-valuetext', text);
      $('progress').dataset.done = String(done);
      if (direction === 'send' && done >= total) setStatus('All sent; waiting for the receiver to verify the SHA-256…');
    },
  };
}

function begin(dir) {
  direction = dir;
  controller = new AbortController();
  cancelledHere = false;
  show('start', false);
  show('session');
  show('cancel');
  show('made-code', false);
  delete $('progress-box').dataset.resumed;
  $('progress').dataset.done = '0';
  show('error', false);
  show('result', false);
  show('import', false);
  show('again', false);
  show('sas', false);
  show('offer', false);
  show('progress-box', false);
  $('conversation').replaceChildren();
  declinedHere = false;
  unsaved = false;
  setState('pairing', 'Starting…');
}

function downloadName(doc) {
  const base = String(doc.contextId || 'conversation').replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 80) || 'conversation';
  return `${base}.a2a.json`;
}

async function showConversation(doc) {
  const { indexMessagesInSlices, openReader } = await import('./reader.js');
  const reader = openReader(doc, { index: await indexMessagesInSlices(doc.messages ?? []) }); // no long task
  $('conversation').replaceChildren(reader.element);
  await reader.ready;
}

/** Receive with `codeText` (the sender's code), or with a code made here when it is null. */
async function receive(codeText) {
  let code = null;
  try {
    if (codeText !== null) code = parseCode(codeText);
  } catch (error) {
    begin('receive');
    fail(error);
    return;
  }
  begin('receive');
  try {
    const modules = await loading;
    const result = await modules.session.receiveConversation({ signalUrl: modules.signalUrl, code, ui: ui(),
      signal: controller.signal });
    show('cancel', false);
    const { offer, seconds } = result;
    const moved = offer.compressedSize - result.resumedBytes;
    const rate = seconds > 0 ? ` (${human(moved / seconds)}/s on the wire)` : '';
    const timing = result.resumedBytes > 0
      ? ` (${human(result.resumedBytes)} of it kept from an earlier try); the other ${human(moved)} in ` +
        `${seconds.toFixed(2)} s${rate}`
      : ` in ${seconds.toFixed(2)} s${rate}`;
    $('result-text').textContent = `SHA-256 verified (${result.sha256.slice(0, 16)}…). ${result.doc.messages.length} ` +
      `messages: ${human(offer.rawSize)} of conversation, sent as ${human(offer.compressedSize)} compressed` +
      `${timing}.`;
    $('result').dataset.sha256 = result.sha256;
    $('result').dataset.seconds = String(seconds);
    const name = downloadName(result.doc);
    const { file } = result;
    $('download').onclick = () => {
      const a = document.createElement('a');
      a.href = URL.createObjectURL(file);
      a.download = name;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10000);
      unsaved = false;
    };
    $('import-command').textContent = importCommand(name);
    show('import');
    show('download');
    show('result');
    show('again');
    unsaved = true;
    setState('done', 'Received. Rendering the conversation…');
    await showConversation(result.doc);
    performance.mark('p2pd-first-screen');
    setStatus('Received.');
  } catch (error) {
    fail(error);
  }
}

/** Send the picked file to `codeText` (the receiver's code), or with a code made here when it is null. */
async function send(codeText) {
  begin('send');
  pickedFile ??= $('file').files[0] ?? null;
  if (!pickedFile) {
    fail(new P2pdError('invalid', 'Pick a .a2a.json conversation file first.'));
    return;
  }
  try {
    const code = codeText === null ? null : parseCode(codeText);
    const file = await pickedFile.arrayBuffer();
    const modules = await loading;
    const result = await modules.session.sendConversation({ signalUrl: modules.signalUrl, code, file, ui: ui(),
      signal: controller.signal });
    show('cancel', false);
    const rate = result.seconds > 0 ? ` (${human(result.bytes / result.seconds)}/s on the wire)` : '';
    setState('sent', result.cancelTooLate ? 'Sent: the receiver had it before the cancel reached it.' : 'Sent.');
    $('result-text').textContent = `The receiver verified SHA-256 ${result.sha256.slice(0, 16)}…. ` +
      `${result.messageCount} messages: ${human(result.rawSize)} of conversation, sent as ` +
      `${human(result.bytes)} compressed in ${result.seconds.toFixed(2)} s${rate}.`;
    show('download', false);
    show('result');
    show('again');
  } catch (error) {
    fail(error);
  }
}

async function read() {
  begin('read');
  pickedFile ??= $('file').files[0] ?? null;
  if (!pickedFile) {
    fail(new P2pdError('invalid', 'Pick a .a2a.json conversation file first.'));
    return;
  }
  try {
    const modules = await loading;
    const { doc } = await modules.offthread.read(await pickedFile.arrayBuffer()); // parsed in a worker
    show('cancel', false);
    setState('reading', `Reading ${pickedFile.name}.`);
    show('again');
    await showConversation(doc);
  } catch (error) {
    fail(error);
  }
}

function pick(file) {
  pickedFile = file ?? null;
  $('file-name').textContent = file ? `${file.name} (${human(file.size)})` : 'or drop a .a2a.json file here';
}

/** A link's code (`#7-amber-river`): start receiving; a broken one says what is wrong instead of doing nothing. */
function fromFragment() {
  const hash = window.location.hash;
  if (!hash || hash === '#') return;
  // The fragment never goes to the server; take it out of the address bar and history too.
  history.replaceState(null, '', window.location.pathname + window.location.search);
  let text;
  try {
    text = decodeURIComponent(hash.slice(1));
  } catch {
    text = hash.slice(1);
  }
  if (BUSY.has(document.body.dataset.state)) {
    setStatus(`${$('status').textContent} (A new link was opened; finish or reload this transfer first.)`);
    return;
  }
  if (unsaved && !window.confirm('Leave the received conversation without downloading it?')) return;
  const sendTo = /^send[/:](.*)$/s.exec(text);
  if (sendTo) {
    offerToSend(sendTo[1]);
    return;
  }
  try {
    parseCode(text);
  } catch (error) {
    begin('receive');
    fail(new P2pdError('invalid', `This link's code is incomplete or invalid: ${error.message} ` +
      'Copy the whole link (or type the code) again.'));
    return;
  }
  $('code').value = text;
  receive(text);
}

/** A link made by a receiving page (`#send/<code>`): the send form, filled, waiting for a file. */
function offerToSend(text) {
  unsaved = false;
  show('session', false);
  show('start');
  $('conversation').replaceChildren();
  setState('idle', '');
  $('send-code').value = text;
  try {
    parseCode(text);
  } catch (error) {
    $('send-code').setCustomValidity(error.message);
    $('send-code').reportValidity();
    return;
  }
  $('send-code').setCustomValidity('');
  $('send-form').dataset.linked = 'true';
  $('drop').focus();
}

function wire() {
  for (const [form, input, go] of [['receive-form', 'code', receive], ['send-form', 'send-code', send]]) {
    $(form).addEventListener('submit', (event) => { // a likely typo is said under the field first (codeinput.js)
      event.preventDefault();
      const text = typedCode($(input), $(`${input}-typo`), () => $(form).requestSubmit());
      if (text !== null) go(text);
    });
  }
  $('read-button').addEventListener('click', () => read());
  $('make-receive-code').addEventListener('click', () => receive(null));
  $('make-send-code').addEventListener('click', () => send(null));
  $('send-code').addEventListener('input', () => $('send-code').setCustomValidity(''));
  $('cancel').addEventListener('click', () => {
    cancelledHere = true;
    setStatus('Cancelling…');
    controller?.abort();
  });
  $('copy-code').addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText($('made-code-value').textContent);
      $('copy-code').textContent = 'Copied';
    } catch {
      $('copy-code').textContent = 'Select and copy it';
    }
  });
  $('file').addEventListener('change', () => pick($('file').files[0]));
  const drop = $('drop');
  drop.addEventListener('click', () => $('file').click());
  // as a native button: Enter on keydown, Space on keyup (its keydown only must not scroll the page)
  drop.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' || event.key === ' ') event.preventDefault();
    if (event.key === 'Enter') $('file').click();
  });
  drop.addEventListener('keyup', (event) => {
    if (event.key === ' ') {
      event.preventDefault();
      $('file').click();
    }
  });
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
    if (unsaved && !window.confirm('Leave the received conversation without downloading it?')) return;
    unsaved = false;
    show('session', false);
    show('start');
    $('conversation').replaceChildren();
    setState('idle', '');
  });
  $('copy-import').addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText($('import-command').textContent);
      $('copy-import').textContent = 'Copied';
    } catch {
      $('copy-import').textContent = 'Select and copy it';
    }
  });
  window.addEventListener('hashchange', fromFragment);
  window.addEventListener('beforeunload', (event) => {
    if (BUSY.has(document.body.dataset.state) || unsaved) {
      event.preventDefault();
      event.returnValue = ''; // older browsers ask only when this is set
    }
  });
}

async function start() {
  const problem = secureContextProblem(window);
  if (problem) {
    show('start', false);
    const https = $('insecure-https');
    https.href = `https://${window.location.host}${window.location.pathname}`;
    https.textContent = https.href;
    show('insecure');
    setState('insecure');
    document.body.dataset.ready = 'true';
    return;
  }
  // the reader too (markdown, sanitiser, diff): compiled now, not in a long task while a conversation arrives
  loading = Promise.all([import('./session.js'), import('./signaling.js'), import('./offthread.js'),
    import('./reader.js')])
    .then(([session, signaling, offthread]) => ({ session, offthread,
      signalUrl: signaling.sameOriginSignalUrl(window.location) }));
  wire();
  fromFragment();
  await loading;
  document.body.dataset.ready = 'true';
  keepOffline(window);
}

start();
