// The richer pieces of the reader: an agent's markdown rendered safely, file edits as diffs, and the XML
// notifications tools put in user turns (task notifications, slash commands, system reminders) recognised as
// such. Markdown goes through marked (GFM) with every raw HTML token escaped — raw HTML in a transcript is
// shown as text, never as markup — and then through DOMPurify (links and a small set of tags only), which
// returns DOM nodes: nothing here assigns innerHTML. Diffs come from jsdiff's structuredPatch.

import { Marked } from 'marked';
import DOMPurify from 'dompurify';
import { structuredPatch } from 'diff';

const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const markdown = new Marked({
  gfm: true,
  async: false,
  renderer: {
    html: ({ text }) => escapeHtml(text), // raw HTML, block or inline: shown as text
    image: ({ href, text }) => escapeHtml(`![${text}](${href})`), // no remote images (the CSP blocks them anyway)
  },
});

const ALLOWED_TAGS = ['a', 'p', 'br', 'hr', 'em', 'strong', 'del', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li',
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'span'];

let hooked = false;
function purify(html) {
  if (!hooked) {
    hooked = true;
    DOMPurify.addHook('afterSanitizeAttributes', (node) => {
      if (node.tagName === 'A') {
        node.setAttribute('rel', 'noopener noreferrer nofollow');
        node.setAttribute('target', '_blank');
      }
    });
  }
  return DOMPurify.sanitize(html, { ALLOWED_TAGS, ALLOWED_ATTR: ['href', 'title', 'align', 'start'], ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i, RETURN_DOM_FRAGMENT: true });
}

/** Markdown `text` as a sanitised DOM fragment (markdown headings become h4–h6: the page's outline stays). */
export function renderMarkdown(text) {
  const html = markdown.parse(String(text ?? '')).replace(/<(\/?)h([1-6])>/g, (m, slash, n) =>
    `<${slash}h${Math.min(6, Number(n) + 3)}>`);
  return purify(html);
}

/** What a tool call edits, as {path, pairs: [[old, new]…]} (Edit, MultiEdit; Write as new content), or null. */
export function editOf(name, input) {
  if (!input || typeof input !== 'object') return null;
  const path = typeof input.file_path === 'string' ? input.file_path : (typeof input.path === 'string' ? input.path : 'file');
  if (typeof input.old_string === 'string' && typeof input.new_string === 'string') {
    return { path, pairs: [[input.old_string, input.new_string]] };
  }
  if (Array.isArray(input.edits) && input.edits.every((e) => typeof e?.old_string === 'string' && typeof e?.new_string === 'string')) {
    return { path, pairs: input.edits.map((e) => [e.old_string, e.new_string]) };
  }
  if (name === 'Write' && typeof input.content === 'string') return { path, pairs: [['', input.content]] };
  return null;
}

export const DIFF_LINES = 400; // lines shown at first; the rest on demand

/** The edit's unified diff lines: [{sign: '+'|'-'|' '|'@', text}]. */
export function diffLines({ path, pairs }) {
  const lines = [];
  for (const [before, after] of pairs) {
    const patch = structuredPatch(path, path, before.endsWith('\n') ? before : `${before}\n`,
      after.endsWith('\n') ? after : `${after}\n`, '', '', { context: 3 });
    for (const hunk of patch.hunks) {
      lines.push({ sign: '@', text: `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@` });
      for (const line of hunk.lines) {
        if (line.startsWith('\\')) continue; // "\ No newline at end of file"
        lines.push({ sign: line[0], text: line.slice(1) });
      }
    }
  }
  return lines;
}

// Tags tools and the harness wrap around what they put in a user turn: not something the person typed.
const NOTICE = /^\s*<(task-notification|command-name|command-message|command-args|local-command-stdout|local-command-stderr|local-command-caveat|system-reminder|user-prompt-submit-hook|bash-input|bash-stdout|bash-stderr)>/;

/** For a user message that only carries such tagged text: {tag, summary}; otherwise null. */
export function noticeOf(message) {
  if (message?.role !== 'ROLE_USER') return null;
  const texts = (Array.isArray(message.parts) ? message.parts : []).map((p) => p?.text).filter((t) => typeof t === 'string');
  if (!texts.length || !texts.every((t) => NOTICE.test(t))) return null;
  const text = texts.join('\n');
  const tag = NOTICE.exec(texts[0])[1];
  const inner = (name) => new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(text)?.[1]?.trim();
  const summary = inner('summary') ?? inner('command-name') ?? inner('local-command-stdout') ??
    text.replace(/<[^>]*>/g, ' ');
  return { tag, summary: summary.split(/\s+/u).filter(Boolean).join(' ').slice(0, 120), text };
}
