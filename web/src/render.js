// A readable rendering of a conversation document (p2pd/conversation/SPEC.md) as DOM nodes — never innerHTML:
// every piece of conversation text goes in through textContent, so a transcript cannot inject markup or script.
// User and agent turns; tool calls, tool results and thinking folded in <details>; images shown (raster types
// only, from data: URLs); the agent team's roster and task board when the document has one.

const TOOL_USE = 'application/vnd.p2pd.tool-use+json';
const TOOL_RESULT = 'application/vnd.p2pd.tool-result+json';
const THINKING = 'application/vnd.p2pd.thinking+json';
const REDACTED_THINKING = 'application/vnd.p2pd.redacted-thinking+json';
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
const SHOW_CHARS = 20000; // longer texts are cut in the page (the download has everything)

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

const oneLine = (text, limit = 100) => {
  const flat = String(text).split(/\s+/u).filter(Boolean).join(' ');
  return flat.length <= limit ? flat : `${flat.slice(0, limit - 1)}…`;
};

function longText(text, tag = 'pre', cls = '') {
  const s = String(text ?? '');
  const node = el(tag, { class: cls, text: s.length > SHOW_CHARS ? s.slice(0, SHOW_CHARS) : s });
  if (s.length > SHOW_CHARS) {
    node.append(el('span', { class: 'cut', text: `\n… ${s.length - SHOW_CHARS} more characters (download for all)` }));
  }
  return node;
}

const json = (value) => {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
};

function dataOf(part) {
  return 'data' in part ? part.data : undefined;
}

function toolCallLine(data) {
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
    preview = [args.command, args.file_path, args.pattern, args.description, args.cmd]
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

function renderPart(part) {
  if (!part || typeof part !== 'object') return null;
  const media = part.mediaType ?? '';
  if (typeof part.text === 'string') return longText(part.text, 'div', 'text');
  if (typeof part.raw === 'string') {
    return imageFrom(media, part.raw, part.filename) ??
      el('div', { class: 'file', text: `📎 ${part.filename ?? media ?? 'file'} (${Math.floor(part.raw.length * 3 / 4)} bytes)` });
  }
  if (typeof part.url === 'string') return el('div', { class: 'file', text: `🔗 ${part.url}` });
  const data = dataOf(part);
  if (media === TOOL_USE) {
    return el('details', { class: 'tool-call' }, el('summary', { text: `▸ ${toolCallLine(data)}` }),
      longText(json(data?.input ?? data?.arguments ?? data)));
  }
  if (media === TOOL_RESULT) {
    const text = resultText(data);
    const error = Boolean(data && typeof data === 'object' && data.is_error);
    const lines = text ? text.split('\n').length : 0;
    const images = Array.isArray(data?.content)
      ? data.content.filter((b) => b?.type === 'image' && b.source?.type === 'base64')
        .map((b) => imageFrom(b.source.media_type, b.source.data, 'tool result image')).filter(Boolean)
      : [];
    return el('details', { class: `tool-result${error ? ' error' : ''}` },
      el('summary', { text: `◂ ${error ? 'error' : 'result'} (${lines} line${lines === 1 ? '' : 's'}) ${oneLine(text, 80)}` }),
      longText(text), ...images);
  }
  if (media === THINKING) {
    const text = data && typeof data === 'object' ? String(data.thinking ?? '') : String(data ?? '');
    return el('details', { class: 'thinking' }, el('summary', { text: `💭 thinking (${text.length} characters)` }),
      longText(text));
  }
  if (media === REDACTED_THINKING) return el('div', { class: 'thinking', text: '💭 thinking (encrypted, not shown)' });
  return el('details', { class: 'data' }, el('summary', { text: `${media || 'data'}: ${oneLine(json(data), 80)}` }),
    longText(json(data)));
}

function renderMessage(message, attribute) {
  const role = message?.role === 'ROLE_USER' ? 'user' : 'agent';
  const meta = message?.metadata?.p2pd ?? {};
  const kind = typeof meta.kind === 'string' && !['prompt', 'response'].includes(meta.kind) ? meta.kind : null;
  const article = el('article', { class: `message ${role}${meta.active === false ? ' side-branch' : ''}`,
    [attribute]: true });
  article.append(el('header', {},
    el('span', { class: 'who', text: role }),
    kind ? el('span', { class: 'kind', text: kind }) : null,
    meta.active === false ? el('span', { class: 'kind', text: 'side branch' }) : null,
    meta.timestamp ? el('time', { text: String(meta.timestamp) }) : null));
  for (const part of Array.isArray(message?.parts) ? message.parts : []) {
    const node = renderPart(part);
    if (node) article.append(node);
  }
  return article;
}

function table(columns, rows) {
  return el('table', {}, el('thead', {}, el('tr', {}, ...columns.map((c) => el('th', { text: c })))),
    el('tbody', {}, ...rows.map((row) => el('tr', {}, ...row.map((cell) => el('td', { text: String(cell ?? '—') }))))));
}

function renderTeams(state) {
  const section = el('section', { class: 'team', 'data-team': true });
  const teams = Object.values(state.teams ?? {});
  section.append(el('h3', { text: `Agent team: ${teams.map((t) => `${t.name ?? '?'} (${t.status ?? '?'})`).join(', ') || 'team'}` }));
  const members = Object.values(state.members ?? {});
  if (members.length) {
    section.append(el('h4', { text: 'Roster' }), table(['member', 'team', 'type', 'status'],
      members.map((m) => [m.name, m.team, m.agentType, m.status])));
  }
  const tasks = Object.values(state.tasks ?? {});
  if (tasks.length) {
    section.append(el('h4', { text: 'Task board' }), table(['#', 'subject', 'status', 'owner'],
      tasks.map((t) => [t.id, oneLine(t.subject ?? '', 80), t.status, t.owner])));
  }
  return section;
}

/** The whole document as one element. Main messages carry `data-message` (one per document message). */
export function renderConversation(doc) {
  const root = el('div', { class: 'conversation' });
  const origin = doc.origin ?? {};
  const counts = doc.counts ?? {};
  root.append(el('h2', { text: doc.title || doc.contextId || 'Conversation' }));
  const facts = el('dl', { class: 'facts' });
  const fact = (k, v) => facts.append(el('dt', { text: k }), el('dd', { text: v }));
  fact('agent', `${origin.platform ?? '?'}${origin.sessionId ? ` · session ${origin.sessionId}` : ''}`);
  if (origin.cwd) fact('folder', `${origin.cwd}${origin.gitBranch ? ` (branch ${origin.gitBranch})` : ''}`);
  fact('messages', `${Array.isArray(doc.messages) ? doc.messages.length : 0}` +
    (counts.toolCalls !== undefined ? ` · ${counts.toolCalls} tool calls` : ''));
  if (doc.summary) fact('summary', String(doc.summary));
  root.append(facts);
  const teams = doc.metadata?.teams;
  if (teams && typeof teams === 'object') root.append(renderTeams(teams));
  const list = el('div', { class: 'messages' });
  for (const message of Array.isArray(doc.messages) ? doc.messages : []) list.append(renderMessage(message, 'data-message'));
  root.append(list);
  const subagents = Array.isArray(doc.subagents) ? doc.subagents : [];
  for (const sub of subagents) {
    const messages = Array.isArray(sub?.messages) ? sub.messages : [];
    const label = sub?.meta?.description ?? sub?.meta?.agentType ?? sub?.agentId ?? 'subagent';
    root.append(el('details', { class: 'subagent' },
      el('summary', { text: `🤖 subagent ${label} (${messages.length} messages)` }),
      ...messages.map((m) => renderMessage(m, 'data-subagent-message'))));
  }
  return root;
}
