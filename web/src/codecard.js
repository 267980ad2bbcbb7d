// The code this page made, shown so the other side can use it: the code in large type, a QR code of the link,
// the command for the p2pd CLI and the link itself. A code to send links to this page's address with the code
// in the fragment (opening it receives); a code to receive links with `#send/<code>` (opening it fills the send
// form). The QR code is drawn as one SVG path from uqr's module matrix (no canvas, no inline style: the CSP holds).

import { encode } from 'uqr';

const SVG = 'http://www.w3.org/2000/svg';

/** `text` as a QR code: an <svg> of dark modules on a light square (quiet zone of 4 modules). */
export function qrSvg(text, label) {
  const { data, size } = encode(text, { ecc: 'M', border: 4 });
  let d = '';
  data.forEach((row, y) => row.forEach((dark, x) => {
    if (dark) d += `M${x} ${y}h1v1h-1z`;
  }));
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${size} ${size}`);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  svg.setAttribute('shape-rendering', 'crispEdges');
  const back = document.createElementNS(SVG, 'rect');
  back.setAttribute('width', String(size));
  back.setAttribute('height', String(size));
  back.setAttribute('class', 'qr-light');
  const modules = document.createElementNS(SVG, 'path');
  modules.setAttribute('d', d);
  modules.setAttribute('class', 'qr-dark');
  svg.append(back, modules);
  return svg;
}

/** The link another device opens for `code`: `#code` receives, `#send/code` fills the send form. */
export function codeLink(location, code, mine) {
  const base = `${location.protocol}//${location.host}${location.pathname}`;
  return mine === 'send' ? `${base}#${code}` : `${base}#send/${code}`;
}

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/** Fill the page's #made-code box for `code`; `mine` is this page's side ('send' or 'receive'). */
export function showMadeCode($, location, code, mine) {
  const text = String(code);
  const link = codeLink(location, text, mine);
  $('made-code-value').textContent = text;
  $('made-code-heading').textContent = mine === 'send' ? 'Your code to send' : 'Your code to receive';
  $('made-code-how').textContent = mine === 'send'
    ? 'On the other device open the link (or scan the QR code) to receive in its browser, type the code into ' +
      'this page there, or run:'
    : 'On the other device open the link (or scan the QR code) to send from its browser, type the code into ' +
      'this page there, or run (with the session to send):';
  $('made-code-command').textContent = mine === 'send' ? `p2pd receive ${text}` : `p2pd send SESSION --code ${text}`;
  $('made-code-link').href = link;
  $('made-code-link').textContent = link;
  $('made-code-local').hidden = !LOOPBACK.test(location.hostname);
  $('qr').replaceChildren(qrSvg(link, `QR code of the link for ${text}`));
  $('made-code').hidden = false;
  $('made-code').dataset.code = text;
}
