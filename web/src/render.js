// Pieces of a conversation document (p2pd/conversation/SPEC.md) as DOM nodes — never innerHTML: every piece of
// conversation text goes in through textContent, so a transcript cannot inject markup or script.
// One message becomes an <article> with a numbered heading and local time; a tool call is a <details> holding
// its input and (tied by tool_use_id) its result; thinking folded; images shown (raster types only, from data:
// URLs); long texts cut with a button that shows the rest on demand. An agent's text is markdown, rendered
// safely by rich.js (marked + DOMPurify, raw HTML shown as text); edits (Edit, MultiEdit, Write) show as diffs;
// a subagent sits inside the call that started it, titled with its task; tool notifications in user turns
// (<task-notification>, <command-name>…) are shown as notices, not as the person's words.
// reader.js pages through the messages.

import { DIFF_LINES, diffLines, editOf, noticeOf, renderMarkdown } from './rich.js';

const TOOL_USE = 'application/vnd.p2pd.tool-use+json';
const TOOL_RESULT = 'application/vnd.p2pd.tool-result+json';
const THINKING = 'application/vnd.p2pd.thinking+json';
const REDACTED_THINKING = 'application/vnd.p2pd.redacted-thinking+json';
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
export const SHOW_CHARS = 20000; // longer texts are cut until the reader asks for the rest

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}

/** A decorative glyph: shown, not read aloud. */
export const glyph = (text) => el('span', { 'aria-hidden': 'true', class: 'glyph', text });

export const oneLine = (text, limit = 100) => {
  const whole = String(text);
  const head = whole.slice(0, limit * 8); // enough for `limit` characters unless it is mostly white space
  const flat = head.split(/\s+/u).filter(Boolean).join(' ');
  return flat.length <= limit && head.length === whole.length ? flat : `${flat.slice(0, limit - 1)}…`;
};

/** A text, cut at SHOW_CHARS with a "Show all" button that puts the rest in on demand. */
export function longText(text, tag = 'pre', cls = '') {
  const s = String(text ?? '');
  // a <pre> that may scroll (it is at most 30rem high) takes keyboard focus, so it can be scrolled without a mouse
  const scrolls = tag === 'pre' && (s.length > 1500 || s.split('\n', 26).length > 25) ? '0' : null;
  if (s.length <= SHOW_CHARS) return el(tag, { class: cls, text: s, tabindex: scrolls });
  const node = el(tag, { class: cls, text: s.slice(0, SHOW_CHARS), tabindex: scrolls });
  const more = el('button', { type: 'button', class: 'more secondary',
    text: `Show all ${s.length.toLocaleString('en')} characters (${(s.length - SHOW_CHARS).toLocaleString('en')} more)` });
  more.addEventListener('click', () => {
    node.textContent = s;
    more.remove();
  });
  return el('div', { class: 'long' }, node, more);
}

const json = (value) => {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
};

const dataOf = (part) => (part && typeof part === 'object' && 'data' in part ? part.data : undefined);

export const isToolUse = (part) => part?.mediaType === TOOL_USE;
export const isToolResult = (part) => part?.mediaType === TOOL_RESULT;
export const toolUseId = (part) => {
  const d = dataOf(part);
  return d && typeof d === 'object' ? (d.id ?? d.call_id ?? null) : null;
};
export const toolResultId = (part) => {
  const d = dataOf(part);
  return d && typeof d === 'object' ? (d.tool_use_id ?? d.call_id ?? null) : null;
};

export function toolCallLine(data) {
  if (!data || typeof data !== 'object') return 'tool call';
  const name = data.name ?? data.type ?? 'tool';
  let args = data.input ?? data.arguments;
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch { /* keep the string */ }
  }
  let preview = '';
  if (args && typeof args === 'object') {
    preview = [args.description, args.command, args.file_path, args.pattern, args.cmd]
      .find((v) => typeof v === 'string') ?? JSON.stringify(args);
  } else if (args !== undefined) {
    preview = String(args);
  }
  return `${name}(${oneLine(preview, 80)})`;
}

function resultText(data) {
  const content = data && typeof data === 'object' ? (data.content ?? data.output) : data;
  if (Array.isArray(content)) {
    return content.map((b) => (b && typeof b === 'object' ? (b.text ?? (b.type === 'image' ? '[image]' : '')) : String(b)))
      .join('\n');
  }
  return typeof content === 'string' ? content : json(content);
}

function imageFrom(mediaType, base64, alt) {
  if (!IMAGE_TYPES.has(mediaType) || typeof base64 !== 'string' || !/^[A-Za-z0-9+/=\s]*$/.test(base64)) return null;
  return el('img', { class: 'image', alt: alt || 'image', src: `data:${mediaType};base64,${base64.replace(/\s/g, '')}` });
}

function resultBody(part) {
  const data = dataOf(part);
  const text = resultText(data);
  const error = Boolean(data && typeof data === 'object' && data.is_error);
  const lines = text ? text.split('\n').length : 0;
  const images = Array.isArray(data?.content)
    ? data.content.filter((b) => b?.type === 'image' && b.source?.type === 'base64')
      .map((b) => imageFrom(b.source.media_type, b.source.data, 'tool result image')).filter(Boolean)
    : [];
  return { text, error, lines, images };
}

const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** An edit's unified diff: removed lines in <del>, added in <ins>, signs kept as text; long ones cut. */
function renderDiff(edit) {
  const lines = diffLines(edit);
  const pre = el('pre', { class: 'diff', tabindex: '0' });
  const put = (from, to) => {
    for (const { sign, text } of lines.slice(from, to)) {
      const tag = sign === '+' ? 'ins' : sign === '-' ? 'del' : 'span';
      pre.append(el(tag, { class: sign === '@' ? 'hunk' : null, text: `${sign === '@' ? '' : sign}${text}\n` }));
    }
  };
  put(0, DIFF_LINES);
  if (lines.length <= DIFF_LINES) return pre;
  const more = el('button', { type: 'button', class: 'more secondary',
    text: `Show all ${lines.length.toLocaleString('en')} diff lines` });
  more.addEventListener('click', () => {
    put(DIFF_LINES, lines.length);
    more.remove();
  });
  return el('div', { class: 'long' }, pre, more);
}

/** A tool call with its result (or null when none came back) in one <details>. */
function renderToolCall(part, result, subagentFor) {
  const data = dataOf(part);
  const summary = el('summary', {}, toolCallLine(data));
  const edit = editOf(data?.name, data?.input);
  const details = el('details', { class: 'tool-call' }, summary,
    ...(edit ? [el('div', { class: 'label', text: `Edit of ${edit.path}` }), renderDiff(edit)]
      : [el('div', { class: 'label', text: 'Input' }), longText(json(data?.input ?? data?.arguments ?? data))]));
  const sub = subagentFor?.(toolUseId(part), data);
  if (sub) details.append(sub);
  if (result) {
    const r = resultBody(result.part);
    details.classList.add(r.error ? 'error' : 'ok');
    details.dataset.result = result.messageIndex + 1;
    summary.append(el('span', { class: 'outcome', text: ` → ${r.error ? 'error' : 'result'}, ${plural(r.lines, 'line')}` }));
    details.append(el('div', { class: 'label', text: `${r.error ? 'Error' : 'Result'} (message #${result.messageIndex + 1})` }),
      longText(r.text), ...r.images);
  } else {
    summary.append(el('span', { class: 'outcome', text: ' → no result' }));
  }
  return details;
}

function renderLooseResult(part) {
  const r = resultBody(part);
  return el('details', { class: `tool-result${r.error ? ' error' : ''}` },
    el('summary', {}, glyph('◂ '), `${r.error ? 'error' : 'result'} (${plural(r.lines, 'line')}) ${oneLine(r.text, 80)}`),
    longText(r.text), ...r.images);
}

/** Markdown text, cut at SHOW_CHARS with "Show all" (which renders the whole). */
function markdownText(text) {
  const s = String(text);
  const node = el('div', { class: 'text md' }, renderMarkdown(s.length <= SHOW_CHARS ? s : s.slice(0, SHOW_CHARS)));
  if (s.length <= SHOW_CHARS) return node;
  const more = el('button', { type: 'button', class: 'more secondary',
    text: `Show all ${s.length.toLocaleString('en')} characters (${(s.length - SHOW_CHARS).toLocaleString('en')} more)` });
  more.addEventListener('click', () => {
    node.replaceChildren(renderMarkdown(s));
    more.remove();
  });
  return el('div', { class: 'long' }, node, more);
}

function renderPart(part, results, { role, subagentFor } = {}) {
  if (!part || typeof part !== 'object') return null;
  const media = part.mediaType ?? '';
  if (typeof part.text === 'string') return role === 'agent' ? markdownText(part.text) : longText(part.text, 'div', 'text');
  if (typeof part.raw === 'string') {
    return imageFrom(media, part.raw, part.filename) ??
      el('div', { class: 'file' }, glyph('📎 '), `${part.filename ?? media ?? 'file'} (${Math.floor(part.raw.length * 3 / 4)} bytes)`);
  }
  if (typeof part.url === 'string') return el('div', { class: 'file' }, glyph('🔗 '), part.url);
  const data = dataOf(part);
  if (media === TOOL_USE) return renderToolCall(part, results?.get(toolUseId(part)) ?? null, subagentFor);
  if (media === TOOL_RESULT) return renderLooseResult(part);
  if (media === THINKING) {
    const text = data && typeof data === 'object' ? String(data.thinking ?? '') : String(data ?? '');
    return el('details', { class: 'thinking' }, el('summary', {}, glyph('💭 '), `thinking (${plural(text.length, 'character')})`),
      longText(text));
  }
  if (media === REDACTED_THINKING) return el('div', { class: 'thinking' }, glyph('💭 '), 'thinking (encrypted, not shown)');
  return el('details', { class: 'data' }, el('summary', { text: `${media || 'data'}: ${oneLine(json(data), 80)}` }),
    longText(json(data)));
}

let timeFormat = null; // one formatter for every message: making one per call cost ~1.5 ms each

/** A time as the reader's local time (the UTC original in the title and datetime). */
export function localTime(timestamp) {
  const date = new Date(String(timestamp));
  if (Number.isNaN(date.getTime())) return el('time', { text: String(timestamp) });
  timeFormat ??= new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
  return el('time', { datetime: date.toISOString(), title: `${date.toISOString()} (UTC)`, text: timeFormat.format(date) });
}

/**
 * One message as an <article> headed "#n User|Agent". `results` maps a tool_use id to {part, messageIndex};
 * `attached` tells which tool-result parts are shown with their call (and so left out here).
 */
export function renderMessage(message, { number, results = null, attached = null, attribute = 'data-message',
  subagentFor = null } = {}) {
  const notice = noticeOf(message);
  const role = notice ? 'notice' : message?.role === 'ROLE_USER' ? 'user' : 'agent';
  const meta = message?.metadata?.p2pd ?? {};
  const kind = notice ? notice.tag
    : typeof meta.kind === 'string' && !['prompt', 'response'].includes(meta.kind) ? meta.kind : null;
  const article = el('article', { class: `message ${role}${meta.active === false ? ' side-branch' : ''}`,
    [attribute]: true, id: number ? `m${number}` : null, tabindex: '-1' });
  article.append(el('header', {},
    el('h3', {}, number ? el('span', { class: 'number', text: `#${number} ` }) : null,
      el('span', { class: 'who', text: { user: 'User', agent: 'Agent', notice: 'Notice' }[role] })),
    kind ? el('span', { class: 'kind', text: kind }) : null,
    meta.active === false ? el('span', { class: 'kind', text: 'side branch' }) : null,
    meta.timestamp ? localTime(meta.timestamp) : null));
  if (notice) {
    article.append(el('details', { class: 'notice-body' }, el('summary', { text: notice.summary || notice.tag }),
      longText(notice.text)));
    return article;
  }
  for (const part of Array.isArray(message?.parts) ? message.parts : []) {
    if (attached?.has(part)) continue;
    const node = renderPart(part, results, { role, subagentFor });
    if (node) article.append(node);
  }
  return article;
}

function table(columns, rows) {
  return el('table', {}, el('thead', {}, el('tr', {}, ...columns.map((c) => el('th', { scope: 'col', text: c })))),
    el('tbody', {}, ...rows.map((row) => el('tr', {}, ...row.map((cell) => el('td', { text: String(cell ?? '—') }))))));
}

export function renderTeams(state) {
  const section = el('section', { class: 'team', 'data-team': true });
  const teams = Object.values(state.teams ?? {});
  section.append(el('h3', { text: `Agent team: ${teams.map((t) => `${t.name ?? '?'} (${t.status ?? '?'})`).join(', ') || 'team'}` }));
  const members = Object.values(state.members ?? {});
  if (members.length) {
    section.append(el('h4', { text: 'Roster' }), el('div', { class: 'scroll' }, table(['member', 'team', 'type', 'status'],
      members.map((m) => [m.name, m.team, m.agentType, m.status]))));
  }
  const tasks = Object.values(state.tasks ?? {});
  if (tasks.length) {
    section.append(el('h4', { text: 'Task board' }), el('div', { class: 'scroll' }, table(['#', 'subject', 'status', 'owner'],
      tasks.map((t) => [t.id, oneLine(t.subject ?? '', 80), t.status, t.owner]))));
  }
  return section;
}
