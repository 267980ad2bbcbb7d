// The conversation reader: a long conversation (thousands of messages) shown a page at a time, so the DOM stays
// small and the page responsive. Pages are rendered in slices that yield to the browser between them (no long
// frame), tool results are shown inside their calls (tied by tool_use_id), every message keeps its number in
// the document, an outline of the user's turns jumps to any of them, and expand/collapse all applies to every
// page; a search finds any text (prompts, replies, tool inputs and results). Subagent transcripts are rendered
// only when opened, with the same pager.

import { el, glyph, oneLine, isToolResult, isToolUse, renderMessage, renderTeams, toolResultId, toolUseId }
  from './render.js';
import { noticeOf } from './rich.js';

export const PAGE_SIZE = 50;
const SLICE_MS = 12; // render for at most this long before letting the browser paint and handle input

const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

const EVERY = 256; // messages between the indexing's chances to yield

/** The indexing as steps: it yields every EVERY messages, so a caller can let the browser draw in between. */
function* indexing(messages) {
  const partsOf = (m) => (Array.isArray(m?.parts) ? m.parts : []);
  const calls = new Set();
  const callAt = new Map(); // tool_use id → the message holding the call
  for (const [i, m] of messages.entries()) {
    for (const p of partsOf(m)) {
      if (!isToolUse(p)) continue;
      const id = toolUseId(p);
      if (id !== null) calls.add(id);
      if (!callAt.has(id)) callAt.set(id, i);
    }
    if (i % EVERY === EVERY - 1) yield;
  }
  const results = new Map();
  const attached = new Set();
  const owner = new Map(); // a message holding only results → the message whose call shows them
  for (const [i, m] of messages.entries()) {
    for (const p of partsOf(m)) {
      const id = isToolResult(p) ? toolResultId(p) : null;
      if (id !== null && calls.has(id) && !results.has(id)) {
        results.set(id, { part: p, messageIndex: i });
        attached.add(p);
        if (!owner.has(i)) owner.set(i, callAt.get(id));
      }
    }
    if (i % EVERY === EVERY - 1) yield;
  }
  const shown = [];
  const turns = [];
  for (const [i, m] of messages.entries()) {
    if (i % EVERY === EVERY - 1) yield;
    const parts = partsOf(m);
    if (parts.length && parts.every((p) => attached.has(p))) continue; // only results, shown with their calls
    shown.push(i);
    const text = parts.find((p) => typeof p?.text === 'string' && p.text.trim())?.text;
    if (m?.role === 'ROLE_USER' && text !== undefined && !noticeOf(m)) turns.push({ index: i, text: oneLine(text, 90) });
  }
  return { results, attached, shown, turns, owner };
}

/** Which tool results belong to which call, which messages are left to show, and the user's turns. */
export function indexMessages(messages) {
  const steps = indexing(messages);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** indexMessages in slices of at most SLICE_MS, letting the browser draw between them (thousands of messages). */
export async function indexMessagesInSlices(messages) {
  const steps = indexing(messages);
  let started = performance.now();
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (performance.now() - started > SLICE_MS) {
      await nextTask();
      started = performance.now();
    }
  }
}

/** Pages through `messages`; `element` is the list with its pagers. */
export class MessagePager {
  constructor(messages, { pageSize = PAGE_SIZE, attribute = 'data-message', idPrefix = 'm', label = 'Messages',
    expanded = () => false, subagentFor = null, index = null } = {}) {
    this.messages = messages;
    this.subagentFor = subagentFor;
    this.index = index ?? indexMessages(messages);
    this.pageSize = pageSize;
    this.attribute = attribute;
    this.idPrefix = idPrefix;
    this.expanded = expanded;
    this.page = -1;
    this.token = 0;
    this.pages = Math.max(1, Math.ceil(this.index.shown.length / pageSize));
    this.list = el('div', { class: 'messages', 'aria-label': label, role: 'feed', 'aria-busy': 'false' });
    this.top = this.pager(`${label}: pages (top)`);
    this.bottom = this.pager(`${label}: pages (bottom)`);
    this.element = el('div', { class: 'pager-view' }, this.top.nav, this.list, this.bottom.nav);
  }

  pager(name) {
    const prev = el('button', { type: 'button', class: 'secondary', text: 'Previous page' });
    const next = el('button', { type: 'button', class: 'secondary', text: 'Next page' });
    const where = el('span', { class: 'where' });
    prev.addEventListener('click', () => this.show(this.page - 1, { focus: 'first' }));
    next.addEventListener('click', () => this.show(this.page + 1, { focus: 'first' }));
    const nav = el('nav', { class: 'pager', 'aria-label': name }, prev, where, next);
    if (this.pages === 1) nav.hidden = true;
    return { nav, prev, next, where };
  }

  /** The page holding document message `messageIndex` (or the nearest shown one after it). */
  pageOf(messageIndex) {
    const shown = this.index.shown;
    let lo = 0;
    let hi = shown.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (shown[mid] < messageIndex) lo = mid + 1;
      else hi = mid;
    }
    return Math.floor(lo / this.pageSize);
  }

  /** Show page `page`; resolves when it is fully rendered. `focus`: 'first' or a document message index. */
  async show(page, { focus = null } = {}) {
    const target = Math.min(Math.max(0, page), this.pages - 1);
    const token = ++this.token;
    const shown = this.index.shown.slice(target * this.pageSize, (target + 1) * this.pageSize);
    this.page = target;
    this.list.replaceChildren();
    this.list.setAttribute('aria-busy', 'true');
    const first = shown.length ? shown[0] + 1 : 0;
    const last = shown.length ? shown[shown.length - 1] + 1 : 0;
    for (const p of [this.top, this.bottom]) {
      p.prev.disabled = target === 0;
      p.next.disabled = target >= this.pages - 1;
      p.where.textContent = `Page ${target + 1} of ${this.pages} · messages #${first}–#${last} of ${this.messages.length}`;
    }
    let started = performance.now();
    for (const i of shown) {
      if (performance.now() - started > SLICE_MS) {
        await nextTask();
        if (token !== this.token) return false;
        started = performance.now();
      }
      const article = renderMessage(this.messages[i], { number: i + 1, results: this.index.results,
        attached: this.index.attached, attribute: this.attribute, subagentFor: this.subagentFor });
      article.dataset.index = String(i);
      if (this.idPrefix) article.id = `${this.idPrefix}${i + 1}`;
      else article.removeAttribute('id');
      if (this.expanded()) article.querySelectorAll('details:not(.subagent)').forEach((d) => { d.open = true; });
      this.list.append(article);
    }
    this.list.setAttribute('aria-busy', 'false');
    this.list.dataset.page = String(target + 1);
    const into = focus === 'first' ? this.list.firstElementChild
      : typeof focus === 'number' ? [...this.list.children].find((a) => Number(a.dataset.index) >= focus) ?? null : null;
    if (into) {
      into.focus({ preventScroll: true });
      into.scrollIntoView({ block: 'start' });
    }
    return true;
  }

  jump(messageIndex) {
    const parts = this.messages[messageIndex]?.parts;
    const only = Array.isArray(parts) && parts.length && parts.every((p) => this.index.attached.has(p));
    const target = only ? this.index.owner.get(messageIndex) ?? messageIndex : messageIndex;
    return this.show(this.pageOf(target), { focus: target });
  }
}

const OUTLINE_PAGE = 100;

/** The user's turns, 100 at a time (a long session has thousands): each jumps to its message. */
function outline(pager) {
  const turns = pager.index.turns;
  const pages = Math.max(1, Math.ceil(turns.length / OUTLINE_PAGE));
  const list = el('ol', { class: 'outline-list' });
  const prev = el('button', { type: 'button', class: 'secondary', text: 'Earlier turns' });
  const next = el('button', { type: 'button', class: 'secondary', text: 'Later turns' });
  const where = el('span', { class: 'where' });
  const nav = el('nav', { class: 'pager', 'aria-label': 'Outline pages', hidden: pages === 1 }, prev, where, next);
  let shown = -1;
  const showTurns = (page) => {
    shown = Math.min(Math.max(0, page), pages - 1);
    const slice = turns.slice(shown * OUTLINE_PAGE, (shown + 1) * OUTLINE_PAGE);
    list.start = shown * OUTLINE_PAGE + 1;
    list.replaceChildren(...slice.map((turn) => {
      const go = el('button', { type: 'button', class: 'link', 'data-jump': turn.index + 1,
        text: `#${turn.index + 1} ${turn.text}` });
      go.addEventListener('click', () => pager.jump(turn.index));
      return el('li', {}, go);
    }));
    prev.disabled = shown === 0;
    next.disabled = shown >= pages - 1;
    where.textContent = `Turns ${shown * OUTLINE_PAGE + 1}–${shown * OUTLINE_PAGE + slice.length} of ${turns.length}`;
  };
  prev.addEventListener('click', () => showTurns(shown - 1));
  next.addEventListener('click', () => showTurns(shown + 1));
  const box = el('details', { class: 'outline' },
    el('summary', { text: `Outline: ${turns.length} user turn${turns.length === 1 ? '' : 's'}` }), nav, list);
  box.addEventListener('toggle', () => {
    if (box.open && shown < 0) showTurns(0);
  });
  return box;
}

const SEARCH_LIMIT = 100;

function searchable(message) {
  return (Array.isArray(message?.parts) ? message.parts : []).map((p) => {
    if (typeof p?.text === 'string') return p.text;
    try {
      return JSON.stringify(p?.data ?? p?.url ?? '');
    } catch {
      return '';
    }
  }).join('\n');
}

/** Search every message (text, tool inputs and results); the first 100 hits jump to their message. */
function searchBox(pager) {
  const input = el('input', { type: 'search', id: 'search', name: 'search', autocomplete: 'off', spellcheck: 'false' });
  const form = el('form', { class: 'search', role: 'search' },
    el('label', { for: 'search', text: 'Search the conversation' }), input,
    el('button', { type: 'submit', class: 'secondary', text: 'Search' }));
  const said = el('p', { class: 'where', role: 'status', 'aria-live': 'polite' });
  const hits = el('ol', { class: 'outline-list search-hits' });
  let token = 0;
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const query = input.value.trim().toLowerCase();
    const mine = ++token;
    hits.replaceChildren();
    if (!query) {
      said.textContent = '';
      return;
    }
    said.textContent = 'Searching…';
    let count = 0;
    let started = performance.now();
    for (let i = 0; i < pager.messages.length; i++) {
      if (performance.now() - started > SLICE_MS) {
        await nextTask();
        if (mine !== token) return;
        started = performance.now();
      }
      const text = searchable(pager.messages[i]);
      const at = text.toLowerCase().indexOf(query);
      if (at < 0) continue;
      count++;
      if (count > SEARCH_LIMIT) continue;
      const go = el('button', { type: 'button', class: 'link', 'data-jump': i + 1,
        text: `#${i + 1} …${oneLine(text.slice(Math.max(0, at - 30), at + query.length + 50), 90)}…` });
      go.addEventListener('click', () => pager.jump(i));
      hits.append(el('li', {}, go));
    }
    said.textContent = `${count} message${count === 1 ? '' : 's'} match` +
      (count > SEARCH_LIMIT ? ` (the first ${SEARCH_LIMIT} are listed)` : '');
  });
  return el('div', { class: 'search-box' }, form, said, hits);
}

/**
 * Which call started which subagent: a Task (or Agent) call whose input.prompt is the subagent's first text.
 * Returns {byCall: tool_use id → subagent, unplaced: the subagents no call was found for}.
 */
export function placeSubagents(messages, subagents) {
  const calls = new Map(); // prompt → tool_use ids, in order
  for (const m of messages) {
    for (const p of Array.isArray(m?.parts) ? m.parts : []) {
      const prompt = isToolUse(p) ? p.data?.input?.prompt : undefined;
      if (typeof prompt === 'string') calls.set(prompt, [...(calls.get(prompt) ?? []), toolUseId(p)]);
    }
  }
  const byCall = new Map();
  const unplaced = [];
  for (const sub of subagents) {
    const first = (Array.isArray(sub?.messages) ? sub.messages : [])
      .flatMap((m) => (Array.isArray(m?.parts) ? m.parts : [])).find((p) => typeof p?.text === 'string')?.text;
    const ids = first === undefined ? undefined : calls.get(first);
    const id = ids?.find((candidate) => !byCall.has(candidate));
    if (id === undefined) unplaced.push(sub);
    else byCall.set(id, sub);
  }
  return { byCall, unplaced };
}

/**
 * The whole reader for a conversation document. `ready` resolves once the first page is on screen. `index`:
 * indexMessages' (or indexMessagesInSlices') answer for doc.messages, made here when not given.
 */
export function openReader(doc, { pageSize = PAGE_SIZE, index = null } = {}) {
  const messages = Array.isArray(doc.messages) ? doc.messages : [];
  let expanded = false;
  const pager = new MessagePager(messages, { pageSize, expanded: () => expanded, index });
  const root = el('div', { class: 'conversation', 'data-reader': true });
  const origin = doc.origin ?? {};
  const counts = doc.counts ?? {};
  root.append(el('h2', { text: doc.title || doc.contextId || 'Conversation' }));
  const facts = el('dl', { class: 'facts' });
  const fact = (k, v) => facts.append(el('dt', { text: k }), el('dd', { text: v }));
  fact('agent', `${origin.platform ?? '?'}${origin.sessionId ? ` · session ${origin.sessionId}` : ''}`);
  if (origin.cwd) fact('folder', `${origin.cwd}${origin.gitBranch ? ` (branch ${origin.gitBranch})` : ''}`);
  fact('messages', `${messages.length}` + (counts.toolCalls !== undefined ? ` · ${counts.toolCalls} tool calls` : ''));
  if (doc.summary) fact('summary', String(doc.summary));
  root.append(facts);
  const teams = doc.metadata?.teams;
  if (teams && typeof teams === 'object') root.append(renderTeams(teams));

  const setAll = (open) => {
    expanded = open;
    // subagents stay as they are: opening one renders its own pages (the DOM stays small)
    root.querySelectorAll('.messages details:not(.subagent)').forEach((d) => { d.open = open; });
  };
  const expand = el('button', { type: 'button', class: 'secondary', id: 'expand-all', text: 'Expand all' });
  const collapse = el('button', { type: 'button', class: 'secondary', id: 'collapse-all', text: 'Collapse all' });
  expand.addEventListener('click', () => setAll(true));
  collapse.addEventListener('click', () => setAll(false));
  root.append(el('div', { class: 'tools', role: 'toolbar', 'aria-label': 'Reading' }, outline(pager), expand, collapse));
  root.append(searchBox(pager));
  root.append(pager.element);

  const subagents = Array.isArray(doc.subagents) ? doc.subagents : [];
  const placed = placeSubagents(messages, subagents);
  const subagentBox = (sub, title) => {
    const subMessages = Array.isArray(sub?.messages) ? sub.messages : [];
    const box = el('details', { class: 'subagent', 'data-subagent': sub?.agentId ?? '' },
      el('summary', {}, glyph('🤖 '), `Subagent: ${title} (${subMessages.length} messages)`));
    box.addEventListener('toggle', () => {
      if (!box.open || box.dataset.rendered) return;
      box.dataset.rendered = 'true';
      const sp = new MessagePager(subMessages, { pageSize, attribute: 'data-subagent-message', idPrefix: '',
        label: `Subagent ${title}`, expanded: () => expanded });
      box.append(sp.element);
      sp.show(0);
    });
    return box;
  };
  // where a Task call started a subagent, it is shown inside that call, titled with the call's task
  pager.subagentFor = (id, data) => {
    const sub = placed.byCall.get(id);
    if (!sub) return null;
    const task = data?.input?.description ?? sub?.meta?.description ?? data?.input?.subagent_type ?? sub.agentId;
    return subagentBox(sub, String(task ?? 'subagent'));
  };
  if (placed.unplaced.length) root.append(el('h3', { text: `Other subagents (${placed.unplaced.length})` }));
  for (const sub of placed.unplaced) {
    root.append(subagentBox(sub, String(sub?.meta?.description ?? sub?.meta?.agentType ?? sub?.agentId ?? 'subagent')));
  }
  const ready = pager.show(0).then(() => {
    root.dataset.ready = 'true';
  });
  return { element: root, pager, ready };
}
